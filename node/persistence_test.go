package node

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/shoal-db/shoal/config"
)

// newSaveTestServer builds a node that is not listening, so its cron does
// not run and the test drives saveCron with its own timeline.
func newSaveTestServer(t *testing.T, dir string, opts ...string) *Server {
	t.Helper()
	args := append([]string{"--port", "0", "--bind", "127.0.0.1", "--dir", dir}, opts...)
	cfg, err := config.Load(args)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

// waitBackgroundSave waits (bounded) until no background save runs.
func waitBackgroundSave(t *testing.T, s *Server) {
	t.Helper()
	deadline := time.Now().Add(testIOTimeout)
	for s.rdbSave.bgRunning.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the background save did not finish")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSavePointTimeline drives serverCron's save-point rule with a fake
// clock: `save 1 100` fires once 100 changes are counted and more than one
// second passed since the last save; a failed save is retried only after
// the 5 s retry delay.
func TestSavePointTimeline(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := newSaveTestServer(t, dir, "--save", "1 100")
	base := time.Unix(s.lastSaveTime(), 0)

	s.dirty.add(0, 99)
	s.saveCron(base.Add(5 * time.Second))
	if s.rdbSave.statSaves.Load() != 0 {
		t.Fatal("99 changes fired the 100-change point")
	}
	s.dirty.add(0, 1)
	s.saveCron(base.Add(time.Second)) // not MORE than one second
	if s.rdbSave.statSaves.Load() != 0 {
		t.Fatal("the point fired after exactly 1 s (Redis needs more)")
	}
	s.saveCron(base.Add(2 * time.Second))
	waitBackgroundSave(t, s)
	if got := s.rdbSave.statSaves.Load(); got != 1 {
		t.Fatalf("rdb_saves = %d after the point was reached, want 1", got)
	}
	if got := s.changesSinceSave(); got != 0 {
		t.Fatalf("rdb_changes_since_last_save = %d after the save", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "dump.rdb")); err != nil {
		t.Fatalf("no dump.rdb: %v", err)
	}

	// A save that fails (the directory is gone) is retried only after the
	// retry delay, even though the point is still reached.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	s.dirty.add(0, 100)
	now := time.Now()
	s.saveCron(now.Add(3 * time.Second))
	waitBackgroundSave(t, s)
	if !s.rdbSave.lastFailed.Load() || s.rdbSave.statSaves.Load() != 2 {
		t.Fatalf("failed save: lastFailed=%v saves=%d", s.rdbSave.lastFailed.Load(), s.rdbSave.statSaves.Load())
	}
	try := s.rdbSave.lastBgsaveTry.Load()
	s.saveCron(time.Unix(try+bgsaveRetryDelay, 0))
	if got := s.rdbSave.statSaves.Load(); got != 2 {
		t.Fatalf("retried within the retry delay (rdb_saves %d)", got)
	}
	s.saveCron(time.Unix(try+bgsaveRetryDelay+1, 0))
	waitBackgroundSave(t, s)
	if got := s.rdbSave.statSaves.Load(); got != 3 {
		t.Fatalf("not retried after the retry delay (rdb_saves %d)", got)
	}

	// save "" disables the points.
	if err := s.cfg.Set("save", ""); err != nil {
		t.Fatal(err)
	}
	s.saveCron(time.Unix(try+100, 0))
	if got := s.rdbSave.statSaves.Load(); got != 3 {
		t.Fatalf(`save "" still fired a save (rdb_saves %d)`, got)
	}
}

// TestSavePointFiresFromCron: a listening node with `save 1 100` saves by
// itself once 100 writes are counted, and INFO persistence and LASTSAVE
// say so.
func TestSavePointFiresFromCron(t *testing.T) {
	dir := t.TempDir()
	s := startTestServer(t, "--save", "1 100", "--dir", dir)
	tc := dialTest(t, s)
	before := infoFields(t, tc, "persistence")
	if before["rdb_saves"] != "0" || before["rdb_last_bgsave_time_sec"] != "-1" {
		t.Fatalf("fresh node: %v", before)
	}
	for i := range 100 {
		tc.do("SET", "k"+strconv.Itoa(i), "v")
	}
	deadline := time.Now().Add(15 * time.Second)
	var f map[string]string
	for {
		f = infoFields(t, tc, "persistence")
		if f["rdb_saves"] == "1" && f["rdb_bgsave_in_progress"] == "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the save point did not fire: %v", f)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if f["rdb_changes_since_last_save"] != "0" || f["rdb_last_bgsave_status"] != "ok" || f["rdb_last_bgsave_time_sec"] == "-1" {
		t.Fatalf("after the save: %v", f)
	}
	if got, want := tc.do("LASTSAVE"), ":"+f["rdb_last_save_time"]+"\r\n"; got != want {
		t.Fatalf("LASTSAVE %q, INFO says %q", got, want)
	}
	if got := tc.do("DBSIZE"); got != ":100\r\n" {
		t.Fatalf("DBSIZE %q", got)
	}
}

// TestShutdownWaitsForLaggingReplica: a replica that never acknowledges
// keeps SHUTDOWN waiting (writes paused); SHUTDOWN ABORT ends the wait
// with Redis's error to the waiting client; with shutdown-timeout 1 the
// next SHUTDOWN exits after the timeout, and SHUTDOWN NOW at once.
func TestShutdownWaitsForLaggingReplica(t *testing.T) {
	ms := startTestServer(t, "--shutdown-timeout", "1")
	m := dialTest(t, ms)
	attachSilentReplica(t, ms, m)
	if ms.replicasInSync() {
		t.Fatal("the silent replica is in sync")
	}

	if got := infoField(t, m, "server", "shutdown_in_milliseconds"); got != "" {
		t.Fatalf("shutdown_in_milliseconds %q before any shutdown", got)
	}
	waiter := dialTest(t, ms)
	waiter.send("SHUTDOWN")
	// INFO tells how long the shutdown goes on waiting (the suites wait
	// for it to be positive).
	replWaitFor(t, 5*time.Second, "the shutdown to wait", func() bool {
		return infoField(t, m, "server", "shutdown_in_milliseconds") != ""
	})
	if left, err := strconv.Atoi(infoField(t, m, "server", "shutdown_in_milliseconds")); err != nil || left > 1000 {
		t.Fatalf("shutdown_in_milliseconds %d (%v), want at most shutdown-timeout", left, err)
	}
	// The waiting client is blocked; the replica is no connected client
	// (Redis counts clients minus replicas).
	if got := infoField(t, m, "clients", "blocked_clients"); got != "1" {
		t.Fatalf("blocked_clients %q while SHUTDOWN waits", got)
	}
	if got := infoField(t, m, "clients", "connected_clients"); got != "2" {
		t.Fatalf("connected_clients %q, want 2 (the replica not counted)", got)
	}
	if got := m.do("SHUTDOWN", "ABORT"); got != "+OK\r\n" {
		t.Fatalf("SHUTDOWN ABORT: %q", got)
	}
	if got := waiter.read(); got != "-ERR Errors trying to SHUTDOWN. Check logs.\r\n" {
		t.Fatalf("the aborted SHUTDOWN answered %q", got)
	}
	if got := infoField(t, m, "server", "shutdown_in_milliseconds"); got != "" {
		t.Fatalf("shutdown_in_milliseconds %q after the abort", got)
	}
	if got := m.do("SET", "k", "w"); got != "+OK\r\n" {
		t.Fatalf("writes after the abort: %q", got)
	}

	start := time.Now()
	waiter.send("SHUTDOWN")
	replWaitFor(t, 5*time.Second, "the shutdown to wait", ms.ShutdownPending)
	m.send("SET", "k", "paused") // parked by the pause: must not keep the server from stopping
	expectClosed(t, waiter)
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Fatalf("SHUTDOWN did not wait for the replica (%v)", d)
	}
	select {
	case <-ms.Done():
	case <-time.After(testIOTimeout):
		t.Fatal("the server did not stop")
	}

	// NOW does not wait.
	ns := startTestServer(t, "--shutdown-timeout", "30")
	n := dialTest(t, ns)
	nf := dialTest(t, ns)
	nf.do("REPLCONF", "listening-port", "1")
	nf.send("PSYNC", "?", "-1")
	replWaitFor(t, 5*time.Second, "the replica link", func() bool {
		return infoField(t, n, "replication", "connected_slaves") == "1"
	})
	n.do("SET", "k", "v")
	start = time.Now()
	n.send("SHUTDOWN", "NOW")
	expectClosed(t, n)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("SHUTDOWN NOW waited %v", d)
	}
}

