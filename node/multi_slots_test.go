package node

import (
	"slices"
	"testing"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/resp/resptest"
	"github.com/shoal-db/shoal/slots"
	"github.com/stretchr/testify/require"
)

// transactionSlots takes the slots admit computed while it queued the
// commands: they are the slots of every key of the queue, as extracting
// and hashing them at EXEC gives, and a transaction that must close the
// gate is found as before.
func TestTransactionSlotsAsQueued(t *testing.T) {
	s := newFuzzServer(t) // not listening: the test runs the client's commands
	c := newFuzzClient(s, resptest.NewConn(nil, 0))
	// rescanned is what EXEC computed before: every key extracted and hashed.
	rescanned := func(queue []queuedCommand) ([]uint16, bool) {
		var all []uint16
		for _, qc := range queue {
			keys, err := command.Keys(qc.spec, qc.args, nil)
			if err != nil || needsGate(qc.spec) || len(keys) == 0 && !keylessInTransaction(qc.spec) {
				return nil, false
			}
			for _, p := range keys {
				all = append(all, slots.KeySlot(qc.args[p]))
			}
		}
		slices.Sort(all)
		return append([]uint16{}, slices.Compact(all)...), true
	}
	for _, tx := range [][][]string{
		{{"SET", "bench:{1}:a", "v"}, {"SET", "bench:{1}:b", "v"}, {"GET", "other"}},
		{{"MSET", "a", "1", "b", "2", "c", "3"}, {"PING"}, {"INCR", "a"}, {"HSET", "h", "f", "v"}},
		{{"ECHO", "x"}, {"TIME"}},
		{{"SET", "a", "1"}, {"KEYS", "*"}},
		{{"SET", "a", "1"}, {"EVAL", "return 1", "1", "a"}},
		{{"SET", "a", "1"}, {"SPUBLISH", "chan", "m"}},
		{{"SET", "a", "1"}, {"PUBLISH", "chan", "m"}},
		{{"ZUNIONSTORE", "d", "2", "z1", "z2"}, {"ZUNIONSTORE", "d", "x", "z1"}},
		{{"LMOVE", "l", "l", "LEFT", "RIGHT"}, {"SORT", "l", "STORE", "d"}},
	} {
		c.Out = c.Out[:0]
		c.run(benchArgs("MULTI"))
		for _, cmd := range tx {
			c.run(benchArgs(cmd...))
		}
		require.NotNil(t, c.multi, "%v", tx)
		require.Len(t, c.multi.queue, len(tx), "%v: %q", tx, c.Out)
		require.False(t, c.multi.dirty, "%v: %q", tx, c.Out)
		got, gotOK := c.transactionSlots(c.multi, 0)
		got = append([]uint16{}, got...)
		want, wantOK := rescanned(c.multi.queue)
		require.Equal(t, wantOK, gotOK, "%v", tx)
		if wantOK {
			require.Equal(t, want, got, "%v", tx)
		}
		for i, qc := range c.multi.queue {
			if qc.keyPos >= 0 {
				require.Equal(t, slots.KeySlot(qc.args[qc.keyPos]), qc.keySlot, "%v: command %d", tx, i)
			}
		}
		c.run(benchArgs("DISCARD"))
	}
}

// The commands EXEC runs are counted in commandstats before the next one
// runs (INFO inside the transaction sees the SETs before it) and all of them
// by the time EXEC's reply is sent.
func TestExecCountsItsCommands(t *testing.T) {
	s := startTestServer(t)
	c := dialTest(t, s)
	require.Equal(t, "+OK\r\n", c.do("CONFIG", "RESETSTAT"))
	c.do("MULTI")
	c.do("SET", "a", "1")
	c.do("SET", "b", "2")
	c.do("INFO", "commandstats")
	c.do("INCR", "a")
	c.do("INCR", "b")
	c.do("LPUSH", "a", "x") // a failed call
	reply := c.do("EXEC")
	require.Contains(t, reply, "cmdstat_set:calls=2,", "INFO inside EXEC sees the SETs before it")
	require.NotContains(t, reply, "cmdstat_incr:")
	info := c.do("INFO", "commandstats")
	require.Contains(t, info, "cmdstat_set:calls=2,")
	require.Contains(t, info, "cmdstat_incr:calls=2,")
	require.Contains(t, info, "cmdstat_lpush:calls=1,")
	require.Regexp(t, `cmdstat_lpush:calls=1,usec=\d+,usec_per_call=[\d.]+,rejected_calls=0,failed_calls=1`, info)
	require.Contains(t, info, "cmdstat_info:calls=1,")
	require.Contains(t, info, "cmdstat_exec:calls=1,")
	require.Contains(t, c.do("INFO", "latencystats"), "latency_percentiles_usec_incr:")
}

