package node

import (
	"strings"
	"testing"
	"time"
)

// Byte-exact replies of the stream commands (taken from Redis 7.0.15; the
// differential tests in cmd_stream_diff_test.go keep them honest when a
// redis-server is installed), and the blocking forms of XREAD and
// XREADGROUP.

type streamStep struct {
	cmd  []string
	want string
}

func streamExactSteps() []streamStep {
	c := func(s string) []string { return strings.Fields(s) }
	return []streamStep{
		{c("XADD s 1-1 a 1 b 2"), "$3\r\n1-1\r\n"},
		{c("XADD s 1-* a 3"), "$3\r\n1-2\r\n"},
		{c("XADD s 1 a 3"), "-ERR The ID specified in XADD is equal or smaller than the target stream top item\r\n"},
		{c("XADD s 0-0 a 3"), "-ERR The ID specified in XADD must be greater than 0-0\r\n"},
		{c("XADD s 1-x a 3"), "-ERR Invalid stream ID specified as stream command argument\r\n"},
		{c("XADD s * a"), "-ERR wrong number of arguments for 'xadd' command\r\n"},
		{c("XADD s MAXLEN 1 MINID 1 * a 1"), "-ERR syntax error, MAXLEN and MINID options at the same time are not compatible\r\n"},
		{c("XADD s MAXLEN 1 LIMIT 1 * a 1"), "-ERR syntax error, LIMIT cannot be used without the special ~ option\r\n"},
		{c("XADD s MAXLEN -1 * a 1"), "-ERR The MAXLEN argument must be >= 0.\r\n"},
		{c("XADD nokey NOMKSTREAM * a 1"), "$-1\r\n"},
		{c("XADD s 2-0 c 3"), "$3\r\n2-0\r\n"},
		{c("XLEN s"), ":3\r\n"},
		{c("XRANGE s - + COUNT 2"), "*2\r\n*2\r\n$3\r\n1-1\r\n*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n" +
			"*2\r\n$3\r\n1-2\r\n*2\r\n$1\r\na\r\n$1\r\n3\r\n"},
		{c("XREVRANGE s + (1-2"), "*1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n"},
		{c("XRANGE s - + COUNT 0"), "*-1\r\n"},
		{c("XRANGE nokey - +"), "*0\r\n"},
		{c("XRANGE s (18446744073709551615-18446744073709551615 +"), "-ERR invalid start ID for the interval\r\n"},
		{c("XRANGE s - (0-0"), "-ERR invalid end ID for the interval\r\n"},
		{c("XDEL s 1-2 9-9"), ":1\r\n"},
		{c("XTRIM s FOO 1"), "-ERR syntax error\r\n"},
		{c("XTRIM s MAXLEN ~"), "-ERR value is not an integer or out of range\r\n"},
		{c("XTRIM s LIMIT 1"), "-ERR syntax error, LIMIT cannot be used without specifying a trimming strategy\r\n"},
		{c("XTRIM s LIMIT 0"), "-ERR syntax error, XTRIM must be called with a trimming strategy\r\n"},
		{c("XGROUP CREATE s g 0"), "+OK\r\n"},
		{c("XGROUP CREATE s g 0"), "-BUSYGROUP Consumer Group name already exists\r\n"},
		{c("XGROUP CREATE nokey g 0"), "-ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.\r\n"},
		{c("XGROUP SETID s nog 0"), "-NOGROUP No such consumer group 'nog' for key name 's'\r\n"},
		{c("XREADGROUP GROUP g alice STREAMS s >"), "*1\r\n*2\r\n$1\r\ns\r\n*2\r\n*2\r\n$3\r\n1-1\r\n*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n" +
			"*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n"},
		{c("XREADGROUP GROUP g alice STREAMS s >"), "*-1\r\n"},
		{c("XREADGROUP GROUP g alice STREAMS s $"), "-ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.\r\n"},
		{c("XREADGROUP GROUP nog alice STREAMS s >"), "-NOGROUP No such key 's' or consumer group 'nog' in XREADGROUP with GROUP option\r\n"},
		{c("XREAD STREAMS s >"), "-ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.\r\n"},
		{c("XREAD STREAMS s s 0"), "-ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.\r\n"},
		{c("XREAD BLOCK -1 STREAMS s 0"), "-ERR timeout is negative\r\n"},
		{c("XREAD BLOCK 1.5 STREAMS s 0"), "-ERR timeout is not an integer or out of range\r\n"},
		{c("XPENDING s g"), "*4\r\n:2\r\n$3\r\n1-1\r\n$3\r\n2-0\r\n*1\r\n*2\r\n$5\r\nalice\r\n$1\r\n2\r\n"},
		{c("XPENDING s nog"), "-NOGROUP No such key 's' or consumer group 'nog'\r\n"},
		{c("XCLAIM s g bob 0 1-1 TIME 1000 RETRYCOUNT 5 JUSTID"), "*1\r\n$3\r\n1-1\r\n"},
		{c("XCLAIM s g bob 0 1-1 BOGUS"), "-ERR Unrecognized XCLAIM option 'BOGUS'\r\n"},
		{c("XAUTOCLAIM s g carol 0 0 COUNT 0"), "-ERR COUNT must be > 0\r\n"},
		{c("XAUTOCLAIM s g carol 0 0 COUNT 1 JUSTID"), "*3\r\n$3\r\n2-0\r\n*1\r\n$3\r\n1-1\r\n*0\r\n"},
		{c("XACK s g 1-1 2-0 3-0"), ":2\r\n"},
		{c("XSETID s 1-0"), "-ERR The ID specified in XSETID is smaller than the target stream top item\r\n"},
		{c("XSETID nokey 1-0"), "-ERR no such key\r\n"},
		{c("XSETID s 5-0 ENTRIESADDED 1"), "-ERR The entries_added specified in XSETID is smaller than the target stream length\r\n"},
		{c("XGROUP DESTROY s g"), ":1\r\n"},
		{c("XINFO STREAM s"), "*20\r\n$6\r\nlength\r\n:2\r\n$15\r\nradix-tree-keys\r\n:1\r\n$16\r\nradix-tree-nodes\r\n:2\r\n" +
			"$17\r\nlast-generated-id\r\n$3\r\n2-0\r\n$20\r\nmax-deleted-entry-id\r\n$3\r\n1-2\r\n$13\r\nentries-added\r\n:3\r\n" +
			"$23\r\nrecorded-first-entry-id\r\n$3\r\n1-1\r\n$6\r\ngroups\r\n:0\r\n" +
			"$11\r\nfirst-entry\r\n*2\r\n$3\r\n1-1\r\n*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n" +
			"$10\r\nlast-entry\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n"},
		{c("XINFO STREAM nokey"), "-ERR no such key\r\n"},
		{c("XINFO STREAM s FULL COUNT"), "-ERR unknown subcommand or wrong number of arguments for 'STREAM'. Try XINFO HELP.\r\n"},
		{c("XINFO HELP x"), "-ERR wrong number of arguments for 'xinfo|help' command\r\n"},
		{c("XGROUP HELP x"), "-ERR wrong number of arguments for 'xgroup|help' command\r\n"},
		{c("OBJECT ENCODING s"), "$6\r\nstream\r\n"},
		{c("TYPE s"), "+stream\r\n"},
		// RESP3: XREAD answers a map, XINFO maps, nulls are _.
		{c("HELLO 3"), ""},
		{c("XREAD STREAMS s 1-1"), "%1\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n"},
		{c("XREAD STREAMS s 2-0"), "_\r\n"},
		{c("XINFO GROUPS s"), "*0\r\n"},
		{c("XGROUP CREATE s g2 $ ENTRIESREAD 3"), "+OK\r\n"},
		{c("XINFO GROUPS s"), "*1\r\n%6\r\n$4\r\nname\r\n$2\r\ng2\r\n$9\r\nconsumers\r\n:0\r\n$7\r\npending\r\n:0\r\n" +
			"$17\r\nlast-delivered-id\r\n$3\r\n2-0\r\n$12\r\nentries-read\r\n:3\r\n$3\r\nlag\r\n:0\r\n"},
		{c("XPENDING s g2"), "*4\r\n:0\r\n_\r\n_\r\n_\r\n"},
		{c("XRANGE s - + COUNT 0"), "_\r\n"},
	}
}