// TestFailedShutdownKeepsClientPause: a SHUTDOWN whose save fails does not
// end a CLIENT PAUSE it did not start.
func TestFailedShutdownKeepsClientPause(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := startTestServer(t, "--dir", dir)
	tc := dialTest(t, s)
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if got := tc.do("CLIENT", "PAUSE", "60000", "WRITE"); got != "+OK\r\n" {
		t.Fatalf("CLIENT PAUSE: %q", got)
	}
	if got := tc.do("SHUTDOWN", "SAVE"); got != "-ERR Errors trying to SHUTDOWN. Check logs.\r\n" {
		t.Fatalf("SHUTDOWN SAVE: %q", got)
	}
	if !s.pause.paused() {
		t.Fatal("the failed SHUTDOWN ended the client's pause")
	}
	tc.do("CLIENT", "UNPAUSE")
}

// TestShutdownRefusedWhileWritingInitialAOF: while the rewrite that turns
// the AOF on runs, the AOF holds nothing yet: SHUTDOWN fails (the dataset
// would be lost) unless FORCE, as Redis's finishShutdown.
func TestShutdownRefusedWhileWritingInitialAOF(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	tc.do("SET", "k", "v")
	if got := tc.do("CONFIG", "SET", "rdb-key-save-delay", "30000000"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET rdb-key-save-delay: %q", got)
	}
	if got := tc.do("CONFIG", "SET", "appendonly", "yes"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET appendonly: %q", got)
	}
	replWaitFor(t, 5*time.Second, "the initial rewrite", func() bool {
		return infoField(t, tc, "persistence", "aof_rewrite_in_progress") == "1"
	})
	if got := tc.do("SHUTDOWN", "NOSAVE"); got != "-ERR Errors trying to SHUTDOWN. Check logs.\r\n" {
		t.Fatalf("SHUTDOWN while writing the initial AOF: %q", got)
	}
	if got := tc.do("SET", "k", "w"); got != "+OK\r\n" {
		t.Fatalf("the server after the refused SHUTDOWN: %q", got)
	}
	tc.send("SHUTDOWN", "NOSAVE", "FORCE")
	expectClosed(t, tc)
	select {
	case <-s.Done():
	case <-time.After(testIOTimeout):
		t.Fatal("SHUTDOWN FORCE did not stop the server")
	}
}

