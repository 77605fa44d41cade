package gossip

import (
	"sync"
	"time"
)

// Clock is the only source of time of the cluster state machine. Timeouts
// are computed from differences of Now() values (Go's time.Time carries the
// monotonic reading, so wall-clock jumps do not fire them); the wall part is
// what CLUSTER NODES shows as ping_sent/pong_recv.
type Clock interface {
	Now() time.Time
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// FakeClock is a manually advanced clock for deterministic tests. It is safe
// for concurrent use.
type FakeClock struct {
	mu sync.Mutex
	t  time.Time
}

// NewFakeClock returns a clock stopped at start.
func NewFakeClock(start time.Time) *FakeClock { return &FakeClock{t: start} }

// Now returns the clock's current time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
