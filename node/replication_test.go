package node

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redis/go-redis/v9"
)

// startReplServer is startTestServer with DEBUG enabled: the replication
// tests compare DEBUG DIGEST (an error on both sides would compare equal).
func startReplServer(t testing.TB, opts ...string) *Server {
	t.Helper()
	return startTestServer(t, append([]string{"--enable-debug-command", "yes"}, opts...)...)
}

// digest is DEBUG DIGEST's 40 hex characters; anything else fails t.
func digest(t testing.TB, tc *testConn) string {
	t.Helper()
	d := tc.do("DEBUG", "DIGEST")
	if len(d) != 43 || d[0] != '+' {
		t.Fatalf("DEBUG DIGEST: %q", d)
	}
	return d[1:41]
}

// infoField returns one field of INFO <section>.
func infoField(t testing.TB, tc *testConn, section, name string) string {
	t.Helper()
	body := bulkBody(t, tc.do("INFO", section))
	for _, line := range strings.Split(body, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	return ""
}

// waitFor polls cond every 10 ms until it holds or d passes.
func replWaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitInSync waits until replica's link is up, its full sync done and its
// offset equals the master's.
func waitInSync(t testing.TB, master, replica *testConn) {
	t.Helper()
	replWaitFor(t, 15*time.Second, "replica in sync", func() bool {
		if infoField(t, replica, "replication", "master_link_status") != "up" ||
			infoField(t, replica, "replication", "master_sync_in_progress") != "0" {
			return false
		}
		return infoField(t, master, "replication", "master_repl_offset") ==
			infoField(t, replica, "replication", "slave_repl_offset")
	})
}

func replicaOf(t testing.TB, replica *testConn, master *Server) {
	t.Helper()
	addr := master.Addr().String()
	i := strings.LastIndexByte(addr, ':')
	if got := replica.do("REPLICAOF", addr[:i], addr[i+1:]); got != "+OK\r\n" {
		t.Fatalf("REPLICAOF: %q", got)
	}
}

func TestReplicationBasicTypesAndDigest(t *testing.T) {
	ms := startReplServer(t)
	rs := startReplServer(t)
	m, r := dialTest(t, ms), dialTest(t, rs)
	// Data written before the replica attaches travels in the RDB.
	m.do("SET", "s", "v")
	m.do("RPUSH", "l", "a", "b", "c")
	m.do("HSET", "h", "f1", "v1", "f2", "v2")
	m.do("SADD", "set", "x", "y", "1")
	m.do("SADD", "iset", "1", "2", "3")
	m.do("XADD", "st", "1-1", "f", "v")
	m.do("XGROUP", "CREATE", "st", "g", "0")
	m.do("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "st", ">")
	m.do("ZADD", "z", "1.5", "a", "-3", "b")
	m.do("SET", "ttl", "v", "EX", "1000")
	m.do("SELECT", "3")
	m.do("SET", "in3", "v")
	replicaOf(t, r, ms)
	waitInSync(t, m, r)
	// Writes after the sync travel in the stream.
	m.do("SELECT", "0")
	m.do("INCR", "counter")
	m.do("LPUSH", "l", "z")
	m.do("DEL", "s")
	waitInSync(t, m, r)
	if a, b := digest(t, m), digest(t, r); a != b {
		t.Fatalf("digest master %q replica %q", a, b)
	}
	if got := r.do("SET", "x", "y"); got != "-READONLY You can't write against a read only replica.\r\n" {
		t.Fatalf("write on replica: %q", got)
	}
	if got := r.do("PTTL", "ttl"); got == ":-1\r\n" || got == ":-2\r\n" {
		t.Fatalf("ttl lost: %q", got)
	}
	if got := m.do("CLIENT", "LIST", "TYPE", "replica"); !strings.Contains(got, " flags=S ") {
		t.Fatalf("CLIENT LIST TYPE replica on the master: %q", got)
	}
	if got := r.do("CLIENT", "LIST", "TYPE", "master"); !strings.Contains(got, " flags=M ") {
		t.Fatalf("CLIENT LIST TYPE master on the replica: %q", got)
	}
	if got := infoField(t, m, "stats", "total_net_repl_output_bytes"); got == "0" || got == "" {
		t.Fatalf("total_net_repl_output_bytes on the master %q", got)
	}
	if got := infoField(t, r, "stats", "total_net_repl_input_bytes"); got == "0" || got == "" {
		t.Fatalf("total_net_repl_input_bytes on the replica %q", got)
	}
	if got := infoField(t, m, "replication", "connected_slaves"); got != "1" {
		t.Fatalf("connected_slaves %q", got)
	}
	if got := infoField(t, m, "replication", "slave0"); !strings.Contains(got, "state=online") {
		t.Fatalf("slave0 %q", got)
	}
	role := r.do("ROLE")
	if !strings.HasPrefix(role, "*5\r\n$5\r\nslave\r\n") || !strings.Contains(role, "connected") {
		t.Fatalf("ROLE on replica %q", role)
	}
	// WAIT sees the replica's ACK.
	m.do("SET", "w", "1")
	if got := m.do("WAIT", "1", "2000"); got != ":1\r\n" {
		t.Fatalf("WAIT %q", got)
	}
	// REPLICAOF NO ONE keeps the data and shifts the replication ID.
	id := infoField(t, r, "replication", "master_replid")
	if got := r.do("REPLICAOF", "NO", "ONE"); got != "+OK\r\n" {
		t.Fatalf("REPLICAOF NO ONE %q", got)
	}
	if got := infoField(t, r, "replication", "master_replid2"); got != id {
		t.Fatalf("replid2 %q want %q", got, id)
	}
	if got := r.do("GET", "counter"); got != "$1\r\n1\r\n" {
		t.Fatalf("data after promotion %q", got)
	}
}

// TestReplicationFullSyncExactUnderWrites runs INCR/APPEND/LPUSH/SADD storms
// (and cross-slot RPOPLPUSH / SINTERSTORE) on many keys while the replica
// full-syncs again and again, and compares DEBUG DIGEST after catch-up.
func TestReplicationFullSyncExactUnderWrites(t *testing.T) {
	ms := startReplServer(t)
	rs := startReplServer(t)
	m, r := dialTest(t, ms), dialTest(t, rs)
	ctx := context.Background()
	mc := redis.NewClient(&redis.Options{Addr: ms.Addr().String(), PoolSize: 8})
	defer mc.Close()
	for i := range 2000 {
		m.send("SET", "k"+strconv.Itoa(i), strconv.Itoa(i))
	}
	for range 2000 {
		m.read()
	}
	rounds := 4
	if testing.Short() {
		rounds = 2
	}
	for round := range rounds {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), uint64(round)))
				for n := 0; n < 20000; n++ {
					select {
					case <-stop:
						return
					default:
					}
					k := strconv.Itoa(rng.IntN(500))
					var err error
					switch rng.IntN(6) {
					case 0:
						err = mc.Incr(ctx, "n"+k).Err()
					case 1:
						err = mc.Append(ctx, "a"+k, "x").Err()
					case 2:
						err = mc.LPush(ctx, "l"+k, n).Err()
					case 3:
						err = mc.SAdd(ctx, "s"+k, n%50).Err()
					case 4:
						err = mc.RPopLPush(ctx, "l"+k, "l"+strconv.Itoa(rng.IntN(500))).Err()
					case 5:
						err = mc.SInterStore(ctx, "s"+k, "s"+k, "s"+strconv.Itoa(rng.IntN(500))).Err()
					}
					if w == 0 && n%4000 == 3999 {
						// Keyless writes over the whole keyspace, ordered
						// with the per-slot writes and images.
						err = mc.Do(ctx, "SWAPDB", 0, 1).Err()
					}
					if err != nil && err != redis.Nil {
						t.Errorf("write: %v", err)
						return
					}
				}
			}()
		}
		// A fresh full sync while the storm runs.
		r.do("REPLICAOF", "NO", "ONE")
		r.do("FLUSHALL")
		replicaOf(t, r, ms)
		time.Sleep(300 * time.Millisecond)
		close(stop)
		wg.Wait()
		waitInSync(t, m, r)
		if a, b := digest(t, m), digest(t, r); a != b {
			t.Fatalf("round %d: digest master %q replica %q (dbsize %q / %q)", round, a, b, m.do("DBSIZE"), r.do("DBSIZE"))
		}
	}
	if got := infoField(t, m, "stats", "sync_full"); got == "" {
		t.Fatalf("sync_full missing")
	}
}

