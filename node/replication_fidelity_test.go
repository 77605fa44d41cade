package node

import (
	"bytes"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shoal-db/shoal/internal/testharness"
	"github.com/shoal-db/shoal/rdb"
	"github.com/shoal-db/shoal/resp"
)

// Regression tests for replication divergences found with Redis's own
// suites (issue 23).

// startSyncedPair starts a master and its replica, in sync, and returns a
// connection to each.
func startSyncedPair(t *testing.T) (master, replica *testConn) {
	t.Helper()
	ms := startReplServer(t)
	rs := startReplServer(t)
	master, replica = dialTest(t, ms), dialTest(t, rs)
	replicaOf(t, replica, ms)
	waitInSync(t, master, replica)
	return master, replica
}

// sameDigest fails the test unless the two servers hold the same data.
func sameDigest(t *testing.T, master, replica *testConn) {
	t.Helper()
	if a, b := digest(t, master), digest(t, replica); a != b {
		t.Fatalf("digest master %q replica %q", a, b)
	}
}

// partialResyncKeepsDB writes in db 9 on the master, drops the replica's
// link, writes again in db 9 on the same connection (the master's stream
// does not repeat SELECT after a partial resync, in Redis as in shoal) and
// checks the write landed in the replica's db 9, not db 0.
func partialResyncKeepsDB(t *testing.T, m, r *testConn, wantPartial string) {
	t.Helper()
	m.do("SELECT", "9")
	m.do("SET", "before", "1")
	waitInSync(t, m, r)
	if got := r.do("CLIENT", "KILL", "TYPE", "master"); got != ":1\r\n" {
		t.Fatalf("CLIENT KILL TYPE master: %q", got)
	}
	replWaitFor(t, 10*time.Second, "link up again", func() bool {
		return infoField(t, r, "replication", "master_link_status") == "up"
	})
	m.do("SET", "after", "2")
	waitInSync(t, m, r)
	if got := infoField(t, m, "stats", "sync_partial_ok"); got != wantPartial {
		t.Fatalf("sync_partial_ok %q, want %q (the test needs a partial resync)", got, wantPartial)
	}
	r.do("SELECT", "9")
	if got := r.do("GET", "after"); got != "$1\r\n2\r\n" {
		t.Fatalf("replica db 9 GET after: %q", got)
	}
	r.do("SELECT", "0")
	if got := r.do("EXISTS", "after"); got != ":0\r\n" {
		t.Fatalf("replica db 0 has the db-9 write: EXISTS after = %q", got)
	}
}

func TestReplicationPartialResyncKeepsSelectedDB(t *testing.T) {
	m, r := startSyncedPair(t)
	partialResyncKeepsDB(t, m, r, "1")
	sameDigest(t, m, r)
}

func TestReplicationPartialResyncKeepsSelectedDBFromRedisMaster(t *testing.T) {
	redisAddr := startRealRedis(t, "--repl-diskless-sync-delay", "0", "--enable-debug-command", "yes")
	m := dialTestAddr(t, redisAddr)
	rs := startReplServer(t)
	r := dialTest(t, rs)
	i := strings.LastIndexByte(redisAddr, ':')
	if got := r.do("REPLICAOF", redisAddr[:i], redisAddr[i+1:]); got != "+OK\r\n" {
		t.Fatalf("REPLICAOF: %q", got)
	}
	waitInSync(t, m, r)
	partialResyncKeepsDB(t, m, r, "1")
	sameDigest(t, m, r)
}

