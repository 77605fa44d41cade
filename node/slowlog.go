package node

import (
	"strings"
	"sync"
	"time"

	"github.com/shoal-db/shoal/command"
)

// slowlog keeps the most recent commands slower than
// slowlog-log-slower-than microseconds (SLOWLOG GET/LEN/RESET).
type slowlog struct {
	mu      sync.Mutex
	entries []slowlogEntry // newest first
	nextID  int64
}

type slowlogEntry struct {
	id       int64
	at       time.Time
	duration time.Duration
	args     []string
	addr     string
	name     string
}

// Redis keeps at most 32 arguments and 128 bytes of each.
const (
	slowlogMaxArgc   = 32
	slowlogMaxArgLen = 128
)

// maybeRecord logs the command, which started at since+offset, if it was
// slow enough. The time of day is only worked out for a command it logs.
func (l *slowlog) maybeRecord(c *Client, spec *command.Spec, args [][]byte, since time.Time, offset, d time.Duration) {
	threshold := c.srv.slowlogThreshold()
	if threshold < 0 || int64(d/time.Microsecond) < threshold {
		return
	}
	if spec.Flags&command.FlagSkipSlowlog != 0 {
		return // EXEC: its commands are logged one by one (execQueued)
	}
	n := len(args)
	if n > slowlogMaxArgc {
		n = slowlogMaxArgc
	}
	e := slowlogEntry{at: since.Add(offset), duration: d, addr: c.addr, name: c.Name()}
	redacted := redactedArgs(args) // node/monitor.go
	for i := 0; i < n; i++ {
		if i == slowlogMaxArgc-1 && len(args) > slowlogMaxArgc {
			e.args = append(e.args, "... ("+itoa(int64(len(args)-slowlogMaxArgc+1))+" more arguments)")
			break
		}
		a := args[i]
		if redacted != nil && redacted[i] || redactedArg(c, spec, args, i) {
			e.args = append(e.args, "(redacted)")
		} else if len(a) > slowlogMaxArgLen {
			e.args = append(e.args, string(a[:slowlogMaxArgLen])+"... ("+itoa(int64(len(a)-slowlogMaxArgLen))+" more bytes)")
		} else {
			e.args = append(e.args, string(a))
		}
	}
	maxLen := int(c.srv.cfg.Int("slowlog-max-len"))
	l.mu.Lock()
	defer l.mu.Unlock()
	e.id = l.nextID
	l.nextID++
	l.entries = append([]slowlogEntry{e}, l.entries...)
	if len(l.entries) > maxLen {
		l.entries = l.entries[:maxLen]
	}
}

// redactedArg reports whether args[i] is the value of a sensitive
// directive (requirepass, masterauth, masteruser, cluster-bus-secret) in
// CONFIG SET, which Redis hides from the slow log too.
func redactedArg(c *Client, spec *command.Spec, args [][]byte, i int) bool {
	if spec.FullName() != "config|set" || i < 3 || i%2 == 0 {
		return false
	}
	return c.srv.cfg.IsSensitive(strings.ToLower(string(args[i-1])))
}
