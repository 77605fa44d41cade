package node

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shoal-db/shoal/rdb"
	"github.com/shoal-db/shoal/store"
)

// The master side of a full sync with a real RDB (replication_fullsync.go)
// and the replica's load of it.

// rawReplica is a hand-driven replica connection: the handshake, then the
// RDB transfer read as bytes.
type rawReplica struct {
	t  *testing.T
	tc *testConn
	rd *bufio.Reader
}

func dialRawReplica(t *testing.T, s *Server, replconf ...[]string) *rawReplica {
	tc := dialTest(t, s)
	for _, args := range replconf {
		if got := tc.do(args...); got != "+OK\r\n" {
			t.Fatalf("%q: %q", args, got)
		}
	}
	return &rawReplica{t: t, tc: tc, rd: bufio.NewReader(tc.c)}
}

// line reads one line (without CRLF), skipping keep-alive newlines.
func (r *rawReplica) line() string {
	r.t.Helper()
	for {
		_ = r.tc.c.SetReadDeadline(time.Now().Add(testIOTimeout))
		l, err := r.rd.ReadString('\n')
		if err != nil {
			r.t.Fatalf("reading a line: %v", err)
		}
		if l = strings.TrimRight(l, "\r\n"); l != "" {
			return l
		}
	}
}

// rdbFile reads the transfer after its "$" line: its length, or up to its
// EOF mark.
func (r *rawReplica) rdbFile(header string) []byte {
	r.t.Helper()
	_ = r.tc.c.SetReadDeadline(time.Now().Add(testIOTimeout))
	if mark, ok := strings.CutPrefix(header, "$EOF:"); ok {
		var got []byte
		buf := make([]byte, 64<<10)
		for !bytes.HasSuffix(got, []byte(mark)) {
			n, err := r.rd.Read(buf)
			if err != nil {
				r.t.Fatalf("reading the RDB: %v", err)
			}
			got = append(got, buf[:n]...)
		}
		return got[:len(got)-len(mark)]
	}
	n, err := strconv.Atoi(strings.TrimPrefix(header, "$"))
	if err != nil {
		r.t.Fatalf("RDB header %q", header)
	}
	got := make([]byte, n)
	if _, err := io.ReadFull(r.rd, got); err != nil {
		r.t.Fatalf("reading the RDB: %v", err)
	}
	return got
}

// loadRDBKeys loads an RDB file and returns its keys (db 0) and the
// function libraries' count and aux fields.
func loadRDBKeys(t *testing.T, file []byte) (keys map[string]bool, libs int, aux map[string]string) {
	t.Helper()
	keys, aux = map[string]bool{}, map[string]string{}
	err := rdb.LoadFileWith(file, rdb.DefaultLimits(), rdb.FileHandlers{
		Key:      func(k *rdb.LoadedKey) error { keys[string(k.Key)] = true; return nil },
		Function: func([]byte) error { libs++; return nil },
		Aux:      func(n, v []byte) error { aux[string(n)] = string(v); return nil },
	})
	if err != nil {
		t.Fatalf("the RDB does not load: %v", err)
	}
	return keys, libs, aux
}