// TestReplicationChainedFullSyncKeepsSelectedDB: a sub-replica full-synced
// from a replica whose proxied stream is in db 9 starts in db 9 (the
// payload's repl-stream-db): the proxied stream repeats no SELECT.
func TestReplicationChainedFullSyncKeepsSelectedDB(t *testing.T) {
	ms := startReplServer(t)
	rs := startReplServer(t)
	ss := startReplServer(t)
	m, r, sub := dialTest(t, ms), dialTest(t, rs), dialTest(t, ss)
	replicaOf(t, r, ms)
	waitInSync(t, m, r)
	m.do("SELECT", "9")
	m.do("SET", "before", "1")
	waitInSync(t, m, r)
	replicaOf(t, sub, rs)
	waitInSync(t, r, sub)
	m.do("SET", "after", "2")
	waitInSync(t, m, r)
	waitInSync(t, r, sub)
	sub.do("SELECT", "9")
	if got := sub.do("GET", "after"); got != "$1\r\n2\r\n" {
		t.Fatalf("sub-replica db 9 GET after: %q", got)
	}
	sameDigest(t, m, sub)
}

const fidelityLib = "#!lua name=fidelity\nredis.register_function{function_name='ro', callback=function() return 'hello' end, flags={'no-writes'}}"

// TestReplicationFullSyncCarriesFunctions: the full sync's payload carries
// the master's function libraries and replaces the replica's; later
// FUNCTION LOAD / DELETE reach it through the stream.
func TestReplicationFullSyncCarriesFunctions(t *testing.T) {
	ms := startReplServer(t)
	rs := startReplServer(t)
	m, r := dialTest(t, ms), dialTest(t, rs)
	if got := m.do("FUNCTION", "LOAD", fidelityLib); got != "$8\r\nfidelity\r\n" {
		t.Fatalf("FUNCTION LOAD: %q", got)
	}
	// A library only the replica has goes with the full sync.
	if got := r.do("FUNCTION", "LOAD", "#!lua name=local\nredis.register_function('loc', function() return 1 end)"); got != "$5\r\nlocal\r\n" {
		t.Fatalf("FUNCTION LOAD on the replica-to-be: %q", got)
	}
	replicaOf(t, r, ms)
	waitInSync(t, m, r)
	if got := r.do("FCALL_RO", "ro", "0"); got != "$5\r\nhello\r\n" {
		t.Fatalf("FCALL_RO on the replica after the full sync: %q", got)
	}
	if got := r.do("FCALL", "loc", "0"); got != "-ERR Function not found\r\n" {
		t.Fatalf("the replica's own library survived the full sync: %q", got)
	}
	if got := m.do("FUNCTION", "DELETE", "fidelity"); got != "+OK\r\n" {
		t.Fatalf("FUNCTION DELETE: %q", got)
	}
	waitInSync(t, m, r)
	if got := r.do("FUNCTION", "LIST"); got != "*0\r\n" {
		t.Fatalf("FUNCTION LIST on the replica after DELETE: %q", got)
	}
}

// TestReplicaOfUnblocksBlockedClients: a client blocked in BLPOP (and one
// in WAIT) on a master that becomes a replica is answered -UNBLOCKED and
// disconnected, as Redis's disconnectAllBlockedClients; its new master's
// RPUSH then reaches the list whole (before, it served the blocked client
// and the replica diverged: master a b c, replica b c).
func TestReplicaOfUnblocksBlockedClients(t *testing.T) {
	ms := startReplServer(t)
	bs := startReplServer(t)
	m, b := dialTest(t, ms), dialTest(t, bs)
	blpop, wait := dialTest(t, bs), dialTest(t, bs)
	blpop.send("BLPOP", "list", "0")
	wait.send("WAIT", "1", "0")
	replWaitFor(t, 10*time.Second, "two blocked clients", func() bool {
		return infoField(t, b, "clients", "blocked_clients") == "2"
	})
	replicaOf(t, b, ms)
	const unblocked = "-UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)\r\n"
	for _, tc := range []*testConn{blpop, wait} {
		if got := tc.read(); got != unblocked {
			t.Fatalf("blocked client's reply: %q", got)
		}
		_ = tc.c.SetReadDeadline(time.Now().Add(testIOTimeout))
		if _, err := tc.r.ReadByte(); err == nil {
			t.Fatalf("the unblocked client's connection is still open")
		}
	}
	waitInSync(t, m, b)
	m.do("RPUSH", "list", "a", "b", "c")
	waitInSync(t, m, b)
	if got := b.do("LRANGE", "list", "0", "-1"); got != "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n" {
		t.Fatalf("replica's list: %q", got)
	}
	if got := infoField(t, b, "clients", "blocked_clients"); got != "0" {
		t.Fatalf("blocked_clients on the replica: %q", got)
	}
}

