// Package clock is shoal's one source of time for logic that tests must be
// able to run deterministically (DESIGN §7): the cluster state machine
// (gossip), the election machine (failover) and the keyspace's expiry
// (store) read time only through a Clock. Production code passes System (or
// a Clock of its own, such as the node's keyspace clock that stands still
// while a script runs); tests pass a Fake and move it by hand.
//
// The package is a leaf: it imports nothing of shoal, so every package may
// use it.
package clock

import (
	"sync"
	"time"
)

// Clock is a source of time. Timeouts are differences of Now() values: Go's
// time.Time carries the monotonic reading, so wall-clock jumps do not fire
// them; the wall part is what users see (CLUSTER NODES ping_sent/pong_recv,
// key expiry times in unix milliseconds).
type Clock interface {
	Now() time.Time
}

// System is the real clock.
type System struct{}

// Now returns time.Now().
func (System) Now() time.Time { return time.Now() }

// Fake is a manually moved clock for deterministic tests. It is safe for
// concurrent use.
type Fake struct {
	mu sync.Mutex
	t  time.Time
}

// NewFake returns a clock stopped at start.
func NewFake(start time.Time) *Fake { return &Fake{t: start} }

// Now returns the clock's current time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Set moves the clock to t (backwards too: a test may model a wall-clock
// step).
func (c *Fake) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}
