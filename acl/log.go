package acl

import (
	"sync"
	"sync/atomic"
	"time"
)

// Context is where a denied command ran (ACL LOG "context").
type Context uint8

const (
	CtxToplevel Context = iota
	CtxMulti
	CtxLua
)

func (c Context) String() string {
	switch c {
	case CtxMulti:
		return "multi"
	case CtxLua:
		return "lua"
	}
	return "toplevel"
}

// ReasonText is ACL LOG's "reason" of a denial.
func (r Result) ReasonText() string {
	switch r {
	case DeniedCmd:
		return "command"
	case DeniedKey:
		return "key"
	case DeniedChannel:
		return "channel"
	case DeniedAuth:
		return "auth"
	}
	return "unknown"
}

// Entry is one ACL LOG entry.
type Entry struct {
	Count      int64
	Reason     Result
	Context    Context
	Object     string // the command, key, channel, or AUTH's command name
	Username   string
	At         time.Time // the last time it happened
	ClientInfo string    // CLIENT LIST line of the last client
}

// logGroupingWindow is ACL_LOG_GROUPING_MAX_TIME_DELTA: a denial repeats an
// entry of the last minute instead of adding one.
const logGroupingWindow = 60 * time.Second

// logScan is how many recent entries a new denial is compared with.
const logScan = 10

// Log is the ACL log, newest first, at most acllog-max-len entries.
type Log struct {
	maxLen atomic.Int64
	mu     sync.Mutex
	items  []*Entry // newest first

	// Counters of INFO stats (acl_access_denied_*).
	DeniedAuth, DeniedCmd, DeniedKey, DeniedChannel atomic.Int64
}

// SetMaxLen sets acllog-max-len, dropping the oldest entries beyond it.
func (l *Log) SetMaxLen(n int64) {
	l.maxLen.Store(n)
	l.mu.Lock()
	l.trim()
	l.mu.Unlock()
}

func (l *Log) trim() {
	if n := l.maxLen.Load(); int64(len(l.items)) > n {
		for i := n; i < int64(len(l.items)); i++ {
			l.items[i] = nil
		}
		l.items = l.items[:n]
	}
}

// Add records a denial (addACLLogEntry): an entry of the last minute with
// the same reason, context, object and user, among the ten newest, is
// counted again and moved to the front.
func (l *Log) Add(e Entry) {
	switch e.Reason {
	case DeniedAuth:
		l.DeniedAuth.Add(1)
	case DeniedCmd:
		l.DeniedCmd.Add(1)
	case DeniedKey:
		l.DeniedKey.Add(1)
	case DeniedChannel:
		l.DeniedChannel.Add(1)
	}
	e.Count = 1
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := 0; i < len(l.items) && i < logScan; i++ {
		m := l.items[i]
		d := m.At.Sub(e.At)
		if d < 0 {
			d = -d
		}
		if m.Reason == e.Reason && m.Context == e.Context && d <= logGroupingWindow &&
			m.Object == e.Object && m.Username == e.Username {
			m.ClientInfo, m.At = e.ClientInfo, e.At
			m.Count++
			copy(l.items[1:i+1], l.items[:i])
			l.items[0] = m
			return
		}
	}
	l.items = append(l.items, nil)
	copy(l.items[1:], l.items)
	l.items[0] = &e
	l.trim()
}

// Entries returns copies of the newest n entries.
func (l *Log) Entries(n int) []Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	n = min(n, len(l.items))
	out := make([]Entry, n)
	for i := range out {
		out[i] = *l.items[i]
	}
	return out
}

// Reset empties the log (ACL LOG RESET).
func (l *Log) Reset() {
	l.mu.Lock()
	l.items = nil
	l.mu.Unlock()
}

// ResetCounters zeroes the INFO counters (CONFIG RESETSTAT).
func (l *Log) ResetCounters() {
	l.DeniedAuth.Store(0)
	l.DeniedCmd.Store(0)
	l.DeniedKey.Store(0)
	l.DeniedChannel.Store(0)
}