// TestScriptSetReplReachesReplicasOnlyWithReplicaFlag: redis.set_repl
// decides what replicas get: REPL_AOF or REPL_NONE nothing, REPL_REPLICA
// and REPL_ALL the effect.
func TestScriptSetReplReachesReplicasOnlyWithReplicaFlag(t *testing.T) {
	m, r := startSyncedPair(t)
	script := `
redis.set_repl(redis.REPL_AOF) redis.call('set','aof','1')
redis.set_repl(redis.REPL_NONE) redis.call('set','none','1')
redis.set_repl(redis.REPL_REPLICA) redis.call('set','replica','1')
redis.set_repl(redis.REPL_ALL) redis.call('set','all','1')
return 1`
	if got := m.do("EVAL", script, "0"); got != ":1\r\n" {
		t.Fatalf("EVAL: %q", got)
	}
	waitInSync(t, m, r)
	for key, want := range map[string]string{"aof": ":0\r\n", "none": ":0\r\n", "replica": ":1\r\n", "all": ":1\r\n"} {
		if got := r.do("EXISTS", key); got != want {
			t.Fatalf("replica EXISTS %s = %q, want %q", key, got, want)
		}
	}
}

// TestStaleReplicaScriptsNeedAllowStale: with its link down and
// replica-serve-stale-data no, a replica runs only scripts flagged
// allow-stale, and those only commands allowed while stale (Redis's
// processCommand / scriptVerifyAllowStale).
func TestStaleReplicaScriptsNeedAllowStale(t *testing.T) {
	rs := startReplServer(t, "--replica-serve-stale-data", "no")
	r := dialTest(t, rs)
	lib := "#!lua name=stale\n" +
		"redis.register_function{function_name='f1', callback=function() return 'hello' end, flags={'no-writes'}}\n" +
		"redis.register_function{function_name='f2', callback=function() return 'hello' end, flags={'allow-stale', 'no-writes'}}\n" +
		"redis.register_function{function_name='f3', callback=function() return redis.call('get', 'x') end, flags={'allow-stale', 'no-writes'}}\n" +
		"redis.register_function{function_name='f4', callback=function() return redis.call('get', 'x') end}"
	if got := r.do("FUNCTION", "LOAD", lib); got != "$5\r\nstale\r\n" {
		t.Fatalf("FUNCTION LOAD: %q", got)
	}
	// A master that is not there: the link stays down.
	if got := r.do("REPLICAOF", "127.0.0.1", "1"); got != "+OK\r\n" {
		t.Fatalf("REPLICAOF: %q", got)
	}
	const masterDown = "-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.\r\n"
	const readOnly = "-READONLY You can't write against a read only replica.\r\n"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"FCALL", "f1", "0"}, masterDown},
		{[]string{"FCALL_RO", "f1", "0"}, masterDown},
		{[]string{"FCALL", "f2", "0"}, "$5\r\nhello\r\n"},
		{[]string{"FCALL", "f3", "0"}, "-ERR Can not execute the command on a stale replica script: f3, on @user_function:4.\r\n"},
		{[]string{"FCALL", "f4", "0"}, readOnly},
		{[]string{"EVAL", "return 1", "0"}, masterDown},
		{[]string{"EVAL", "#!lua flags=no-writes\nreturn 1", "0"}, masterDown},
		{[]string{"EVAL", "#!lua flags=allow-stale,no-writes\nreturn redis.call('echo','foobar')", "0"}, "$6\r\nfoobar\r\n"},
		{[]string{"SET", "x", "y"}, readOnly},
		{[]string{"GET", "x"}, masterDown},
	} {
		if got := r.do(c.args...); got != c.want {
			t.Errorf("%q on a stale replica: %q, want %q", c.args, got, c.want)
		}
	}
}