// With capa eof the RDB comes with an EOF mark and its aux fields name the
// sync's position; the stream queued since S is sent only after the
// replica's first REPLCONF ACK, and starts exactly at S.
func TestFullSyncEOFMarkStreamStartsAtACK(t *testing.T) {
	ms := startReplServer(t)
	m := dialTest(t, ms)
	m.do("SET", "before", "1")
	m.do("FUNCTION", "LOAD", "#!lua name=lib1\nredis.register_function('f1', function() return 1 end)")
	rr := dialRawReplica(t, ms, []string{"REPLCONF", "capa", "eof"}, []string{"REPLCONF", "capa", "psync2"})
	rr.tc.send("PSYNC", "?", "-1")
	full := strings.Fields(rr.line())
	if len(full) != 3 || full[0] != "+FULLRESYNC" {
		t.Fatalf("PSYNC reply %q", full)
	}
	header := rr.line()
	if !strings.HasPrefix(header, "$EOF:") || len(header) != 5+40 {
		t.Fatalf("RDB header %q, want $EOF:<40 chars>", header)
	}
	keys, libs, aux := loadRDBKeys(t, rr.rdbFile(header))
	if !keys["before"] || libs != 1 {
		t.Fatalf("RDB keys %v, %d libraries", keys, libs)
	}
	if aux["repl-id"] != full[1] || aux["repl-offset"] != full[2] || aux["repl-stream-db"] != "0" {
		t.Fatalf("aux %v, +FULLRESYNC %q", aux, full)
	}
	replWaitFor(t, 5*time.Second, "the replica online after the transfer", func() bool {
		return strings.Contains(infoField(t, m, "replication", "slave0"), "state=online")
	})
	m.do("SET", "after", "1")
	_ = rr.tc.c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, err := rr.rd.Read(make([]byte, 64)); err == nil {
		t.Fatalf("%d stream bytes before the replica's ACK", n)
	}
	rr.tc.send("REPLCONF", "ACK", full[2])
	want := "*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nSET\r\n$5\r\nafter\r\n$1\r\n1\r\n"
	got := make([]byte, len(want))
	_ = rr.tc.c.SetReadDeadline(time.Now().Add(testIOTimeout))
	if _, err := io.ReadFull(rr.rd, got); err != nil || string(got) != want {
		t.Fatalf("stream after the ACK %q (%v), want %q", got, err, want)
	}
	off, _ := strconv.Atoi(full[2])
	if mo := infoField(t, m, "replication", "master_repl_offset"); mo != strconv.Itoa(off+len(want)) {
		t.Fatalf("master_repl_offset %s, want S %d + %d", mo, off, len(want))
	}
}

// repl-diskless-sync-delay holds a diskless sync (INFO: wait_bgsave) until
// the delay passes or repl-diskless-sync-max-replicas replicas wait; the
// replicas of one batch get the same snapshot position.
func TestFullSyncDisklessDelayAndMaxReplicas(t *testing.T) {
	ms := startReplServer(t, "--repl-diskless-sync-delay", "60", "--repl-diskless-sync-max-replicas", "2")
	m := dialTest(t, ms)
	m.do("SET", "k", "v")
	eof := []string{"REPLCONF", "capa", "eof"}
	a := dialRawReplica(t, ms, eof)
	a.tc.send("PSYNC", "?", "-1")
	time.Sleep(1500 * time.Millisecond) // a keep-alive newline is due
	if got := infoField(t, m, "replication", "slave0"); !strings.Contains(got, "state=wait_bgsave") {
		t.Fatalf("INFO slave0 %q while the delay runs", got)
	}
	_ = a.tc.c.SetReadDeadline(time.Now().Add(time.Second))
	if b, err := a.rd.ReadByte(); err != nil || b != '\n' {
		t.Fatalf("keep-alive: %q %v", b, err)
	}
	b := dialRawReplica(t, ms, eof)
	b.tc.send("PSYNC", "?", "-1")
	fa, fb := a.line(), b.line() // the second replica starts the batch
	if fa != fb || !strings.HasPrefix(fa, "+FULLRESYNC") {
		t.Fatalf("+FULLRESYNC %q and %q", fa, fb)
	}
	for _, r := range []*rawReplica{a, b} {
		if keys, _, _ := loadRDBKeys(t, r.rdbFile(r.line())); !keys["k"] {
			t.Fatal("the RDB lacks k")
		}
	}
}