// TestReplicationPartialResyncAfterLinkDrop kills the master link on the
// replica; it reconnects and continues with +CONTINUE (no full sync).
func TestReplicationPartialResyncAfterLinkDrop(t *testing.T) {
	ms := startReplServer(t)
	rs := startReplServer(t)
	m, r := dialTest(t, ms), dialTest(t, rs)
	replicaOf(t, r, ms)
	waitInSync(t, m, r)
	full := infoField(t, m, "stats", "sync_full")
	if got := r.do("CLIENT", "KILL", "TYPE", "master"); got != ":1\r\n" {
		t.Fatalf("CLIENT KILL TYPE master: %q", got)
	}
	for i := range 100 {
		m.do("SET", "k"+strconv.Itoa(i), "v")
	}
	waitInSync(t, m, r)
	if got := infoField(t, m, "stats", "sync_partial_ok"); got != "1" {
		t.Fatalf("sync_partial_ok %q", got)
	}
	if got := infoField(t, m, "stats", "sync_full"); got != full {
		t.Fatalf("sync_full %q, was %q", got, full)
	}
	if a, b := digest(t, m), digest(t, r); a != b {
		t.Fatalf("digest master %q replica %q", a, b)
	}
}

// TestReplicationChainedUnderWrites: a replica's sub-replica, full-synced
// from the replica while the master is written, gets the same data, ID and
// offset.
func TestReplicationChainedUnderWrites(t *testing.T) {
	ms := startReplServer(t)
	rs := startReplServer(t)
	ss := startReplServer(t)
	m, r, sub := dialTest(t, ms), dialTest(t, rs), dialTest(t, ss)
	replicaOf(t, r, ms)
	waitInSync(t, m, r)
	ctx := context.Background()
	mc := redis.NewClient(&redis.Options{Addr: ms.Addr().String(), PoolSize: 4})
	defer mc.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for n := 0; n < 30000; n++ {
				select {
				case <-stop:
					return
				default:
				}
				k := strconv.Itoa(rng.IntN(300))
				var err error
				switch rng.IntN(3) {
				case 0:
					err = mc.Incr(ctx, "n"+k).Err()
				case 1:
					err = mc.RPush(ctx, "l"+k, n).Err()
				case 2:
					err = mc.RPopLPush(ctx, "l"+k, "l"+strconv.Itoa(rng.IntN(300))).Err()
				}
				if err != nil && err != redis.Nil {
					t.Errorf("write: %v", err)
					return
				}
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	replicaOf(t, sub, rs)
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	waitInSync(t, m, r)
	waitInSync(t, r, sub)
	if a, b, c := digest(t, m), digest(t, r), digest(t, sub); a != b || b != c {
		t.Fatalf("digests master %q replica %q sub-replica %q", a, b, c)
	}
	if a, b := infoField(t, m, "replication", "master_replid"), infoField(t, sub, "replication", "master_replid"); a != b {
		t.Fatalf("replid master %q sub-replica %q", a, b)
	}
}

func TestReplicationMinReplicasAndWait(t *testing.T) {
	ms := startReplServer(t, "--min-replicas-to-write", "1")
	m := dialTest(t, ms)
	if got := m.do("SET", "k", "v"); got != "-NOREPLICAS Not enough good replicas to write.\r\n" {
		t.Fatalf("SET without replicas: %q", got)
	}
	if got := m.do("GET", "k"); got != "$-1\r\n" {
		t.Fatalf("GET: %q", got)
	}
	if got := m.do("WAIT", "1", "50"); got != ":0\r\n" {
		t.Fatalf("WAIT without replicas: %q", got)
	}
	if got := m.do("WAIT", "1", "-1"); got != "-ERR timeout is negative\r\n" {
		t.Fatalf("WAIT negative: %q", got)
	}
	rs := startReplServer(t)
	r := dialTest(t, rs)
	replicaOf(t, r, ms)
	waitInSync(t, m, r)
	replWaitFor(t, 5*time.Second, "a good replica", func() bool { return m.do("SET", "k", "v") == "+OK\r\n" })
	start := time.Now()
	if got := m.do("WAIT", "1", "5000"); got != ":1\r\n" {
		t.Fatalf("WAIT: %q", got)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("WAIT took %v", d)
	}
	if got := r.do("WAIT", "1", "10"); !strings.HasPrefix(got, "-ERR WAIT cannot be used with replica instances.") {
		t.Fatalf("WAIT on a replica: %q", got)
	}
	if got := r.do("REPLCONF", "listening-port"); got != "-ERR syntax error\r\n" {
		t.Fatalf("REPLCONF odd args: %q", got)
	}
	if got := r.do("REPLCONF", "foo", "bar"); got != "-ERR Unrecognized REPLCONF option: foo\r\n" {
		t.Fatalf("REPLCONF unknown: %q", got)
	}
}

// lineAfterKeepAlives reads the first line of a sync's answer that is not
// a keep-alive: a master writes a newline a second to a replica waiting for
// its sync, from the moment it asked (before +FULLRESYNC too), as Redis's
// replicationCron does; a replica skips them.
func lineAfterKeepAlives(rd *bufio.Reader) (string, error) {
	line, err := rd.ReadString('\n')
	for keepAlives := 0; err == nil && line == "\n" && keepAlives < 30; keepAlives++ {
		line, err = rd.ReadString('\n')
	}
	return line, err
}

// TestReplicationStaleDataAndOldSync: a replica whose master is down answers
// MASTERDOWN when replica-serve-stale-data is no; SYNC (no PSYNC) streams
// the empty RDB and then the writes.
func TestReplicationStaleDataAndOldSync(t *testing.T) {
	ms := startReplServer(t)
	rs := startReplServer(t, "--replica-serve-stale-data", "no")
	m, r := dialTest(t, ms), dialTest(t, rs)
	m.do("SET", "k", "v")
	replicaOf(t, r, ms)
	waitInSync(t, m, r)
	if got := r.do("GET", "k"); got != "$1\r\nv\r\n" {
		t.Fatalf("GET on a synced replica: %q", got)
	}
	ms.Shutdown()
	replWaitFor(t, 5*time.Second, "link down", func() bool {
		return infoField(t, r, "replication", "master_link_status") == "down"
	})
	if got := r.do("GET", "k"); got != "-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.\r\n" {
		t.Fatalf("GET with the master down: %q", got)
	}
	if got := r.do("PING"); !strings.HasPrefix(got, "-MASTERDOWN") { // not a stale command in 7.0
		t.Fatalf("PING: %q", got)
	}
	if got := infoField(t, r, "replication", "master_link_down_since_seconds"); got == "" || got == "-1" {
		t.Fatalf("master_link_down_since_seconds %q", got)
	}

	// SYNC: no +FULLRESYNC line, the RDB, then the stream.
	m2 := startReplServer(t)
	sc := dialTest(t, m2)
	sc.send("SYNC")
	rd := bufio.NewReader(sc.c)
	_ = sc.c.SetReadDeadline(time.Now().Add(testIOTimeout))
	line, err := lineAfterKeepAlives(rd)
	size, perr := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "$")))
	if err != nil || !strings.HasPrefix(line, "$") || perr != nil || size < 18 || size > 1<<20 {
		t.Fatalf("SYNC payload header %q %v", line, err)
	}
	rdb := make([]byte, size) // no keys yet: the aux fields and the function libraries
	if _, err := io.ReadFull(rd, rdb); err != nil || string(rdb[:9]) != "REDIS0010" {
		t.Fatalf("RDB %q %v", rdb, err)
	}
	dialTest(t, m2).do("SET", "a", "1")
	var seen strings.Builder
	buf := make([]byte, 4096)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(seen.String(), "$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n") && time.Now().Before(deadline) {
		_ = sc.c.SetReadDeadline(time.Now().Add(time.Second))
		n, _ := rd.Read(buf)
		seen.Write(buf[:n])
	}
	if !strings.Contains(seen.String(), "*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n") {
		t.Fatalf("stream after SYNC: %q", seen.String())
	}
}