// saveExpiredKey writes dir/dump.rdb with a standalone server: "kept", and
// "soon", which is logically expired when this returns.
func saveExpiredKey(t *testing.T, dir string) {
	t.Helper()
	s := startReplServer(t, "--dir", dir)
	c := dialTest(t, s)
	c.do("DEBUG", "SET-ACTIVE-EXPIRE", "0")
	c.do("SET", "soon", "v", "PX", "100")
	c.do("SET", "kept", "v")
	if got := c.doDisk("SAVE"); got != "+OK\r\n" {
		t.Fatalf("SAVE: %q", got)
	}
	s.Shutdown()
	time.Sleep(200 * time.Millisecond) // "soon" is past its expiry from now on
}

// TestReplicaKeepsExpiredKeysAtLoad: a replica restarted from its RDB keeps
// the keys that expired while it was down until its master's DEL (Redis's
// rdbLoad drops them only when iAmMaster()); a master drops them.
func TestReplicaKeepsExpiredKeysAtLoad(t *testing.T) {
	dir := t.TempDir()
	saveExpiredKey(t, dir)

	// A replica whose master is not there: nothing deletes the key.
	replica := dialTest(t, startReplServer(t, "--dir", dir, "--replicaof", "127.0.0.1", "1"))
	if got := replica.do("DBSIZE"); got != ":2\r\n" {
		t.Fatalf("replica DBSIZE after load: %q, want 2 (the expired key kept)", got)
	}
	if got := replica.do("GET", "soon"); got != "$-1\r\n" {
		t.Fatalf("replica GET of the logically expired key: %q", got)
	}
	master := dialTest(t, startReplServer(t, "--dir", dir))
	if got := master.do("DBSIZE"); got != ":1\r\n" {
		t.Fatalf("master DBSIZE after load: %q, want 1", got)
	}
	// The file has no replication fields: nobody can continue from the
	// DEL the load fed, so the backlog is not kept.
	if got := infoField(t, master, "replication", "repl_backlog_active"); got != "0" {
		t.Fatalf("master repl_backlog_active after a load without replication fields: %q", got)
	}
}

// TestClusterReplicaKeepsExpiredKeysAtLoad: a cluster node that nodes.conf
// names a replica keeps logically expired keys when it loads its RDB.
func TestClusterReplicaKeepsExpiredKeysAtLoad(t *testing.T) {
	master := startClusterTestServer(t, "")
	dir := t.TempDir()
	replica := startClusterTestServer(t, dir)
	mc, rc := dialTest(t, master.srv), dialTest(t, replica.srv)
	if got := mc.do("CLUSTER", "ADDSLOTSRANGE", "0", "16383"); got != "+OK\r\n" {
		t.Fatalf("ADDSLOTSRANGE: %q", got)
	}
	if got := rc.do("CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(master.port), strconv.Itoa(master.cport)); got != "+OK\r\n" {
		t.Fatalf("MEET: %q", got)
	}
	masterID := master.srv.cluster.MyID()
	replWaitFor(t, 20*time.Second, "CLUSTER REPLICATE accepted", func() bool {
		_, known := replica.srv.cluster.Node(masterID)
		return known && rc.do("CLUSTER", "REPLICATE", masterID) == "+OK\r\n"
	})
	replica.srv.Shutdown() // nodes.conf names it a replica
	master.srv.Shutdown()

	saveExpiredKey(t, dir) // its RDB

	again := startClusterTestServer(t, dir)
	if again.srv.cluster.Myself().Master != masterID {
		t.Fatalf("restarted node is not a replica of %s", masterID)
	}
	if got := dialTest(t, again.srv).do("DBSIZE"); got != ":2\r\n" {
		t.Fatalf("cluster replica DBSIZE after load: %q, want 2 (the expired key kept)", got)
	}
}