// Without capa eof (or with repl-diskless-sync no) the RDB is sent with
// its length from a temporary file, which is removed; REPLCONF rdb-only 1
// gets the file and is disconnected; rdb-filter-only functions gets only
// the libraries.
func TestFullSyncDiskBasedRDBOnlyAndFilter(t *testing.T) {
	ms := startReplServer(t)
	m := dialTest(t, ms)
	for i := range 100 {
		m.do("SET", "k"+strconv.Itoa(i), "v")
	}
	m.do("FUNCTION", "LOAD", "#!lua name=lib1\nredis.register_function('f1', function() return 1 end)")

	rr := dialRawReplica(t, ms, []string{"REPLCONF", "rdb-only", "1"})
	rr.tc.send("PSYNC", "?", "-1")
	if full := rr.line(); !strings.HasPrefix(full, "+FULLRESYNC") {
		t.Fatalf("PSYNC reply %q", full)
	}
	header := rr.line()
	if !strings.HasPrefix(header, "$") || strings.HasPrefix(header, "$EOF:") {
		t.Fatalf("RDB header %q, want $<len>", header)
	}
	if keys, libs, _ := loadRDBKeys(t, rr.rdbFile(header)); len(keys) != 100 || libs != 1 {
		t.Fatalf("%d keys, %d libraries", len(keys), libs)
	}
	_ = rr.tc.c.SetReadDeadline(time.Now().Add(testIOTimeout))
	if _, err := rr.rd.ReadByte(); err != io.EOF {
		t.Fatalf("an rdb-only replica stays connected: %v", err)
	}
	replWaitFor(t, 5*time.Second, "the temporary sync file removed", func() bool {
		return infoField(t, m, "replication", "connected_slaves") == "0" && !tempSyncFileIn(t, ms)
	})

	fr := dialRawReplica(t, ms, []string{"REPLCONF", "capa", "eof"}, []string{"REPLCONF", "rdb-filter-only", "functions"})
	fr.tc.send("PSYNC", "?", "-1")
	fr.line()
	if keys, libs, _ := loadRDBKeys(t, fr.rdbFile(fr.line())); len(keys) != 0 || libs != 1 {
		t.Fatalf("filtered RDB: %d keys, %d libraries", len(keys), libs)
	}
	bad := dialTest(t, ms)
	bad.do("REPLCONF", "rdb-filter-only", "")
	if got := bad.do("SYNC"); got != "-ERR Filtered replica requires EOF capability\r\n" {
		t.Fatalf("filtered SYNC without capa eof: %q", got)
	}
	if got := bad.do("REPLCONF", "rdb-filter-only", "keys"); got != "-ERR Unsupported rdb-filter-only option: keys\r\n" {
		t.Fatalf("REPLCONF rdb-filter-only keys: %q", got)
	}
	if got := bad.do("REPLCONF", "rdb-only", "2"); got != "-ERR value is out of range, value must between 0 and 1\r\n" {
		t.Fatalf("REPLCONF rdb-only 2: %q", got)
	}
}

// tempSyncFileIn reports whether s's dir holds a disk-based sync's file.
func tempSyncFileIn(t *testing.T, s *Server) bool {
	t.Helper()
	entries, err := os.ReadDir(s.cfg.String("dir"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "temp-repl-") {
			return true
		}
	}
	return false
}

// Shoal to shoal with the RDB sent with its length (repl-diskless-sync
// no), under an INCR-heavy load: the replica ends exactly as its master.
func TestFullSyncDiskBasedExactUnderIncrLoad(t *testing.T) {
	ms := startReplServer(t, "--repl-diskless-sync", "no")
	rs := startReplServer(t)
	m, r := dialTest(t, ms), dialTest(t, rs)
	ctx := context.Background()
	mc := redis.NewClient(&redis.Options{Addr: ms.Addr().String(), PoolSize: 4})
	defer mc.Close()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 18))
			for range 8000 {
				if err := mc.Incr(ctx, "n"+strconv.Itoa(rng.IntN(200))).Err(); err != nil {
					t.Errorf("INCR: %v", err)
					return
				}
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	replicaOf(t, r, ms)
	wg.Wait()
	waitInSync(t, m, r)
	if a, b := digest(t, m), digest(t, r); a != b {
		t.Fatalf("digest master %q replica %q", a, b)
	}
}

// startChain starts a master (holding a=1), its replica and a sub-replica
// of the replica, all in sync, and returns the master's server and a
// connection to each.
func startChain(t *testing.T) (ms *Server, m, r, sub *testConn) {
	t.Helper()
	ms, rs, ss := startReplServer(t), startReplServer(t), startReplServer(t)
	m, r, sub = dialTest(t, ms), dialTest(t, rs), dialTest(t, ss)
	m.do("SET", "a", "1")
	replicaOf(t, r, ms)
	waitInSync(t, m, r)
	replicaOf(t, sub, rs)
	waitInSync(t, r, sub)
	return ms, m, r, sub
}