// TestReplicationTransactionsApplied: MULTI/EXEC effects reach the replica
// whole (the queued commands outlive the stream reader's buffer).
func TestReplicationTransactionsApplied(t *testing.T) {
	ms := startReplServer(t)
	rs := startReplServer(t)
	m, r := dialTest(t, ms), dialTest(t, rs)
	replicaOf(t, r, ms)
	waitInSync(t, m, r)
	for i := range 50 {
		k := strconv.Itoa(i)
		m.do("MULTI")
		m.do("SET", "A"+k, "A_value"+k)
		m.do("EXPIRE", "A"+k, "3600")
		m.do("RPUSH", "L"+k, "x", "y")
		if got := m.do("EXEC"); !strings.HasPrefix(got, "*3\r\n") {
			t.Fatalf("EXEC: %q", got)
		}
	}
	waitInSync(t, m, r)
	if a, b := digest(t, m), digest(t, r); a != b {
		t.Fatalf("digest master %q replica %q", a, b)
	}
	if got := r.do("GET", "A7"); got != "$8\r\nA_value7\r\n" {
		t.Fatalf("GET A7 on the replica: %q", got)
	}
}

// TestReplicationPromotedSiblingContinues: after a replica is promoted
// (REPLICAOF NO ONE, its ID shifted to ID2), its former sibling switches to
// it with a partial resync, and writes made right after the promotion reach
// it.
func TestReplicationPromotedSiblingContinues(t *testing.T) {
	ms := startReplServer(t)
	r1s, r2s := startReplServer(t), startReplServer(t)
	m, r1, r2 := dialTest(t, ms), dialTest(t, r1s), dialTest(t, r2s)
	replicaOf(t, r1, ms)
	replicaOf(t, r2, ms)
	for i := range 100 {
		m.do("INCR", "n"+strconv.Itoa(i%10))
	}
	waitInSync(t, m, r1)
	waitInSync(t, m, r2)
	r1.do("REPLICAOF", "NO", "ONE")
	r1.do("INCR", "after-promotion")
	replicaOf(t, r2, r1s)
	waitInSync(t, r1, r2)
	if got := infoField(t, r1, "stats", "sync_partial_ok"); got != "1" {
		t.Fatalf("sync_partial_ok on the promoted replica %q (sync_full %q)", got, infoField(t, r1, "stats", "sync_full"))
	}
	if a, b := digest(t, r1), digest(t, r2); a != b {
		t.Fatalf("digest new master %q replica %q", a, b)
	}
	if got := r2.do("GET", "after-promotion"); got != "$1\r\n1\r\n" {
		t.Fatalf("write after the promotion: %q", got)
	}
}

