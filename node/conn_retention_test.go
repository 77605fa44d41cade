package node

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/shoal-db/shoal/internal/testharness"
	"github.com/shoal-db/shoal/resp"
	"github.com/shoal-db/shoal/resp/resptest"
)

// The connection loop hands a command arguments that alias the batch's read
// buffer and argument array, and reuses both for a later batch (node/conn.go).
// These tests pin that every command which keeps something of its arguments
// beyond its own run keeps a copy.

// retentionStep is one command and, when want is set, the reply it must get.
type retentionStep struct {
	args []string
	want string
}

// runRetentionSteps runs steps on a fresh server, the input cut into reads
// of chunk bytes, and returns one raw reply per step.
func runRetentionSteps(t *testing.T, steps []retentionStep, chunk int) []string {
	t.Helper()
	srv := newFuzzServer(t)
	t.Cleanup(srv.Shutdown)
	var in []byte
	for _, st := range steps {
		in = append(in, encodeCommand(st.args...)...)
	}
	if chunk == 0 {
		chunk = len(in)
	}
	if len(in) >= resp.ReadSize {
		t.Fatalf("input of %d bytes does not fit one read: the reference run would reuse buffers", len(in))
	}
	fc := resptest.NewConn(in, chunk)
	c := newFuzzClient(srv, fc)
	_ = srv.serveRequests(c, resumeRead)
	r := bufio.NewReader(bytes.NewReader(fc.Out.Bytes()))
	replies := make([]string, 0, len(steps))
	for range steps {
		var b bytes.Buffer
		if err := testharness.ReadRaw(r, &b); err != nil {
			t.Fatalf("chunk %d: reply %d of %d: %v (output %q)", chunk, len(replies)+1, len(steps), err, fc.Out.String())
		}
		replies = append(replies, b.String())
	}
	if rest, _ := r.Peek(1); len(rest) > 0 {
		t.Fatalf("chunk %d: output after the last reply: %q", chunk, rest)
	}
	return replies
}

// checkRetention runs steps in one read (nothing is reused before the last
// reply) and in reads of 7 and 1 bytes (every batch's buffers are reused two
// batches later): every reply must be the same, and the replies with a want
// must be it.
func checkRetention(t *testing.T, steps []retentionStep) {
	t.Helper()
	ref := runRetentionSteps(t, steps, 0)
	for i, st := range steps {
		if st.want != "" && ref[i] != st.want {
			t.Fatalf("one read: %q replied %q, want %q", st.args, ref[i], st.want)
		}
	}
	for _, chunk := range []int{7, 1} {
		got := runRetentionSteps(t, steps, chunk)
		for i := range steps {
			if got[i] != ref[i] {
				t.Fatalf("reads of %d bytes: %q replied %q; in one read %q", chunk, steps[i].args, got[i], ref[i])
			}
		}
	}
}

// overwriteSteps are commands whose bytes land where earlier commands'
// arguments were: n SETs of values as long as the longest written above.
func overwriteSteps(n int) []retentionStep {
	var steps []retentionStep
	for i := range n {
		k := "fill:" + strconv.Itoa(i)
		steps = append(steps, retentionStep{args: []string{"SET", k, strings.Repeat(string(rune('A'+i%26)), 90)}})
	}
	return steps
}

// dumpPayload returns DUMP's payload for the value the setup commands leave
// under key, from a server of its own.
func dumpPayload(t *testing.T, key string, setup ...[]string) string {
	t.Helper()
	var steps []retentionStep
	for _, args := range setup {
		steps = append(steps, retentionStep{args: args})
	}
	steps = append(steps, retentionStep{args: []string{"DUMP", key}})
	replies := runRetentionSteps(t, steps, 0)
	return bulkBody(t, replies[len(replies)-1])
}