// TestShutdownWaitingForReplicasLetsTheGateClose: a SHUTDOWN waiting for a
// replica is blocked, not running, as in Redis: a keyless script (which
// runs with every other client stopped) runs while it waits, as does the
// instant an AOF rewrite starts; before, both waited for the shutdown's
// timeout, and with them the replica's REPLCONF ACK the shutdown waited
// for (tcl integration/shutdown "waits for replica then fails").
func TestShutdownWaitingForReplicasLetsTheGateClose(t *testing.T) {
	ms := startTestServer(t, "--shutdown-timeout", "300")
	m := dialTest(t, ms)
	attachSilentReplica(t, ms, m)
	first, second := dialTest(t, ms), dialTest(t, ms)
	first.send("SHUTDOWN")
	replWaitFor(t, 5*time.Second, "the first shutdown to wait", ms.ShutdownPending)
	second.send("SHUTDOWN") // waits for the first one's outcome
	replWaitFor(t, 5*time.Second, "both shutdowns blocked", func() bool {
		return infoField(t, m, "clients", "blocked_clients") == "2"
	})
	// EVAL_RO: the shutdown pauses writes, and EVAL (may-replicate) with them.
	if got := m.do("EVAL_RO", "return redis.call('get', 'k')", "0"); got != "$1\r\nv\r\n" {
		t.Fatalf("a keyless script while SHUTDOWN waits: %q", got)
	}
	if got := m.do("SHUTDOWN", "ABORT"); got != "+OK\r\n" {
		t.Fatalf("SHUTDOWN ABORT: %q", got)
	}
	for _, w := range []*testConn{first, second} {
		if got := w.read(); got != "-ERR Errors trying to SHUTDOWN. Check logs.\r\n" {
			t.Fatalf("the aborted SHUTDOWN answered %q", got)
		}
	}
}

// attachSilentReplica connects a replica to ms that reads nothing and never
// acknowledges, then writes k through m, so the replica lags from then on.
func attachSilentReplica(t *testing.T, ms *Server, m *testConn) {
	t.Helper()
	fake := dialTest(t, ms)
	if got := fake.do("REPLCONF", "listening-port", "1"); got != "+OK\r\n" {
		t.Fatalf("REPLCONF: %q", got)
	}
	fake.send("PSYNC", "?", "-1")
	replWaitFor(t, 5*time.Second, "the replica link", func() bool {
		return infoField(t, m, "replication", "connected_slaves") == "1"
	})
	m.do("SET", "k", "v")
}