// TestReplicationExpiryOnlyByMastersDel: on a replica a logically expired
// key is hidden from reads but stays until the master's DEL.
func TestReplicationExpiryOnlyByMastersDel(t *testing.T) {
	ms := startReplServer(t, "--enable-debug-command", "yes")
	rs := startReplServer(t)
	m, r := dialTest(t, ms), dialTest(t, rs)
	m.do("DEBUG", "SET-ACTIVE-EXPIRE", "0") // the master expires only lazily here
	replicaOf(t, r, ms)
	waitInSync(t, m, r)
	m.do("SET", "k", "v", "PX", "50")
	waitInSync(t, m, r)
	time.Sleep(100 * time.Millisecond)
	if got := r.do("GET", "k"); got != "$-1\r\n" {
		t.Fatalf("GET of an expired key on the replica: %q", got)
	}
	if got := r.do("EXISTS", "k"); got != ":0\r\n" {
		t.Fatalf("EXISTS: %q", got)
	}
	time.Sleep(300 * time.Millisecond) // several cron ticks: no active expiry on a replica
	if got := r.do("DBSIZE"); got != ":1\r\n" {
		t.Fatalf("DBSIZE before the master's DEL: %q", got)
	}
	// DEBUG OBJECT and MEMORY USAGE find it as Redis's dictFind does
	// (replication-4.tcl "Replication of an expired key does not delete
	// the expired key").
	if got := r.do("DEBUG", "OBJECT", "k"); !strings.HasPrefix(got, "+Value at:") {
		t.Fatalf("DEBUG OBJECT of the kept key: %q", got)
	}
	if got := r.do("MEMORY", "USAGE", "k"); !strings.HasPrefix(got, ":") {
		t.Fatalf("MEMORY USAGE of the kept key: %q", got)
	}
	m.do("GET", "k") // the master expires it and propagates DEL
	waitInSync(t, m, r)
	if got := r.do("DBSIZE"); got != ":0\r\n" {
		t.Fatalf("DBSIZE after the master's DEL: %q", got)
	}
}

