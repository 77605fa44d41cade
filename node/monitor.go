package node

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/strconvx"
)

// MONITOR (Redis 7.0's replicationFeedMonitors): every command a client
// runs is shown to the monitoring clients as one status line,
//
//	+<unix seconds>.<microseconds> [<db> <client address>] "arg" "arg" ...
//
// after it ran (so MULTI, the queued commands, then EXEC), except the
// administrative commands and the scripting commands, which are shown
// before they run so that the commands of their script — marked "lua" —
// follow them. Commands refused before they run are not shown; an EXEC
// aborted by an error is. Secrets are redacted as Redis redacts them (AUTH,
// HELLO ... AUTH, MIGRATE ... AUTH/AUTH2). A monitor's output goes through
// its push queue (node/pubsub.go), so the feeding client never waits for
// it. The cost when nobody monitors: one atomic load per command
// (callHandler).

// monitorRegistry holds the monitoring clients.
type monitorRegistry struct {
	n       atomic.Int32 // len(clients), read on every command
	mu      sync.Mutex
	clients []*Client
}

// cmdMonitor turns the client into a monitor.
func cmdMonitor(c *Client, args [][]byte) {
	if c.multi != nil || c.InScript() {
		// Redis's CLIENT_DENY_BLOCKING: a client expecting one reply per
		// command (in a transaction) cannot monitor.
		c.Error("ERR MONITOR isn't allowed for DENY BLOCKING client")
		return
	}
	if c.monitoring.Load() || c.kind() == clientReplica {
		return // already a monitor (or a replica): ignored, as Redis
	}
	// The OK goes out through the push queue, ahead of the first line.
	c.ensurePushWriter()
	r := &c.srv.monitors
	r.mu.Lock()
	r.clients = append(r.clients, c)
	r.n.Store(int32(len(r.clients)))
	r.mu.Unlock()
	c.monitoring.Store(true)
	c.OK()
}

// stopMonitoring removes a closed (or RESET) client from the monitors.
func (c *Client) stopMonitoring() {
	if !c.monitoring.Swap(false) {
		return
	}
	r := &c.srv.monitors
	r.mu.Lock()
	for i, m := range r.clients {
		if m == c {
			r.clients = append(r.clients[:i], r.clients[i+1:]...)
			break
		}
	}
	r.n.Store(int32(len(r.clients)))
	r.mu.Unlock()
}

// monitorBefore (called by callHandler while someone monitors) shows a
// scripting command before it runs (EVAL, FCALL and
// their variants carry the skip-monitor flag and feed themselves first).
func (c *Client) monitorBefore(spec *command.Spec, args [][]byte) {
	if spec.Flags&command.FlagSkipMonitor != 0 && spec.Flags&command.FlagAdmin == 0 {
		c.feedMonitors(args)
	}
}

// monitorAfter shows a command that ran, unless it is administrative or
// fed itself before running.
func (c *Client) monitorAfter(spec *command.Spec, args [][]byte) {
	if spec.Flags&(command.FlagSkipMonitor|command.FlagAdmin) == 0 {
		c.feedMonitors(args)
	}
}

// feedMonitors sends one command line to every monitor.
func (c *Client) feedMonitors(args [][]byte) {
	s := c.srv
	if s.loading.active.Load() {
		return // as Redis: nothing is fed while loading
	}
	now := time.Now()
	line := make([]byte, 0, 64)
	line = append(line, '+')
	line = strconv.AppendInt(line, now.Unix(), 10)
	line = append(line, '.')
	us := now.Nanosecond() / 1000
	for d := 100000; d > 1 && us < d; d /= 10 {
		line = append(line, '0')
	}
	line = strconv.AppendInt(line, int64(us), 10)
	line = append(line, " ["...)
	line = strconv.AppendInt(line, int64(c.dbIndex.Load()), 10)
	line = append(line, ' ')
	switch {
	case c.InScript():
		line = append(line, "lua"...)
	default:
		c.infoMu.Lock()
		addr := c.addr
		c.infoMu.Unlock()
		if addr == unixSocketAddr {
			line = append(line, "unix:"...)
			line = append(line, s.cfg.String("unixsocket")...)
		} else {
			line = append(line, addr...)
		}
	}
	line = append(line, "] "...)
	redact := redactedArgs(args)
	for i, a := range args {
		if i > 0 {
			line = append(line, ' ')
		}
		if i < len(redact) && redact[i] {
			a = []byte("(redacted)")
		}
		line = strconvx.AppendRepr(line, a)
	}
	line = append(line, '\r', '\n')
	r := &s.monitors
	r.mu.Lock()
	for _, m := range r.clients {
		m.ps.push.enqueue(line, s)
	}
	r.mu.Unlock()
}

// redactedArgs marks the arguments Redis hides from monitors (its
// redactClientCommandArgument calls): AUTH's arguments, HELLO's AUTH
// username and password, ACL SETUSER's user and rules, MIGRATE's AUTH
// password and AUTH2 username and password. nil when nothing is hidden.
// The slow log hides the same (node/slowlog.go).
func redactedArgs(args [][]byte) []bool {
	var out []bool
	mark := func(i int) {
		if i < len(args) {
			if out == nil {
				out = make([]bool, len(args))
			}
			out[i] = true
		}
	}
	switch {
	case command.ArgIs(args[0], "auth"):
		for i := 1; i < len(args); i++ {
			mark(i)
		}
	case command.ArgIs(args[0], "hello"):
		for i := 2; i < len(args); i++ {
			if command.ArgIs(args[i], "auth") && i+2 < len(args) {
				mark(i + 1)
				mark(i + 2)
				i += 2
			}
		}
	case command.ArgIs(args[0], "acl") && len(args) > 2 && command.ArgIs(args[1], "setuser"):
		for i := 2; i < len(args); i++ {
			mark(i)
		}
	case command.ArgIs(args[0], "migrate"):
		for i := 6; i < len(args); i++ {
			switch {
			case command.ArgIs(args[i], "auth") && i+1 < len(args):
				mark(i + 1)
				i++
			case command.ArgIs(args[i], "auth2") && i+2 < len(args):
				mark(i + 1)
				mark(i + 2)
				i += 2
			case command.ArgIs(args[i], "keys"):
				i = len(args) // the rest are key names
			}
		}
	}
	return out
}
