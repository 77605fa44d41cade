package node

import (
	"sort"
	"sync/atomic"

	"github.com/shoal-db/shoal/command"
)

// maxErrorCodes bounds the distinct error codes errorstats tracks, as Redis
// does (ERROR_STATS_NUMBER), so a client cannot grow the table without end.
const maxErrorCodes = 128

// countError adds one to the counter of an error code ("ERR", "WRONGTYPE").
func (st *serverStats) countError(code string) {
	if v, ok := st.errors.Load(code); ok {
		v.(*atomic.Int64).Add(1)
		return
	}
	if st.errorCodes.Load() >= maxErrorCodes {
		return
	}
	v, loaded := st.errors.LoadOrStore(code, new(atomic.Int64))
	if !loaded {
		st.errorCodes.Add(1)
	}
	v.(*atomic.Int64).Add(1)
}

// ErrorCount is one line of INFO errorstats.
type ErrorCount struct {
	Code  string
	Count int64
}

// errorCounts returns the error counters sorted by code.
func (st *serverStats) errorCounts() []ErrorCount {
	var out []ErrorCount
	st.errors.Range(func(k, v any) bool {
		out = append(out, ErrorCount{Code: k.(string), Count: v.(*atomic.Int64).Load()})
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Code < out[j].Code })
	return out
}

// resetErrors clears errorstats (CONFIG RESETSTAT).
func (st *serverStats) resetErrors() {
	st.errors.Range(func(k, _ any) bool {
		st.errors.Delete(k)
		return true
	})
	st.errorCodes.Store(0)
	st.totalErrorReplies.Store(0)
}

// CommandCounters are one command's INFO commandstats figures.
type CommandCounters struct {
	Calls, Usec, Rejected, Failed int64
}

// counters sums a command's shards.
func (t *commandTable) counters(spec *command.Spec) CommandCounters {
	var cc CommandCounters
	st := t.statsOf(spec)
	for i := range st {
		sh := &st[i]
		cc.Calls += sh.calls.Load()
		cc.Usec += sh.usec.Load()
		cc.Rejected += sh.rejected.Load()
		cc.Failed += sh.failed.Load()
	}
	return cc
}

// resetCounters zeroes a command's counters.
func (t *commandTable) resetCounters(spec *command.Spec) {
	st := t.stats[spec.ID].Load()
	if st == nil {
		return // never counted
	}
	for i := range st {
		sh := &st[i]
		sh.calls.Store(0)
		sh.usec.Store(0)
		sh.rejected.Store(0)
		sh.failed.Store(0)
		sh.lat.reset()
	}
}

// trafficTotals returns total_commands_processed, total_net_input_bytes and
// total_net_output_bytes: the live clients' counters plus those of clients
// gone, minus the RESETSTAT baseline.
func (s *Server) trafficTotals() (commands, in, out int64) {
	s.mu.Lock()
	commands, in, out = s.stats.closedCommands.Load(), s.stats.closedIn.Load(), s.stats.closedOut.Load()
	for _, c := range s.clients {
		commands += c.cmdsProcessed.Load()
		in += c.guard.BytesRead()
		out += c.outBytes.Load()
	}
	s.mu.Unlock()
	return commands - s.stats.baseCommands.Load(), in - s.stats.baseIn.Load(), out - s.stats.baseOut.Load()
}

// resetTrafficTotals makes the traffic totals start again from zero.
func (s *Server) resetTrafficTotals() {
	c, i, o := s.trafficTotals()
	s.stats.baseCommands.Add(c)
	s.stats.baseIn.Add(i)
	s.stats.baseOut.Add(o)
}