// TestReplicationFromRedisMaster: a shoal replica of a redis-server master
// loads its RDB payload and applies its stream; both report the same DEBUG
// DIGEST.
func TestReplicationFromRedisMaster(t *testing.T) {
	redisAddr := startRealRedis(t, "--repl-diskless-sync-delay", "0", "--enable-debug-command", "yes")
	m := dialTestAddr(t, redisAddr)
	m.do("SET", "s", "v")
	m.do("SET", "n", "12345")
	m.do("SET", "ttl", "v", "EX", "1000")
	m.do("RPUSH", "l", "a", "b", "c")
	m.do("HSET", "h", "f1", "v1", "f2", "v2")
	m.do("SADD", "set", "x", "1", "2")
	m.do("ZADD", "z", "1.5", "a", "-3", "b")
	m.do("XADD", "st", "1-1", "f", "v")
	m.do("SELECT", "5")
	m.do("SET", "in5", "v")
	rs := startReplServer(t)
	r := dialTest(t, rs)
	i := strings.LastIndexByte(redisAddr, ':')
	if got := r.do("REPLICAOF", redisAddr[:i], redisAddr[i+1:]); got != "+OK\r\n" {
		t.Fatalf("REPLICAOF: %q", got)
	}
	waitInSync(t, m, r)
	if a, b := digest(t, m), digest(t, r); a != b {
		t.Fatalf("after the RDB: digest redis %q shoal %q", a, b)
	}
	// The stream: writes, the expiry forms, a transaction.
	m.do("SELECT", "0")
	m.do("INCR", "n")
	m.do("EXPIRE", "s", "500")
	m.do("SPOP", "set")
	m.do("MULTI")
	m.do("LPUSH", "l", "z")
	m.do("HINCRBYFLOAT", "h", "f3", "1.5")
	m.do("EXEC")
	waitInSync(t, m, r)
	if a, b := digest(t, m), digest(t, r); a != b {
		t.Fatalf("after the stream: digest redis %q shoal %q", a, b)
	}
}

