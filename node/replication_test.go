package node

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

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
	ms := startTestServer(t)
	rs := startTestServer(t)
	m, r := dialTest(t, ms), dialTest(t, rs)
	// Data written before the replica attaches travels as slot images.
	m.do("SET", "s", "v")
	m.do("RPUSH", "l", "a", "b", "c")
	m.do("HSET", "h", "f1", "v1", "f2", "v2")
	m.do("SADD", "set", "x", "y", "1")
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
	if a, b := m.do("DEBUG", "DIGEST"), r.do("DEBUG", "DIGEST"); a != b {
		t.Fatalf("digest master %q replica %q", a, b)
	}
	if got := r.do("SET", "x", "y"); got != "-READONLY You can't write against a read only replica.\r\n" {
		t.Fatalf("write on replica: %q", got)
	}
	if got := r.do("PTTL", "ttl"); got == ":-1\r\n" || got == ":-2\r\n" {
		t.Fatalf("ttl lost: %q", got)
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
	ms := startTestServer(t)
	rs := startTestServer(t)
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
		if a, b := m.do("DEBUG", "DIGEST"), r.do("DEBUG", "DIGEST"); a != b {
			t.Fatalf("round %d: digest master %q replica %q (dbsize %q / %q)", round, a, b, m.do("DBSIZE"), r.do("DBSIZE"))
		}
	}
	if got := infoField(t, m, "stats", "sync_full"); got == "" {
		t.Fatalf("sync_full missing")
	}
}
