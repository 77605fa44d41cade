package node

import (
	"testing"
	"time"
)

// An idle server with a compact heap samples the allocator once a second,
// not every 50 ms; reads served (scaled to the time since the last sample)
// bring the 50 ms sampling back.
func TestHeapTrimmerBacksOffWhenIdle(t *testing.T) {
	h := newHeapTrimmer()
	t0 := time.Now()
	h.tick(t0, 0)
	h.tick(t0.Add(trimCheckInterval), 0) // nothing served, little allocated
	if h.interval() != trimIdleInterval {
		t.Fatalf("idle: next check in %v, want %v", h.interval(), trimIdleInterval)
	}
	// 20 periods later, 20 × the per-period threshold is still idle.
	t1 := t0.Add(trimCheckInterval + trimIdleInterval)
	h.tick(t1, 20*idleBatchesPerTick)
	if h.interval() != trimIdleInterval {
		t.Fatalf("idle over a second: next check in %v, want %v", h.interval(), trimIdleInterval)
	}
	h.tick(t1.Add(trimCheckInterval), 20*idleBatchesPerTick+idleBatchesPerTick+1)
	if h.interval() != trimCheckInterval {
		t.Fatalf("busy: next check in %v, want %v", h.interval(), trimCheckInterval)
	}
}