// In cluster mode EXEC routes the transaction by the slots admit computed
// as it queued the commands: one slot runs, two slots are CROSSSLOT, a
// keyless or shard-channel queue is routed as before.
func TestExecRoutesByQueuedSlots(t *testing.T) {
	s := startTestServer(t, "--cluster-enabled", "yes", "--cluster-config-file", t.TempDir()+"/nodes.conf", "--cluster-require-full-coverage", "no")
	tc := dialTest(t, s)
	serveSlots(t, tc)
	for _, tx := range []struct {
		cmds [][]string
		exec string
	}{
		{[][]string{{"SET", "a", "1"}, {"SET", "{a}x", "2"}, {"GET", "a"}}, "*3\r\n+OK\r\n+OK\r\n$1\r\n1\r\n"},
		{[][]string{{"MSET", "{a}1", "x", "{a}2", "y"}, {"PING"}}, "*2\r\n+OK\r\n+PONG\r\n"},
		{[][]string{{"PING"}, {"ECHO", "e"}}, "*2\r\n+PONG\r\n$1\r\ne\r\n"},
		{[][]string{{"SET", "a", "1"}, {"SET", "c", "1"}}, "-CROSSSLOT Keys in request don't hash to the same slot\r\n"},
		{[][]string{{"SET", "c", "1"}, {"PING"}, {"MSET", "{a}1", "x", "a", "y"}}, "-CROSSSLOT Keys in request don't hash to the same slot\r\n"},
		{[][]string{{"SPUBLISH", "a", "m"}, {"SET", "{a}z", "1"}}, "*2\r\n:0\r\n+OK\r\n"},
		// Shard channels route with the keys (checked against redis-server 7.0.15).
		{[][]string{{"SPUBLISH", "a", "m"}, {"SET", "c", "1"}}, "-CROSSSLOT Keys in request don't hash to the same slot\r\n"},
		{[][]string{{"SPUBLISH", "a", "m"}, {"SPUBLISH", "c", "m"}}, "-CROSSSLOT Keys in request don't hash to the same slot\r\n"},
	} {
		require.Equal(t, "+OK\r\n", tc.do("MULTI"))
		for _, cmd := range tx.cmds {
			require.Equal(t, "+QUEUED\r\n", tc.do(cmd...), "%v", tx.cmds)
		}
		require.Equal(t, tx.exec, tc.do("EXEC"), "%v", tx.cmds)
	}
}

// TestExecRoutesBeforeAbort: EXEC is routed by what was queued before it
// looks at the transaction's errors, and nothing is queued after an error
// (Redis's processCommand and queueMultiCommand; each reply checked
// against redis-server 7.0.15).
func TestExecRoutesBeforeAbort(t *testing.T) {
	s := startTestServer(t, "--cluster-enabled", "yes", "--cluster-config-file", t.TempDir()+"/nodes.conf", "--cluster-require-full-coverage", "no")
	tc := dialTest(t, s)
	serveSlots(t, tc)
	const unknown = "-ERR unknown command 'FOO', with args beginning with: \r\n"
	for _, tx := range []struct {
		cmds    [][]string
		replies []string
		exec    string
	}{
		// The keys of two slots were queued before the error: CROSSSLOT.
		{[][]string{{"SET", "a", "1"}, {"SET", "c", "1"}, {"FOO"}}, []string{"+QUEUED\r\n", "+QUEUED\r\n", unknown},
			"-CROSSSLOT Keys in request don't hash to the same slot\r\n"},
		// SET c came after the error and was not queued: EXECABORT.
		{[][]string{{"SET", "a", "1"}, {"FOO"}, {"SET", "c", "1"}}, []string{"+QUEUED\r\n", unknown, "+QUEUED\r\n"},
			"-EXECABORT Transaction discarded because of previous errors.\r\n"},
	} {
		require.Equal(t, "+OK\r\n", tc.do("MULTI"))
		for i, cmd := range tx.cmds {
			require.Equal(t, tx.replies[i], tc.do(cmd...), "%v", tx.cmds)
		}
		require.Equal(t, tx.exec, tc.do("EXEC"), "%v", tx.cmds)
	}
	require.Equal(t, "$-1\r\n", tc.do("GET", "c"), "nothing ran")
}