// When a replica full-syncs again, its sub-replicas are disconnected and
// sync again from it (Redis's replicationAttachToNewMaster): they end with
// its data, replication ID and offset.
func TestFullSyncChainedSubReplicaResyncs(t *testing.T) {
	_, m, r, sub := startChain(t)
	fullBefore := infoField(t, r, "stats", "sync_full")
	// A new history on the master: the replica cannot continue.
	m.do("DEBUG", "CHANGE-REPL-ID")
	m.do("SET", "b", "2")
	m.do("CLIENT", "KILL", "TYPE", "replica")
	replWaitFor(t, 10*time.Second, "the sub-replica synced again from the replica", func() bool {
		return infoField(t, r, "stats", "sync_full") != fullBefore &&
			infoField(t, sub, "replication", "master_link_status") == "up"
	})
	m.do("INCR", "a")
	waitInSync(t, m, r)
	waitInSync(t, r, sub)
	if a, b, c := digest(t, m), digest(t, r), digest(t, sub); a != b || b != c {
		t.Fatalf("digests master %q replica %q sub-replica %q", a, b, c)
	}
	for _, f := range []string{"master_replid", "master_repl_offset"} {
		if a, c := infoField(t, m, "replication", f), infoField(t, sub, "replication", f); a != c {
			t.Fatalf("%s: master %q sub-replica %q", f, a, c)
		}
	}
}

// A full sync whose RDB does not load leaves the replica empty (not half
// loaded) and the link retries.
func TestFullSyncFailedLoadLeavesReplicaEmpty(t *testing.T) {
	ln, r := replicaOfListener(t)
	r.do("CONFIG", "SET", "replica-read-only", "no")
	if got := r.do("SET", "old", "1"); got != "+OK\r\n" { // data the sync must flush
		t.Fatalf("SET on the writable replica: %q", got)
	}
	_, conn := fakeMasterSession(t, ln)
	// A key, then a broken checksum: the key must not stay.
	src := store.New(1, nil, nil).DB(0)
	src.SetString([]byte("half"), []byte("v"), false)
	var b bytes.Buffer
	fw := rdb.NewFileWriter(&b, rdb.Compressed, [2]string{"redis-ver", Version})
	fw.SelectDB(0, 1, 0)
	fw.Entry(src.Find([]byte("half")))
	if err := fw.Finish(); err != nil {
		t.Fatal(err)
	}
	file := b.Bytes()
	file[len(file)-1] ^= 0xff
	stream := "+FULLRESYNC 1111111111111111111111111111111111111111 0\r\n$" + strconv.Itoa(len(file)) + "\r\n" + string(file)
	if _, err := conn.Write([]byte(stream)); err != nil {
		t.Fatal(err)
	}
	_, again := fakeMasterSession(t, ln) // the link retries
	defer again.Close()
	_ = conn.Close()
	if got := r.do("DBSIZE"); got != ":0\r\n" {
		t.Fatalf("DBSIZE after a failed load: %q", got)
	}
}

// A replica restarted from its own RDB file (repl-id, repl-offset and
// repl-stream-db in its aux fields) continues with a partial resync, as
// Redis's loadDataFromDisk (psync2.tcl "Partial resync after restart using
// RDB aux fields").
func TestReplicaRestartedFromRDBContinues(t *testing.T) {
	ms := startReplServer(t)
	m := dialTest(t, ms)
	dir := t.TempDir()
	rs := startReplServer(t, "--dir", dir)
	r := dialTest(t, rs)
	replicaOf(t, r, ms)
	m.do("SELECT", "3")
	m.do("SET", "k", "v")
	waitInSync(t, m, r)
	if got := r.doDisk("SAVE"); got != "+OK\r\n" {
		t.Fatalf("SAVE on the replica: %q", got)
	}
	rs.Shutdown()
	m.do("SET", "k2", "v2") // in db 3: the restarted replica must be there
	full, partial := infoField(t, m, "stats", "sync_full"), infoField(t, m, "stats", "sync_partial_ok")
	host, port, _ := strings.Cut(ms.Addr().String(), ":")
	rs2 := startReplServer(t, "--dir", dir, "--replicaof", host, port)
	r2 := dialTest(t, rs2)
	waitInSync(t, m, r2)
	if got := infoField(t, m, "stats", "sync_full"); got != full {
		t.Fatalf("sync_full %s, was %s: the restarted replica did not continue", got, full)
	}
	if got := infoField(t, m, "stats", "sync_partial_ok"); got == partial {
		t.Fatalf("sync_partial_ok stayed %s", got)
	}
	sameDigest(t, m, r2)
}