// TestKeyspaceWritesSurviveLaterBatches writes every value type through the
// store's write paths (strings, lists, hashes and sets in both encodings,
// sorted sets, streams and their groups, HyperLogLogs, bitmaps, GEO, SORT
// STORE, RENAME, COPY, RESTORE, another database), lets later commands
// overwrite the buffers the arguments came in, then reads everything back.
func TestKeyspaceWritesSurviveLaterBatches(t *testing.T) {
	long := func(tag string) string { return tag + strings.Repeat("-"+tag, 80/(len(tag)+1)) }
	payload := dumpPayload(t, "src", []string{"HSET", "src", "rf1", "rv1", "rf2", long("rv2")})
	steps := []retentionStep{
		{args: []string{"SET", "str", "string-value"}},
		{args: []string{"MSET", "m1", "mset-one", "m2", long("mset-two")}},
		{args: []string{"SET", "app", "head"}},
		{args: []string{"APPEND", "app", "-tail"}},
		{args: []string{"SETRANGE", "rng", "3", "range"}},
		{args: []string{"RPUSH", "list", "l-one", "l-two", long("l-three")}},
		{args: []string{"LPUSH", "list", "l-zero"}},
		{args: []string{"LINSERT", "list", "BEFORE", "l-two", "l-inserted"}},
		{args: []string{"LSET", "list", "0", "l-set"}},
		{args: []string{"HSET", "hsmall", "hf1", "hv1", "hf2", "hv2"}},
		{args: []string{"HSET", "hbig", "hbf1", long("hbv1"), long("hbf2"), "hbv2"}},
		{args: []string{"HSETNX", "hbig", "hbf3", "hbv3"}},
		{args: []string{"SADD", "sint", "11", "22", "33"}},
		{args: []string{"SADD", "sstr", "s-alpha", "s-beta", long("s-gamma")}},
		{args: []string{"SMOVE", "sstr", "sint", "s-alpha"}},
		{args: []string{"ZADD", "zsmall", "1", "z-one", "2", "z-two"}},
		{args: []string{"ZADD", "zbig", "1", "zb-one", "2", long("zb-two"), "3", "zb-three"}},
		{args: []string{"ZINCRBY", "zsmall", "10", "z-incr"}},
		{args: []string{"XADD", "st", "1-1", "sf1", "sv1", "sf2", "sv2"}},
		{args: []string{"XADD", "st", "2-1", "sf1", "sv3", "other", long("sv4")}},
		{args: []string{"XGROUP", "CREATE", "st", "grp-one", "0"}},
		{args: []string{"XGROUP", "CREATECONSUMER", "st", "grp-one", "cons-made"}},
		{args: []string{"XREADGROUP", "GROUP", "grp-one", "cons-read", "COUNT", "1", "STREAMS", "st", ">"}},
		{args: []string{"PFADD", "hll", "p-one", "p-two", "p-three"}},
		{args: []string{"SETBIT", "bits", "13", "1"}},
		{args: []string{"GEOADD", "geo", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"}},
		{args: []string{"GEOSEARCHSTORE", "geodst", "geo", "FROMLONLAT", "15", "37", "BYRADIUS", "100", "km", "ASC"}},
		{args: []string{"RPUSH", "tosort", "c-sort", "a-sort", "b-sort"}},
		{args: []string{"SORT", "tosort", "ALPHA", "STORE", "sorted"}},
		{args: []string{"SET", "ren-src", "renamed-value"}},
		{args: []string{"RENAME", "ren-src", "ren-dst"}},
		{args: []string{"COPY", "hsmall", "hcopy"}},
		{args: []string{"RESTORE", "restored", "0", payload}},
		{args: []string{"SELECT", "2"}},
		{args: []string{"SET", "db2key", "db2-value"}},
		{args: []string{"SELECT", "0"}},
	}
	steps = append(steps, overwriteSteps(40)...)
	steps = append(steps, []retentionStep{
		{args: []string{"GET", "str"}, want: bulk("string-value")},
		{args: []string{"MGET", "m1", "m2"}, want: "*2\r\n" + bulk("mset-one") + bulk(long("mset-two"))},
		{args: []string{"GET", "app"}, want: bulk("head-tail")},
		{args: []string{"GETRANGE", "rng", "3", "-1"}, want: bulk("range")},
		{args: []string{"LRANGE", "list", "0", "-1"},
			want: "*5\r\n" + bulk("l-set") + bulk("l-one") + bulk("l-inserted") + bulk("l-two") + bulk(long("l-three"))},
		{args: []string{"HGETALL", "hsmall"}, want: "*4\r\n" + bulk("hf1") + bulk("hv1") + bulk("hf2") + bulk("hv2")},
		{args: []string{"HMGET", "hbig", "hbf1", long("hbf2"), "hbf3"}, want: "*3\r\n" + bulk(long("hbv1")) + bulk("hbv2") + bulk("hbv3")},
		{args: []string{"SORT", "sint", "ALPHA"}, want: "*4\r\n" + bulk("11") + bulk("22") + bulk("33") + bulk("s-alpha")},
		{args: []string{"SORT", "sstr", "ALPHA"}, want: "*2\r\n" + bulk("s-beta") + bulk(long("s-gamma"))},
		{args: []string{"ZRANGE", "zsmall", "0", "-1", "WITHSCORES"},
			want: "*6\r\n" + bulk("z-one") + bulk("1") + bulk("z-two") + bulk("2") + bulk("z-incr") + bulk("10")},
		{args: []string{"ZRANGE", "zbig", "0", "-1"}, want: "*3\r\n" + bulk("zb-one") + bulk(long("zb-two")) + bulk("zb-three")},
		{args: []string{"XRANGE", "st", "-", "+"},
			want: "*2\r\n*2\r\n" + bulk("1-1") + "*4\r\n" + bulk("sf1") + bulk("sv1") + bulk("sf2") + bulk("sv2") +
				"*2\r\n" + bulk("2-1") + "*4\r\n" + bulk("sf1") + bulk("sv3") + bulk("other") + bulk(long("sv4"))},
		{args: []string{"XPENDING", "st", "grp-one"},
			want: "*4\r\n:1\r\n" + bulk("1-1") + bulk("1-1") + "*1\r\n*2\r\n" + bulk("cons-read") + bulk("1")},
		{args: []string{"XREADGROUP", "GROUP", "grp-one", "cons-made", "STREAMS", "st", ">"},
			want: "*1\r\n*2\r\n" + bulk("st") + "*1\r\n*2\r\n" + bulk("2-1") + "*4\r\n" + bulk("sf1") + bulk("sv3") + bulk("other") + bulk(long("sv4"))},
		{args: []string{"PFCOUNT", "hll"}, want: ":3\r\n"},
		{args: []string{"GETBIT", "bits", "13"}, want: ":1\r\n"},
		{args: []string{"ZRANGE", "geodst", "0", "-1"}, want: "*1\r\n" + bulk("Catania")},
		{args: []string{"LRANGE", "sorted", "0", "-1"}, want: "*3\r\n" + bulk("a-sort") + bulk("b-sort") + bulk("c-sort")},
		{args: []string{"GET", "ren-dst"}, want: bulk("renamed-value")},
		{args: []string{"HGETALL", "hcopy"}, want: "*4\r\n" + bulk("hf1") + bulk("hv1") + bulk("hf2") + bulk("hv2")},
		{args: []string{"HMGET", "restored", "rf1", "rf2"}, want: "*2\r\n" + bulk("rv1") + bulk(long("rv2"))},
		{args: []string{"SELECT", "2"}, want: "+OK\r\n"},
		{args: []string{"GET", "db2key"}, want: bulk("db2-value")},
	}...)
	checkRetention(t, steps)
}

// TestSessionStateSurvivesLaterBatches covers what a connection or the
// server keeps from a command besides the keyspace: the client's name,
// CONFIG SET values, cached scripts and function libraries, WATCH, and a
// transaction's queued commands.
func TestSessionStateSurvivesLaterBatches(t *testing.T) {
	script := "return {KEYS[1], ARGV[1], 'script-body-constant'}"
	sha := sha1Hex([]byte(script))
	lib := "#!lua name=retlib\nredis.register_function('retfn', function(keys, args) return {keys[1], args[1], 'lib-constant'} end)"
	steps := []retentionStep{
		{args: []string{"CLIENT", "SETNAME", "conn-name-kept"}},
		{args: []string{"CONFIG", "SET", "masterauth", "config-secret-kept"}},
		{args: []string{"SCRIPT", "LOAD", script}, want: bulk(sha)},
		{args: []string{"FUNCTION", "LOAD", lib}, want: bulk("retlib")},
		{args: []string{"WATCH", "watched-key"}}, // missing: only a write to it fails EXEC
	}
	steps = append(steps, overwriteSteps(30)...)
	steps = append(steps, []retentionStep{
		// The watched key, written now, must still be found in the WATCH
		// registry: the transaction fails.
		{args: []string{"SET", "watched-key", "w1"}},
		{args: []string{"MULTI"}},
		{args: []string{"SET", "queued-key", "lost-value"}},
		{args: []string{"EXEC"}, want: "*-1\r\n"},
		{args: []string{"MULTI"}},
		{args: []string{"SET", "queued-key", "queued-value"}},
		{args: []string{"RPUSH", "queued-list", "q-one", "q-two"}},
		{args: []string{"EXEC"}, want: "*2\r\n+OK\r\n:2\r\n"},
	}...)
	steps = append(steps, overwriteSteps(30)...)
	steps = append(steps, []retentionStep{
		{args: []string{"MGET", "queued-key", "watched-key"}, want: "*2\r\n" + bulk("queued-value") + bulk("w1")},
		{args: []string{"LRANGE", "queued-list", "0", "-1"}, want: "*2\r\n" + bulk("q-one") + bulk("q-two")},
		{args: []string{"CLIENT", "GETNAME"}, want: bulk("conn-name-kept")},
		{args: []string{"CONFIG", "GET", "masterauth"}, want: "*2\r\n" + bulk("masterauth") + bulk("config-secret-kept")},
		{args: []string{"EVALSHA", sha, "1", "eval-key", "eval-arg"},
			want: "*3\r\n" + bulk("eval-key") + bulk("eval-arg") + bulk("script-body-constant")},
		{args: []string{"SCRIPT", "EXISTS", sha}, want: "*1\r\n:1\r\n"},
		{args: []string{"FCALL", "retfn", "1", "fcall-key", "fcall-arg"},
			want: "*3\r\n" + bulk("fcall-key") + bulk("fcall-arg") + bulk("lib-constant")},
		{args: []string{"FUNCTION", "LIST", "WITHCODE"}},
	}...)
	checkRetention(t, steps)
}