// TestReplicationMasterAuth: a replica authenticates with masterauth (and
// masteruser) before PSYNC; without it the link stays down.
func TestReplicationMasterAuth(t *testing.T) {
	ms := startReplServer(t, "--requirepass", "s3cret")
	m := dialTest(t, ms)
	m.do("AUTH", "s3cret")
	m.do("SET", "k", "v")
	rs := startReplServer(t)
	r := dialTest(t, rs)
	replicaOf(t, r, ms)
	time.Sleep(300 * time.Millisecond)
	if got := infoField(t, r, "replication", "master_link_status"); got != "down" {
		t.Fatalf("link without masterauth: %q", got)
	}
	r.do("CONFIG", "SET", "masterauth", "s3cret")
	r.do("CONFIG", "SET", "masteruser", "default")
	waitInSync(t, m, r)
	if got := r.do("GET", "k"); got != "$1\r\nv\r\n" {
		t.Fatalf("GET on the replica: %q", got)
	}
}

// TestReplicationWaitBlocksLikeABlockingCommand: WAIT with no timeout is a
// blocked client (INFO blocked_clients, CLIENT UNBLOCK answers the acks
// counted), and a WAIT whose client went away is forgotten.
func TestReplicationWaitBlocksLikeABlockingCommand(t *testing.T) {
	ms := startReplServer(t)
	m, w := dialTest(t, ms), dialTest(t, ms)
	m.do("SET", "k", "v")
	id := strings.TrimSpace(strings.TrimPrefix(w.do("CLIENT", "ID"), ":"))
	w.send("WAIT", "1", "0")
	replWaitFor(t, 5*time.Second, "WAIT to block", func() bool {
		return infoField(t, m, "clients", "blocked_clients") == "1"
	})
	if got := m.do("CLIENT", "UNBLOCK", id); got != ":1\r\n" {
		t.Fatalf("CLIENT UNBLOCK: %q", got)
	}
	if got := w.read(); got != ":0\r\n" {
		t.Fatalf("unblocked WAIT: %q", got)
	}
	gone := dialTest(t, ms)
	gone.send("WAIT", "1", "0")
	replWaitFor(t, 5*time.Second, "WAIT to block", func() bool {
		return infoField(t, m, "clients", "blocked_clients") == "1"
	})
	_ = gone.c.Close()
	replWaitFor(t, 5*time.Second, "the disconnected WAIT to be forgotten", func() bool {
		return infoField(t, m, "clients", "blocked_clients") == "0"
	})
}