func TestStreamExactReplies(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	steps := streamExactSteps()
	for _, st := range steps {
		if st.cmd[0] == "HELLO" {
			tc.do(st.cmd...)
			continue
		}
		if got := tc.do(st.cmd...); got != st.want {
			t.Fatalf("%q:\n got %q\nwant %q", st.cmd, got, st.want)
		}
	}
}

// TestStreamExactRepliesRedis checks the table against a real Redis.
func TestStreamExactRepliesRedis(t *testing.T) {
	tc := dialTestAddr(t, startRealRedis(t))
	for _, st := range streamExactSteps() {
		if st.cmd[0] == "HELLO" {
			tc.do(st.cmd...)
			continue
		}
		if got := tc.do(st.cmd...); got != st.want {
			t.Fatalf("redis disagrees on %q:\n got %q\nwant %q", st.cmd, got, st.want)
		}
	}
}

// ---------------------------------------------------------------- blocking

func TestStreamBlockingXRead(t *testing.T) {
	s := startTestServer(t)
	w := dialTest(t, s)
	a, b := dialTest(t, s), dialTest(t, s)
	w.do("XADD", "s", "1", "f", "old")
	// two readers on $: both get the new entry, in blocking order
	a.send("XREAD", "BLOCK", "0", "STREAMS", "s", "nokey", "$", "$")
	waitBlockedClients(t, s, 1)
	b.send("XREAD", "BLOCK", "5000", "COUNT", "1", "STREAMS", "s", "$")
	waitBlockedClients(t, s, 2)
	if got := w.do("XADD", "s", "2", "f", "new"); got != "$3\r\n2-0\r\n" {
		t.Fatal(got)
	}
	want := "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\nf\r\n$3\r\nnew\r\n"
	if got := a.readWithin(2 * time.Second); got != want {
		t.Fatalf("a: %q", got)
	}
	if got := b.readWithin(2 * time.Second); got != want {
		t.Fatalf("b: %q", got)
	}
	// timeouts: a null array, _ in RESP3
	if got := a.do("XREAD", "BLOCK", "20", "STREAMS", "s", "$"); got != "*-1\r\n" {
		t.Fatalf("timeout: %q", got)
	}
	a.do("HELLO", "3")
	if got := a.do("XREAD", "BLOCK", "20", "STREAMS", "s", "$"); got != "_\r\n" {
		t.Fatalf("RESP3 timeout: %q", got)
	}
	// served as a RESP3 map
	a.send("XREAD", "BLOCK", "0", "STREAMS", "s", "2")
	waitBlockedClients(t, s, 1)
	w.do("XADD", "s", "3", "f", "x")
	if got := a.readWithin(2 * time.Second); got != "%1\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n3-0\r\n*2\r\n$1\r\nf\r\n$1\r\nx\r\n" {
		t.Fatalf("RESP3 served: %q", got)
	}
	// inside MULTI a blocking read answers at once
	w.do("MULTI")
	w.do("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
	if got := w.do("EXEC"); got != "*1\r\n*-1\r\n" {
		t.Fatalf("MULTI: %q", got)
	}
	// a deleted key keeps XREAD waiting; the re-created stream serves it
	b.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
	waitBlockedClients(t, s, 1)
	w.do("DEL", "s")
	w.do("SET", "s", "str")
	w.do("DEL", "s")
	w.do("XADD", "s", "10", "f", "again")
	if got := b.readWithin(2 * time.Second); !strings.Contains(got, "again") {
		t.Fatalf("after re-creation: %q", got)
	}
	// CLIENT UNBLOCK
	b.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
	waitBlockedClients(t, s, 1)
	list := w.do("CLIENT", "LIST")
	for _, line := range strings.Split(bulkBody(t, list), "\n") {
		if strings.Contains(line, "cmd=xread") {
			cid := strings.Fields(line)[0][3:]
			w.do("CLIENT", "UNBLOCK", cid)
		}
	}
	if got := b.readWithin(2 * time.Second); got != "*-1\r\n" {
		t.Fatalf("unblocked: %q", got)
	}
}

func TestStreamBlockingXReadGroup(t *testing.T) {
	s := startTestServer(t)
	w := dialTest(t, s)
	a := dialTest(t, s)
	w.do("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
	a.send("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")
	waitBlockedClients(t, s, 1)
	w.do("XADD", "s", "5", "f", "v")
	if got := a.readWithin(2 * time.Second); got != "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n5-0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n" {
		t.Fatalf("served: %q", got)
	}
	if got := w.do("XPENDING", "s", "g"); !strings.Contains(got, "alice") {
		t.Fatalf("not pending: %q", got)
	}
	// XGROUP DESTROY: -NOGROUP
	a.send("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")
	waitBlockedClients(t, s, 1)
	w.do("XGROUP", "DESTROY", "s", "g")
	if got := a.readWithin(2 * time.Second); got != "-NOGROUP the consumer group this client was blocked on no longer exists\r\n" {
		t.Fatalf("destroy: %q", got)
	}
	// the key deleted, replaced, flushed: -UNBLOCKED (the watcher notices)
	for _, change := range [][]string{{"DEL", "s"}, {"SET", "s", "x"}, {"FLUSHALL"}} {
		w.do("DEL", "s")
		w.do("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
		a.send("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")
		waitBlockedClients(t, s, 1)
		w.do(change...)
		if got := a.readWithin(2 * time.Second); got != "-UNBLOCKED the stream key no longer exists\r\n" {
			t.Fatalf("%q: %q", change, got)
		}
	}
	// RENAME over the key: served from the new stream's group
	w.do("DEL", "s")
	w.do("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
	a.send("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")
	waitBlockedClients(t, s, 1)
	w.do("XGROUP", "CREATE", "s2", "g", "$", "MKSTREAM")
	w.do("XADD", "s2", "100", "f1", "v1")
	w.do("RENAME", "s2", "s")
	if got := a.readWithin(2 * time.Second); got != "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$5\r\n100-0\r\n*2\r\n$2\r\nf1\r\n$2\r\nv1\r\n" {
		t.Fatalf("rename: %q", got)
	}
	// an explicit ID never blocks; a timeout answers a null array
	if got := a.do("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", "0"); !strings.Contains(got, "100-0") {
		t.Fatalf("history: %q", got)
	}
	if got := a.do("XREADGROUP", "GROUP", "g", "bob", "BLOCK", "20", "STREAMS", "s", ">"); got != "*-1\r\n" {
		t.Fatalf("timeout: %q", got)
	}
	// failed blocked commands count as failed calls
	if info := w.do("INFO", "commandstats"); !strings.Contains(info, "cmdstat_xreadgroup:calls=") {
		t.Fatalf("commandstats: %q", info)
	}
	waitBlockedClients(t, s, 0)
	// with no XREADGROUP waiter left, the watcher goroutine stops
	sw := s.streamWatch()
	deadline := time.Now().Add(5 * time.Second)
	for {
		sw.mu.Lock()
		running := sw.running
		sw.mu.Unlock()
		if !running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("stream watcher still running with no waiters")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStreamCopyIndependent: COPY of a stream with groups is a deep copy.
func TestStreamCopyIndependent(t *testing.T) {
	s := startTestServer(t, "--enable-debug-command", "yes")
	w := dialTest(t, s)
	for _, id := range []string{"1", "2", "3"} {
		w.do("XADD", "x", id, "f", id)
	}
	w.do("XGROUP", "CREATE", "x", "g", "0")
	w.do("XREADGROUP", "GROUP", "g", "c", "STREAMS", "x", ">")
	w.do("COPY", "x", "y")
	full := func(k string) string { return w.do("XINFO", "STREAM", k, "FULL") }
	if full("x") != full("y") {
		t.Fatal("copy differs")
	}
	w.do("XACK", "y", "g", "1", "2")
	w.do("XADD", "y", "4", "f", "4")
	if got := w.do("XPENDING", "x", "g"); !strings.HasPrefix(got, "*4\r\n:3\r\n") {
		t.Fatalf("original changed: %q", got)
	}
	if w.do("DEBUG", "DIGEST-VALUE", "x") == w.do("DEBUG", "DIGEST-VALUE", "y") {
		t.Fatal("digests equal after change")
	}
}
