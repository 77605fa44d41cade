package node

import (
	"runtime"
	"sync"
)

// childCores gives a background save or AOF rewrite a core of its own
// while it runs, as redis-server's fork child runs beside the main thread:
// the node serves clients on io-threads cores (GOMAXPROCS, one by
// default), and without it the rewrite's encoding takes turns with the
// clients on that one core — under a write load that starts an automatic
// AOF rewrite, the clients' throughput halves until it ends. While one or
// more such jobs run, GOMAXPROCS is one more than the node's own (up to
// the host's cores); it goes back when the last ends.
//
// GOMAXPROCS is process-wide: only the binary enables this
// (Options.ManageParallelism); tests that run many nodes in one process
// do not.
type childCores struct {
	mu      sync.Mutex
	enabled bool
	running int // background jobs holding the extra core
	base    int // GOMAXPROCS before the first of them started
}

// begin notes that a background job starts; end must follow.
func (c *childCores) begin() {
	if !c.enabled {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running++
	if c.running == 1 {
		c.base = runtime.GOMAXPROCS(0)
		if n := min(c.base+1, runtime.NumCPU()); n != c.base {
			runtime.GOMAXPROCS(n)
		}
	}
}

// end notes that a background job begun with begin ended.
func (c *childCores) end() {
	if !c.enabled {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running--
	if c.running == 0 && runtime.GOMAXPROCS(0) != c.base {
		runtime.GOMAXPROCS(c.base)
	}
}