// A replica waiting for its RDB gets a newline a second, but none while
// the master is busy (DEBUG SLEEP closes the execution gate, as Redis's
// single thread would not run its replicationCron): replication.tcl "Slave
// is able to detect timeout during handshake".
func TestFullSyncKeepAliveStopsWhileBusy(t *testing.T) {
	ms := startReplServer(t, "--repl-diskless-sync-delay", "60")
	rr := dialRawReplica(t, ms, []string{"REPLCONF", "capa", "eof"})
	rr.tc.send("PSYNC", "?", "-1")
	_ = rr.tc.c.SetReadDeadline(time.Now().Add(3 * time.Second))
	if b, err := rr.rd.ReadByte(); err != nil || b != '\n' {
		t.Fatalf("keep-alive: %q %v", b, err)
	}
	busy := dialTest(t, ms)
	busy.send("DEBUG", "SLEEP", "3")
	time.Sleep(200 * time.Millisecond) // the sleep holds the gate
	_ = rr.tc.c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if b, err := rr.rd.ReadByte(); err == nil {
		t.Fatalf("a keep-alive %q while the master sleeps", b)
	}
	busy.read()
}

// While a replica loads its full sync's RDB it is in the loading state:
// commands without the loading flag get -LOADING and INFO says loading:1
// (replication.tcl's loading checks, which serve clients every 1 KB of
// the load as here); then it serves the data.
func TestFullSyncReplicaLoadsInLoadingState(t *testing.T) {
	ms := startReplServer(t)
	m := dialTest(t, ms)
	m.do("DEBUG", "POPULATE", "2000")
	rs := startReplServer(t, "--key-load-delay", "1000", // 1 ms a key
		"--loading-process-events-interval-bytes", "1024")
	r := dialTest(t, rs)
	replicaOf(t, r, ms)
	replWaitFor(t, 10*time.Second, "the replica loading", func() bool {
		return infoField(t, r, "persistence", "loading") == "1"
	})
	if got := r.do("GET", "key:1"); got != "-LOADING Redis is loading the dataset in memory\r\n" {
		t.Fatalf("GET while loading: %q", got)
	}
	waitInSync(t, m, r)
	if got := r.do("DBSIZE"); got != ":2000\r\n" {
		t.Fatalf("DBSIZE after the load: %q", got)
	}
	sameDigest(t, m, r)
}

