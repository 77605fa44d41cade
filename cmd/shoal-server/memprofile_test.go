package main

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestHeapProfileSamplingIsOff: the binary samples no heap profile (its
// buckets cost an idle node memory and nothing reads them) unless GODEBUG
// asks for a rate.
func TestHeapProfileSamplingIsOff(t *testing.T) {
	if strings.Contains(os.Getenv("GODEBUG"), "memprofilerate=") {
		t.Skip("GODEBUG sets memprofilerate")
	}
	if runtime.MemProfileRate != 0 {
		t.Fatalf("MemProfileRate %d, want 0", runtime.MemProfileRate)
	}
}