// TestMinReplicasRecountedOnConfigSet: CONFIG SET of min-replicas-* counts
// the good replicas at once (Redis's updateGoodSlaves), so a write right
// after it does not wait for the once-a-second recount (replication-2.tcl).
func TestMinReplicasRecountedOnConfigSet(t *testing.T) {
	ms := startReplServer(t)
	m := dialTest(t, ms)
	m.do("CONFIG", "SET", "min-replicas-to-write", "1")
	if got := m.do("SET", "k", "v"); got != "-NOREPLICAS Not enough good replicas to write.\r\n" {
		t.Fatalf("SET without replicas: %q", got)
	}
	m.do("CONFIG", "SET", "min-replicas-to-write", "0")
	r := dialTest(t, startReplServer(t))
	replicaOf(t, r, ms)
	waitInSync(t, m, r)
	replWaitFor(t, 10*time.Second, "replica online", func() bool {
		return strings.Contains(infoField(t, m, "replication", "slave0"), "state=online")
	})
	m.do("CONFIG", "SET", "min-replicas-to-write", "1")
	if got := m.do("SET", "k", "v"); got != "+OK\r\n" {
		t.Fatalf("SET right after CONFIG SET min-replicas-to-write 1 with one replica: %q", got)
	}
}

// TestReplicaCountsErrorsOnMasterCommands: a command of the master's stream
// that fails on the replica (the data diverged on a writable replica) is
// logged as CRITICAL and counted in unexpected_error_replies, as Redis's
// afterErrorReply (replication-4.tcl "Data divergence is allowed on writable
// replicas").
func TestReplicaCountsErrorsOnMasterCommands(t *testing.T) {
	m, r := startSyncedPair(t)
	r.do("CONFIG", "SET", "replica-read-only", "no")
	if got := r.do("SET", "number2", "foo"); got != "+OK\r\n" {
		t.Fatalf("SET on the writable replica: %q", got)
	}
	m.do("INCRBY", "number2", "1")
	waitInSync(t, m, r)
	if got := r.do("GET", "number2"); got != "$3\r\nfoo\r\n" {
		t.Fatalf("replica number2: %q", got)
	}
	if got := infoField(t, r, "stats", "unexpected_error_replies"); got != "1" {
		t.Fatalf("replica unexpected_error_replies: %q", got)
	}
}

// TestClusterFailoverUnblocksDemotedMastersClients: the master demoted by a
// manual failover answers its BLPOP client -UNBLOCKED (Redis's
// clusterSetMaster → replicationSetMaster → disconnectAllBlockedClients).
func TestClusterFailoverUnblocksDemotedMastersClients(t *testing.T) {
	master := startClusterTestServer(t, "")
	replica := startClusterTestServer(t, "")
	mc, rc := dialTest(t, master.srv), dialTest(t, replica.srv)
	if got := mc.do("CLUSTER", "ADDSLOTSRANGE", "0", "16383"); got != "+OK\r\n" {
		t.Fatalf("ADDSLOTSRANGE: %q", got)
	}
	if got := rc.do("CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(master.port), strconv.Itoa(master.cport)); got != "+OK\r\n" {
		t.Fatalf("MEET: %q", got)
	}
	masterID, replicaID := master.srv.cluster.MyID(), replica.srv.cluster.MyID()
	replWaitFor(t, 20*time.Second, "CLUSTER REPLICATE accepted", func() bool {
		_, known := replica.srv.cluster.Node(masterID)
		return known && rc.do("CLUSTER", "REPLICATE", masterID) == "+OK\r\n"
	})
	replWaitFor(t, 20*time.Second, "replica known to the master and in sync", func() bool {
		n, ok := master.srv.cluster.Node(replicaID)
		return ok && n.IsReplica() && master.srv.cluster.StateOK() &&
			infoField(t, rc, "replication", "master_link_status") == "up"
	})
	blocked := dialTest(t, master.srv)
	blocked.send("BLPOP", "list", "0")
	replWaitFor(t, 10*time.Second, "a blocked client", func() bool {
		return infoField(t, mc, "clients", "blocked_clients") == "1"
	})
	replWaitFor(t, 20*time.Second, "CLUSTER FAILOVER accepted", func() bool {
		return rc.do("CLUSTER", "FAILOVER") == "+OK\r\n"
	})
	if got := blocked.read(); got != "-UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)\r\n" {
		t.Fatalf("the demoted master's blocked client got %q", got)
	}
}

