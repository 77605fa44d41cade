package node

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-db/shoal/command"
)

// clientPause implements CLIENT PAUSE: while active, commands of the paused
// class wait (WRITE: commands that may write; ALL: every command except
// the ones clients need to unpause).
type clientPause struct {
	// active is set while a pause may be in force, so that every command
	// does not take mu (one mutex shared by all connections) to learn that
	// nothing is paused. It is set under mu before until; a command that
	// reads it false started before the pause did, as in Redis.
	active atomic.Bool
	mu     sync.Mutex
	until  time.Time
	all    bool
	wake   chan struct{} // closed when the pause ends or changes
}

// Pause starts or extends a pause.
func (p *clientPause) Pause(d time.Duration, all bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	until := time.Now().Add(d)
	p.active.Store(true)
	if until.After(p.until) {
		p.until = until
	}
	p.all = p.all || all
	if p.wake == nil {
		p.wake = make(chan struct{})
	}
}

// Unpause ends the pause.
func (p *clientPause) Unpause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endLocked()
}

// endLocked ends the pause and wakes the waiting clients; p.mu is held.
func (p *clientPause) endLocked() {
	p.until = time.Time{}
	p.all = false
	p.active.Store(false)
	if p.wake != nil {
		close(p.wake)
		p.wake = nil
	}
}

// wait blocks while spec is paused.
func (p *clientPause) wait(spec *command.Spec) {
	if !p.active.Load() {
		return
	}
	for {
		p.mu.Lock()
		if p.until.IsZero() {
			p.mu.Unlock()
			return
		}
		left := time.Until(p.until)
		affected := p.all || spec.Flags&(command.FlagWrite|command.FlagMayReplicate) != 0
		if spec.FullName() == "client|unpause" || spec.FullName() == "client|pause" {
			affected = false
		}
		if left <= 0 {
			p.endLocked() // expired: the first command to notice ends it
			p.mu.Unlock()
			return
		}
		wake := p.wake
		p.mu.Unlock()
		if !affected {
			return
		}
		t := time.NewTimer(left)
		select {
		case <-wake:
		case <-t.C:
		}
		t.Stop()
	}
}