// TestExecJudgedByQueuedWrites: min-replicas-to-write set after a write was
// queued refuses the EXEC as Redis does (EXECABORT with the reason, the
// transaction discarded, nothing run); a read-only transaction still runs.
func TestExecJudgedByQueuedWrites(t *testing.T) {
	realAddr := startRealRedis(t)
	s := startReplServer(t)
	for _, pair := range [][2]*testConn{{dialTest(t, s), dialTest(t, s)}, {dialTestAddr(t, realAddr), dialTestAddr(t, realAddr)}} {
		c, admin := pair[0], pair[1]
		require.Equal(t, "+OK\r\n", c.do("set", "xx", "1"))
		c.do("multi")
		c.do("incr", "xx")
		admin.do("config", "set", "min-replicas-to-write", "2")
		require.Equal(t, "-EXECABORT Transaction discarded because of: NOREPLICAS Not enough good replicas to write.\r\n", c.do("exec"))
		require.Equal(t, "-ERR EXEC without MULTI\r\n", c.do("exec"))
		require.Equal(t, "$1\r\n1\r\n", c.do("get", "xx"))
		c.do("multi")
		c.do("get", "xx")
		require.Equal(t, "*1\r\n$1\r\n1\r\n", c.do("exec"))
		admin.do("config", "set", "min-replicas-to-write", "0")
	}
}

// TestReplicaAOFHoldsTheFullSync: a replica with appendonly yes rewrites
// its AOF after loading its master's data (Redis's restartAOFAfterSYNC), so
// a server started from the replica's AOF directory alone has the master's
// data, plus what the stream brought after the sync.
func TestReplicaAOFHoldsTheFullSync(t *testing.T) {
	master := startReplServer(t)
	mc := dialTest(t, master)
	var cmds [][]string
	for i := 0; i < 300; i++ {
		cmds = append(cmds, []string{"SET", fmt.Sprintf("k%d", i), "v"}, []string{"RPUSH", "l", fmt.Sprint(i)})
	}
	require.Empty(t, pipelineDo(t, mc, cmds))
	dir := t.TempDir()
	replica := startReplServer(t, "--dir", dir, "--appendonly", "yes")
	rc := dialTest(t, replica)
	replicaOf(t, rc, master)
	waitInSync(t, mc, rc)
	replWaitFor(t, 15*time.Second, "the AOF rewrite after the sync", func() bool {
		return infoField(t, rc, "persistence", "aof_rewrite_in_progress") == "0" &&
			infoField(t, rc, "persistence", "aof_rewrite_scheduled") == "0" &&
			infoField(t, rc, "persistence", "aof_enabled") == "1"
	})
	require.Equal(t, ":301\r\n", mc.do("RPUSH", "l", "after"))
	waitInSync(t, mc, rc)
	want := digest(t, mc)
	replica.Shutdown()

	fromAOF := startReplServer(t, "--dir", dir, "--appendonly", "yes")
	require.Equal(t, want, digest(t, dialTest(t, fromAOF)))
}

// TestReplicaSavesWhileItsMasterStreams: DEBUG RELOAD and SHUTDOWN hold
// the gate and save a file recording the replication offset, while the
// master link keeps applying; the master link may sit
// on its apply lock waiting for that gate, and each save still answers
// (it hung when a save insisted on the apply lock).
func TestReplicaSavesWhileItsMasterStreams(t *testing.T) {
	master := startReplServer(t)
	replica := startReplServer(t, "--save", "3600 1")
	mc, rc := dialTest(t, master), dialTest(t, replica)
	replicaOf(t, rc, master)
	waitInSync(t, mc, rc)
	stop := make(chan struct{})
	done := writeRounds(dialTest(t, master), [][]string{{"INCR", "n"}}, 200000, stop) // node/cmd_dump_save_test.go
	for round := 0; round < 20; round++ {
		require.Equal(t, "+OK\r\n", rc.do("DEBUG", "RELOAD"))
	}
	// SHUTDOWN saves with the gate held too: the connection closes.
	rc.send("SHUTDOWN")
	_ = rc.c.SetReadDeadline(time.Now().Add(testIOTimeout))
	_, err := rc.r.ReadByte()
	require.Error(t, err, "SHUTDOWN closes the connection")
	close(stop)
	require.NoError(t, <-done)
}