// REPLICAOF keeps the sub-replicas (Redis's replicationSetMaster): back on
// the same history they continue without a resync (replication.tcl
// "Discard cache master before loading transferred RDB when full sync").
func TestReplicaOfKeepsSubReplicasOnTheSameHistory(t *testing.T) {
	ms, m, r, sub := startChain(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a master that never answers
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r.do("REPLICAOF", "127.0.0.1", strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	time.Sleep(300 * time.Millisecond)
	partial := infoField(t, m, "stats", "sync_partial_ok")
	replicaOf(t, r, ms)
	waitInSync(t, m, r)
	if got := infoField(t, m, "stats", "sync_partial_ok"); got == partial {
		t.Fatal("the replica did not continue with its master")
	}
	waitInSync(t, r, sub)
	if full, part := infoField(t, r, "stats", "sync_full"), infoField(t, r, "stats", "sync_partial_ok"); full != "1" || part != "0" {
		t.Fatalf("the sub-replica resynced: sync_full %s sync_partial_ok %s", full, part)
	}
}

// While a full sync's snapshot is produced INFO says
// rdb_bgsave_in_progress:1 and the replica is in wait_bgsave, as Redis's
// replication BGSAVE (replication.tcl waits on both).
func TestFullSyncSnapshotShowsAsBgsave(t *testing.T) {
	ms := startReplServer(t, "--rdb-key-save-delay", "100000") // 0.1 s a key
	m := dialTest(t, ms)
	m.do("DEBUG", "POPULATE", "20")
	rr := dialRawReplica(t, ms, []string{"REPLCONF", "capa", "eof"})
	rr.tc.send("PSYNC", "?", "-1")
	replWaitFor(t, 5*time.Second, "the sync's snapshot in progress", func() bool {
		return infoField(t, m, "persistence", "rdb_bgsave_in_progress") == "1" &&
			strings.Contains(infoField(t, m, "replication", "slave0"), "state=wait_bgsave")
	})
	rr.line()
	if keys, _, _ := loadRDBKeys(t, rr.rdbFile(rr.line())); len(keys) != 20 {
		t.Fatalf("%d keys", len(keys))
	}
	replWaitFor(t, 5*time.Second, "the snapshot over", func() bool {
		return infoField(t, m, "persistence", "rdb_bgsave_in_progress") == "0"
	})
}

// A replica's link carries no replies: a command that answers drops the
// replica, a keyspace command is refused first (replication.tcl "replica
// do not write the reply to the replication link"); PSYNC with an offset
// that is not a number is an error, not a full sync.
func TestReplicaLinkCarriesNoReplies(t *testing.T) {
	ms := startReplServer(t)
	m := dialTest(t, ms)
	for _, cmd := range [][]string{{"PING"}, {"GET", "foo"}} {
		rr := dialRawReplica(t, ms)
		rr.tc.send("PSYNC", "?", "-1")
		if got := rr.line(); !strings.HasPrefix(got, "+FULLRESYNC") {
			t.Fatalf("PSYNC: %q", got)
		}
		rr.tc.send(cmd...)
		replWaitFor(t, 5*time.Second, "the replica dropped after "+cmd[0], func() bool {
			return infoField(t, m, "replication", "connected_slaves") == "0"
		})
	}
	if got := m.do("PSYNC", "replicationid", "offset_str"); got != "-ERR value is not an integer or out of range\r\n" {
		t.Fatalf("PSYNC with a bad offset: %q", got)
	}
	if got := m.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING after: %q", got)
	}
}

// With repl-diskless-load swapdb, INFO says async_loading:1 while the full
// sync's RDB arrives, and the old data is served meanwhile; a transfer cut
// short leaves it as it was (tests/cluster 17-diskless-load-swapdb).
func TestFullSyncSwapdbServesOldDataWhileReceiving(t *testing.T) {
	// 20 ms a key, uncompressed: the file leaves in 64 KB writes
	ms := startReplServer(t, "--rdb-key-save-delay", "20000", "--rdbcompression", "no")
	m := dialTest(t, ms)
	m.do("DEBUG", "POPULATE", "300", "key", "4000") // a 6 s transfer of 1.2 MB
	rs := startReplServer(t, "--repl-diskless-load", "swapdb")
	r := dialTest(t, rs)
	r.do("SET", "old", "1")
	if got := infoField(t, r, "persistence", "async_loading"); got != "0" {
		t.Fatalf("async_loading before the sync: %q", got)
	}
	replicaOf(t, r, ms)
	replWaitFor(t, 10*time.Second, "async_loading:1", func() bool {
		return infoField(t, r, "persistence", "async_loading") == "1"
	})
	if got := r.do("GET", "old"); got != "$1\r\n1\r\n" {
		t.Fatalf("GET old while the transfer arrives: %q", got)
	}
	if got := infoField(t, r, "persistence", "loading"); got != "0" {
		t.Fatalf("loading while the transfer arrives: %q", got)
	}
	if got := r.do("REPLICAOF", "NO", "ONE"); got != "+OK\r\n" {
		t.Fatalf("REPLICAOF NO ONE: %q", got)
	}
	replWaitFor(t, 10*time.Second, "async_loading:0", func() bool {
		return infoField(t, r, "persistence", "async_loading") == "0"
	})
	if got := r.do("GET", "old"); got != "$1\r\n1\r\n" {
		t.Fatalf("GET old after the cut transfer: %q", got)
	}
	if got := r.do("DBSIZE"); got != ":1\r\n" {
		t.Fatalf("DBSIZE after the cut transfer: %q", got)
	}
}