// fakeMasterSession accepts one replica connection on ln, answers its
// handshake, and returns its PSYNC arguments and the connection.
// replicaOfListener starts a replica of a listener the test plays the
// master on (fakeMasterSession), closed when the test ends.
func replicaOfListener(t *testing.T) (net.Listener, *testConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	r := dialTest(t, startReplServer(t))
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	if got := r.do("REPLICAOF", "127.0.0.1", port); got != "+OK\r\n" {
		t.Fatalf("REPLICAOF: %q", got)
	}
	return ln, r
}

// emptyRDBFile is an RDB file without keys, as a master with no data sends.
func emptyRDBFile(t *testing.T) []byte {
	var b bytes.Buffer
	if err := rdb.NewFileWriter(&b, rdb.Compressed, [2]string{"redis-ver", Version}).Finish(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func fakeMasterSession(t *testing.T, ln net.Listener) ([]string, net.Conn) {
	t.Helper()
	_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(20 * time.Second))
	conn, err := ln.Accept()
	if err != nil {
		t.Fatalf("accept: %v", err)
	}
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	rd := resp.NewStreamReader(conn, resp.StreamLimits{MaxBulkLen: 1 << 20})
	for range 10 {
		args, _, err := rd.ReadCommand(nil)
		if err != nil {
			t.Fatalf("reading the handshake: %v", err)
		}
		switch strings.ToUpper(string(args[0])) {
		case "PING":
			_, _ = conn.Write([]byte("+PONG\r\n"))
		case "PSYNC":
			return []string{string(args[1]), string(args[2])}, conn
		default:
			_, _ = conn.Write([]byte("+OK\r\n"))
		}
	}
	t.Fatalf("no PSYNC in the handshake")
	return nil, nil
}

// TestReplicaResumesBeforeAnUnfinishedTransaction: a link lost between
// MULTI and EXEC leaves the replica's offset before the MULTI (the queued
// commands are discarded with the link), so the partial resync sends the
// whole transaction again; counting the queued bytes lost them.
func TestReplicaResumesBeforeAnUnfinishedTransaction(t *testing.T) {
	ln, r := replicaOfListener(t)
	const id = "1111111111111111111111111111111111111111"
	_, conn := fakeMasterSession(t, ln) // answered with a full sync whatever it asks
	rdb := emptyRDBFile(t)
	set := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"
	stream := "+FULLRESYNC " + id + " 0\r\n$" + strconv.Itoa(len(rdb)) + "\r\n" + string(rdb) +
		set + "*1\r\n$5\r\nMULTI\r\n" + "*3\r\n$3\r\nSET\r\n$1\r\nt\r\n$1\r\nx\r\n"
	if _, err := conn.Write([]byte(stream)); err != nil {
		t.Fatal(err)
	}
	replWaitFor(t, 10*time.Second, "the SET before the transaction applied", func() bool {
		return r.do("EXISTS", "k") == ":1\r\n"
	})
	_ = conn.Close() // the link drops inside the transaction
	psync, conn := fakeMasterSession(t, ln)
	defer conn.Close()
	if want := strconv.Itoa(len(set) + 1); psync[0] != id || psync[1] != want {
		t.Fatalf("PSYNC after the drop: %q, want [%s %s] (resume at the MULTI)", psync, id, want)
	}
}

// TestReplicaAppliesMasterStreamAfterBusyScript: while a script keeps a
// replica busy, its master's commands wait instead of being answered -BUSY
// (and lost); they apply once the script ends (replication.tcl "Master
// stream is correctly processed while the replica has a script in -BUSY
// state").
func TestReplicaAppliesMasterStreamAfterBusyScript(t *testing.T) {
	m, r := startSyncedPair(t)
	r.do("CONFIG", "SET", "busy-reply-threshold", "50")
	script := dialTestAddr(t, r.c.RemoteAddr().String())
	script.send("EVAL", "while true do end", "0")
	replWaitFor(t, 10*time.Second, "the replica busy", func() bool {
		return strings.HasPrefix(r.do("PING"), "-BUSY")
	})
	m.do("SET", "during", "busy")
	time.Sleep(300 * time.Millisecond) // the SET reaches the busy replica
	if got := r.do("SCRIPT", "KILL"); got != "+OK\r\n" {
		t.Fatalf("SCRIPT KILL: %q", got)
	}
	if got := script.read(); !strings.HasPrefix(got, "-ERR Script killed by user") {
		t.Fatalf("killed script's reply: %q", got)
	}
	waitInSync(t, m, r)
	if got := r.do("GET", "during"); got != "$4\r\nbusy\r\n" {
		t.Fatalf("the write sent while the replica was busy: GET = %q", got)
	}
	sameDigest(t, m, r)
}

// TestDebugReplicateReachesOnlyReplicas: DEBUG REPLICATE puts a command in
// the replication stream and nowhere else (replication-4.tcl "Data
// divergence can happen under default conditions").
func TestDebugReplicateReachesOnlyReplicas(t *testing.T) {
	m, r := startSyncedPair(t)
	if got := m.do("DEBUG", "REPLICATE", "SET", "x", "1"); got != "+OK\r\n" {
		t.Fatalf("DEBUG REPLICATE: %q", got)
	}
	waitInSync(t, m, r)
	if got := r.do("GET", "x"); got != "$1\r\n1\r\n" {
		t.Fatalf("GET x on the replica: %q", got)
	}
	if got := m.do("EXISTS", "x"); got != ":0\r\n" {
		t.Fatalf("EXISTS x on the master: %q", got)
	}
}

// TestMasterRestartedFromRDBContinues: a master restarted from its RDB
// file keeps the file's replication ID as ID2, valid up to the file's
// offset, so its replica continues with a partial resync (Redis's
// loadDataFromDisk); a key that expired while the master was down is
// dropped at load and its DEL fed to the backlog, so the replica loses it
// too.
func TestMasterRestartedFromRDBContinues(t *testing.T) {
	dir := t.TempDir()
	port := strconv.Itoa(testharness.TCPPort(t))
	opts := []string{"--dir", dir, "--port", port, "--repl-ping-replica-period", "3600"}
	ms := startReplServer(t, opts...)
	m, r := dialTest(t, ms), dialTest(t, startReplServer(t))
	replicaOf(t, r, ms)
	waitInSync(t, m, r)
	require.Equal(t, "+OK\r\n", m.do("DEBUG", "SET-ACTIVE-EXPIRE", "0"))
	for i := range 50 {
		m.do("SET", "k"+strconv.Itoa(i), "v")
	}
	m.do("SELECT", "3")
	m.do("SET", "soon", "v", "PX", "100")
	m.do("SELECT", "0")
	waitInSync(t, m, r)
	oldID := infoField(t, m, "replication", "master_replid")
	oldOff, err := strconv.ParseInt(infoField(t, m, "replication", "master_repl_offset"), 10, 64)
	require.NoError(t, err)
	require.Equal(t, "+OK\r\n", m.doDisk("SAVE"))
	ms.Shutdown()
	time.Sleep(200 * time.Millisecond) // "soon" is past its expiry from now on

	m = dialTest(t, startReplServer(t, opts...))
	require.Equal(t, oldID, infoField(t, m, "replication", "master_replid2"))
	require.Equal(t, strconv.FormatInt(oldOff+1, 10), infoField(t, m, "replication", "second_repl_offset"))
	require.Equal(t, "1", infoField(t, m, "persistence", "rdb_last_load_keys_expired"))
	// The stream after the file's offset is the load's DEL, in db 3.
	fed := len(resp.AppendCommand(nil, "SELECT", "3")) + len(resp.AppendCommand(nil, "DEL", "soon"))
	require.Equal(t, strconv.FormatInt(oldOff+int64(fed), 10), infoField(t, m, "replication", "master_repl_offset"))
	waitInSync(t, m, r)
	require.Equal(t, "1", infoField(t, m, "stats", "sync_partial_ok"))
	require.Equal(t, "0", infoField(t, m, "stats", "sync_full"))
	require.Equal(t, "+OK\r\n", r.do("SELECT", "3"))
	require.Equal(t, ":0\r\n", r.do("DBSIZE"), "the replica kept the key the master dropped at load")
	require.Equal(t, digest(t, m), digest(t, r))
}

// TestConfigResetStatResetsSyncCounters: CONFIG RESETSTAT zeroes
// sync_full, sync_partial_ok and sync_partial_err, as Redis's
// resetServerStats (the suites reset them before counting resyncs).
func TestConfigResetStatResetsSyncCounters(t *testing.T) {
	ms := startReplServer(t)
	m, r := dialTest(t, ms), dialTest(t, startReplServer(t))
	replicaOf(t, r, ms)
	waitInSync(t, m, r)
	require.Equal(t, "1", infoField(t, m, "stats", "sync_full"))
	require.Equal(t, "+OK\r\n", m.do("CONFIG", "RESETSTAT"))
	for _, f := range []string{"sync_full", "sync_partial_ok", "sync_partial_err"} {
		require.Equal(t, "0", infoField(t, m, "stats", f), f)
	}
}

// TestReplicaofNoOneInsideExecWhileTheMasterSends: REPLICAOF NO ONE inside
// an EXEC that holds the execution gate (DEBUG SLEEP while the master's
// PINGs and writes arrive) must not wait for the link's goroutine, which
// waits for that gate: the EXEC ends, the node is a master, and the
// master's commands that waited are dropped, not applied after the switch
// (tcl integration/psync2-pingoff hung here).
func TestReplicaofNoOneInsideExecWhileTheMasterSends(t *testing.T) {
	ms, rs := startReplServer(t), startReplServer(t)
	m, r := dialTest(t, ms), dialTest(t, rs)
	m.do("CONFIG", "SET", "repl-ping-replica-period", "1")
	replicaOf(t, r, ms)
	m.do("SET", "before", "1")
	waitInSync(t, m, r)
	r.do("MULTI")
	r.do("DEBUG", "SLEEP", "1.5")
	r.do("REPLICAOF", "NO", "ONE")
	r.send("EXEC")
	time.Sleep(200 * time.Millisecond) // EXEC holds the gate, sleeping
	m.do("SET", "during", "1")         // reaches the replica's link while it waits
	if got := r.readWithin(testIOTimeout); got != "*2\r\n+OK\r\n+OK\r\n" {
		t.Fatalf("EXEC = %q", got)
	}
	if got := infoField(t, r, "replication", "role"); got != "master" {
		t.Fatalf("role %q after REPLICAOF NO ONE", got)
	}
	m.do("SET", "after", "1")
	time.Sleep(100 * time.Millisecond)
	if got := r.do("EXISTS", "before", "during", "after"); got != ":1\r\n" {
		t.Fatalf("EXISTS before during after = %q: only what was applied before the EXEC stays", got)
	}
	if got := r.do("SET", "mine", "1"); got != "+OK\r\n" {
		t.Fatalf("a write on the new master: %q", got)
	}
}
