package node

import (
	"runtime"
	"testing"
)

// A background job raises GOMAXPROCS by one (up to the host's cores) while
// it runs; nested jobs share the extra core, and the last to end restores
// the node's own figure. Disabled (tests, many nodes in one process), it
// never touches GOMAXPROCS.
func TestChildCoresRaiseAndRestoreGOMAXPROCS(t *testing.T) {
	orig := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(orig)
	want := min(2, runtime.NumCPU())

	off := childCores{}
	off.begin()
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("disabled: GOMAXPROCS %d during a job, want 1", got)
	}
	off.end()

	c := childCores{enabled: true}
	c.begin()
	if got := runtime.GOMAXPROCS(0); got != want {
		t.Fatalf("GOMAXPROCS %d during a job, want %d", got, want)
	}
	c.begin() // a rewrite restarted from the first one's end
	c.end()
	if got := runtime.GOMAXPROCS(0); got != want {
		t.Fatalf("GOMAXPROCS %d with one job still running, want %d", got, want)
	}
	c.end()
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("GOMAXPROCS %d after the jobs, want 1", got)
	}
}
