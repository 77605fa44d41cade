package node

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/internal/buildinfo"
)

// Behaviour of the server commands that a comparison with Redis cannot
// check byte for byte: real INFO figures, effects on other connections,
// timing, shutdown.

// infoFields returns INFO's name → value pairs.
func infoFields(t *testing.T, tc *testConn, sections ...string) map[string]string {
	t.Helper()
	text := bulkBody(t, tc.do(append([]string{"INFO"}, sections...)...))
	m := map[string]string{}
	for _, line := range strings.Split(text, "\r\n") {
		if name, val, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
			m[name] = val
		}
	}
	return m
}

func infoInt(t *testing.T, fields map[string]string, name string) int64 {
	t.Helper()
	v, ok := fields[name]
	if !ok {
		t.Fatalf("INFO has no %s", name)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("INFO %s = %q: %v", name, v, err)
	}
	return n
}

// expectClosed checks that the server closed tc's connection.
func expectClosed(t *testing.T, tc *testConn) {
	t.Helper()
	_ = tc.c.SetReadDeadline(time.Now().Add(testIOTimeout))
	b, err := tc.r.ReadByte()
	if err == nil {
		t.Fatalf("connection still open: read %q", b)
	}
	if !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("expected EOF, got %v", err)
	}
}

func TestInfoRealFigures(t *testing.T) {
	s := startTestServer(t, "--enable-debug-command", "yes")
	a, b := dialTest(t, s), dialTest(t, s)
	b.do("PING")
	f := infoFields(t, a)
	if got := infoInt(t, f, "connected_clients"); got != 2 {
		t.Errorf("connected_clients = %d, want 2", got)
	}
	if got := infoInt(t, f, "process_id"); got != int64(os.Getpid()) {
		t.Errorf("process_id = %d, want %d", got, os.Getpid())
	}
	if got := infoInt(t, f, "tcp_port"); got != s.listeningPort() || got == 0 {
		t.Errorf("tcp_port = %d, want %d", got, s.listeningPort())
	}
	if f["run_id"] != s.runID || len(f["master_replid"]) != 40 || f["master_replid"] == s.runID {
		t.Errorf("run_id %q master_replid %q (server %q)", f["run_id"], f["master_replid"], s.runID)
	}
	if f["mem_allocator"] != "go" || infoInt(t, f, "used_memory") <= 0 || infoInt(t, f, "used_memory_rss") <= 0 {
		t.Errorf("memory figures: allocator %q used %q rss %q", f["mem_allocator"], f["used_memory"], f["used_memory_rss"])
	}
	if f["role"] != "master" || f["connected_slaves"] != "0" || f["cluster_enabled"] != "0" {
		t.Errorf("role %q slaves %q cluster %q", f["role"], f["connected_slaves"], f["cluster_enabled"])
	}
	if !regexp.MustCompile(`^\d+\.\d{6}$`).MatchString(f["used_cpu_user"]) {
		t.Errorf("used_cpu_user = %q", f["used_cpu_user"])
	}
	if f["shoal_version"] != buildinfo.Version {
		t.Errorf("shoal_version = %q", f["shoal_version"])
	}
	before := infoInt(t, f, "total_commands_processed")
	for range 5 {
		a.do("PING")
	}
	if got := infoInt(t, infoFields(t, a), "total_commands_processed"); got != before+6 {
		t.Errorf("total_commands_processed = %d, want %d", got, before+6)
	}

	// Keyspace lines for non-empty databases only.
	if ks := bulkBody(t, a.do("INFO", "keyspace")); ks != "# Keyspace\r\n" {
		t.Errorf("empty keyspace section = %q", ks)
	}
	a.do("DEBUG", "POPULATE", "7")
	a.do("SELECT", "2")
	a.do("DEBUG", "POPULATE", "3")
	if ks := bulkBody(t, a.do("INFO", "keyspace")); ks != "# Keyspace\r\ndb0:keys=7,expires=0,avg_ttl=0\r\ndb2:keys=3,expires=0,avg_ttl=0\r\n" {
		t.Errorf("keyspace section = %q", ks)
	}

	// Errors and commands are counted, and RESETSTAT clears them.
	a.do("CONFIG", "GET")
	es := bulkBody(t, a.do("INFO", "errorstats"))
	if es != "# Errorstats\r\nerrorstat_ERR:count=1\r\n" {
		t.Errorf("errorstats = %q", es)
	}
	cs := bulkBody(t, a.do("INFO", "commandstats"))
	if !strings.Contains(cs, "cmdstat_config|get:calls=0,usec=0,usec_per_call=0.00,rejected_calls=1,failed_calls=0\r\n") ||
		!strings.Contains(cs, "cmdstat_ping:calls=6,") {
		t.Errorf("commandstats = %q", cs)
	}
	if got := a.do("CONFIG", "RESETSTAT"); got != "+OK\r\n" {
		t.Fatalf("CONFIG RESETSTAT = %q", got)
	}
	f = infoFields(t, a, "everything")
	if _, ok := f["errorstat_ERR"]; ok || f["total_error_replies"] != "0" {
		t.Errorf("after RESETSTAT: errorstat_ERR %q total_error_replies %q", f["errorstat_ERR"], f["total_error_replies"])
	}
	if !strings.HasPrefix(f["cmdstat_config|resetstat"], "calls=1,") || f["cmdstat_ping"] != "" || f["keyspace_hits"] != "0" {
		t.Errorf("after RESETSTAT: %q ping %q hits %q", f["cmdstat_config|resetstat"], f["cmdstat_ping"], f["keyspace_hits"])
	}
	if got := infoInt(t, f, "total_commands_processed"); got != 1 {
		t.Errorf("after RESETSTAT total_commands_processed = %d, want 1 (the INFO itself)", got)
	}
}

func TestInfoSectionSelection(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	titles := func(args ...string) []string {
		got, _ := parseInfo(t, bulkBody(t, tc.do(append([]string{"INFO"}, args...)...)))
		return got
	}
	def := []string{"Server", "Clients", "Memory", "Persistence", "Stats", "Replication", "CPU",
		"Modules", "Errorstats", "Cluster", "Keyspace"}
	all := []string{"Server", "Clients", "Memory", "Persistence", "Stats", "Replication", "CPU",
		"Modules", "Commandstats", "Errorstats", "Latencystats", "Cluster", "Keyspace"}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{nil, def},
		{[]string{"default"}, def},
		{[]string{"DEFAULT", "cpu"}, def},
		{[]string{"all"}, all},
		{[]string{"everything"}, all},
		{[]string{"cpu", "all"}, all},
		{[]string{"commandSTATS"}, []string{"Commandstats"}},
		{[]string{"keyspace", "server", "keyspace"}, []string{"Server", "Keyspace"}},
		{[]string{"module_list"}, []string{"Modules"}},
		{[]string{"latencystats"}, []string{"Latencystats"}},
		{[]string{"nosuch"}, nil},
	} {
		if got := titles(c.args...); strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("INFO %q sections = %q, want %q", c.args, got, c.want)
		}
	}
	tc.do("HELLO", "3")
	if got := tc.do("INFO", "cluster"); got != "=34\r\ntxt:# Cluster\r\ncluster_enabled:0\r\n\r\n" {
		t.Errorf("RESP3 INFO cluster = %q", got)
	}
}

func TestInfoInstantaneousOps(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	tc.do("INFO", "stats") // first sample
	deadline := time.Now().Add(250 * time.Millisecond)
	n := 0
	for time.Now().Before(deadline) && n < 100000 {
		tc.do("PING")
		n++
	}
	ops := infoInt(t, infoFields(t, tc, "stats"), "instantaneous_ops_per_sec")
	if ops <= 0 {
		t.Errorf("instantaneous_ops_per_sec = %d after %d PINGs in 250ms", ops, n)
	}
	s.sampleOps() // the cron hook is safe to call at any time
}

func TestClientListAndKill(t *testing.T) {
	s := startTestServer(t)
	a, b := dialTest(t, s), dialTest(t, s)
	if got := a.do("CLIENT", "SETNAME", "alpha"); got != "+OK\r\n" {
		t.Fatalf("SETNAME = %q", got)
	}
	idA := strings.TrimSuffix(strings.TrimPrefix(a.do("CLIENT", "ID"), ":"), "\r\n")
	idB := strings.TrimSuffix(strings.TrimPrefix(b.do("CLIENT", "ID"), ":"), "\r\n")
	list := bulkBody(t, a.do("CLIENT", "LIST"))
	lines := strings.Split(strings.TrimSuffix(list, "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "id="+idA+" ") || !strings.Contains(lines[0], " name=alpha ") ||
		!strings.HasPrefix(lines[1], "id="+idB+" ") || !strings.Contains(lines[0], " cmd=client|list ") {
		t.Errorf("CLIENT LIST = %q", list)
	}
	if got := bulkBody(t, a.do("CLIENT", "LIST", "ID", idB, "12345")); !strings.HasPrefix(got, "id="+idB+" ") || strings.Count(got, "\n") != 1 {
		t.Errorf("CLIENT LIST ID = %q", got)
	}
	if got := bulkBody(t, a.do("CLIENT", "LIST", "TYPE", "normal")); strings.Count(got, "\n") != 2 {
		t.Errorf("CLIENT LIST TYPE normal = %q", got)
	}
	if got := bulkBody(t, a.do("CLIENT", "INFO")); !strings.HasPrefix(got, "id="+idA+" ") || !strings.HasSuffix(got, "\n") {
		t.Errorf("CLIENT INFO = %q", got)
	}
	a.do("CLIENT", "NO-EVICT", "on")
	if got := bulkBody(t, a.do("CLIENT", "INFO")); !strings.Contains(got, " flags=e ") {
		t.Errorf("CLIENT INFO after NO-EVICT on = %q", got)
	}

	// Killing another client closes its connection and unlists it at once.
	if got := a.do("CLIENT", "KILL", "ID", idB); got != ":1\r\n" {
		t.Fatalf("CLIENT KILL ID = %q", got)
	}
	expectClosed(t, b)
	if got := bulkBody(t, a.do("CLIENT", "LIST")); strings.Contains(got, "id="+idB+" ") {
		t.Errorf("killed client still listed: %q", got)
	}
	if got := a.do("CLIENT", "KILL", "ID", idA); got != ":0\r\n" {
		t.Errorf("CLIENT KILL own ID (SKIPME yes) = %q", got)
	}

	// The old form can kill the caller: the reply comes, then the close.
	c := dialTest(t, s)
	addr := c.c.LocalAddr().String()
	if got := c.do("CLIENT", "KILL", addr); got != "+OK\r\n" {
		t.Fatalf("CLIENT KILL addr = %q", got)
	}
	expectClosed(t, c)

	// New form with SKIPME no.
	d := dialTest(t, s)
	if got := d.do("CLIENT", "KILL", "LADDR", s.Addr().String(), "SKIPME", "no", "ADDR", d.c.LocalAddr().String()); got != ":1\r\n" {
		t.Fatalf("CLIENT KILL LADDR .. SKIPME no = %q", got)
	}
	expectClosed(t, d)
}

func TestClientReplyModes(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	tc.send("CLIENT", "REPLY", "OFF")
	tc.send("PING")
	tc.send("ECHO", "lost")
	if got := tc.do("CLIENT", "REPLY", "ON"); got != "+OK\r\n" {
		t.Fatalf("first reply after REPLY OFF = %q", got)
	}
	tc.send("CLIENT", "REPLY", "SKIP")
	tc.send("ECHO", "skipped")
	if got := tc.do("ECHO", "seen"); got != "$4\r\nseen\r\n" {
		t.Fatalf("reply after SKIP = %q", got)
	}
}

func TestClientPause(t *testing.T) {
	s := startTestServer(t)
	a, b := dialTest(t, s), dialTest(t, s)
	if !srvImplemented(s, "set") {
		t.Skip("SET is not implemented yet")
	}
	if got := a.do("CLIENT", "PAUSE", "300", "WRITE"); got != "+OK\r\n" {
		t.Fatalf("CLIENT PAUSE = %q", got)
	}
	start := time.Now()
	if got := b.do("PING"); got != "+PONG\r\n" || time.Since(start) > 200*time.Millisecond {
		t.Errorf("PING during a WRITE pause = %q after %v", got, time.Since(start))
	}
	start = time.Now()
	if got := b.do("SET", "k", "v"); got != "+OK\r\n" || time.Since(start) < 200*time.Millisecond {
		t.Errorf("SET during a WRITE pause = %q after %v", got, time.Since(start))
	}
	a.do("CLIENT", "PAUSE", "10000", "ALL")
	b.send("SET", "k", "v2")
	time.Sleep(50 * time.Millisecond)
	start = time.Now()
	if got := a.do("CLIENT", "UNPAUSE"); got != "+OK\r\n" {
		t.Fatalf("CLIENT UNPAUSE = %q", got)
	}
	if got := b.read(); got != "+OK\r\n" || time.Since(start) > 5*time.Second {
		t.Errorf("SET after UNPAUSE = %q after %v", got, time.Since(start))
	}
}

func TestCommandCommand(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	count := len(s.table.all)
	if got := tc.do("COMMAND", "COUNT"); got != ":"+strconv.Itoa(count)+"\r\n" {
		t.Errorf("COMMAND COUNT = %q, want %d", got, count)
	}
	if got := tc.do("COMMAND"); !strings.HasPrefix(got, "*"+strconv.Itoa(count)+"\r\n*10\r\n") {
		t.Errorf("COMMAND starts %q", got[:min(len(got), 40)])
	}
	list := decodeFlatArray(t, tc.do("COMMAND", "LIST"))
	has := map[string]bool{}
	for _, n := range list {
		has[n] = true
	}
	if !has["config"] || !has["config|get"] || !has["info"] || has["script|debug"] || !has["acl|setuser"] {
		t.Errorf("COMMAND LIST = %q", list)
	}
	// Unimplemented commands do not exist for clients.
	if got := tc.do("COMMAND", "INFO", "script|debug"); got != "*1\r\n$-1\r\n" {
		t.Errorf("COMMAND INFO of unimplemented commands = %q", got)
	}
	admin := decodeFlatArray(t, tc.do("COMMAND", "LIST", "FILTERBY", "ACLCAT", "Admin"))
	if !strings.Contains(strings.Join(admin, " "), "config|get") || strings.Contains(strings.Join(admin, " "), "ping") {
		t.Errorf("COMMAND LIST FILTERBY ACLCAT admin = %q", admin)
	}
	if got := decodeFlatArray(t, tc.do("COMMAND", "LIST", "FILTERBY", "PATTERN", "CONFIG|RE*")); strings.Join(got, " ") != "config|resetstat config|rewrite" {
		t.Errorf("COMMAND LIST FILTERBY PATTERN = %q", got)
	}
	docs := tc.do("COMMAND", "DOCS", "config", "lolwut")
	for _, want := range []string{"$6\r\nconfig\r\n", "$11\r\nsubcommands\r\n", "$10\r\nconfig|get\r\n", "$6\r\nlolwut\r\n"} {
		if !strings.Contains(docs, want) {
			t.Errorf("COMMAND DOCS lacks %q: %q", want, docs)
		}
	}
	if strings.Contains(docs, "complexity\r\n$0") {
		t.Errorf("COMMAND DOCS shows an empty complexity: %q", docs)
	}
	tc.do("HELLO", "3")
	if got := tc.do("COMMAND", "INFO", "lastsave"); got != "*1\r\n*10\r\n$8\r\nlastsave\r\n:1\r\n~3\r\n+loading\r\n+stale\r\n+fast\r\n:0\r\n:0\r\n:0\r\n~3\r\n+@admin\r\n+@fast\r\n+@dangerous\r\n~1\r\n$23\r\nnondeterministic_output\r\n~0\r\n~0\r\n" {
		t.Errorf("RESP3 COMMAND INFO lastsave = %q", got)
	}
}

func TestDebugCommands(t *testing.T) {
	s := startTestServer(t, "--enable-debug-command", "yes")
	tc := dialTest(t, s)
	start := time.Now()
	if got := tc.do("DEBUG", "SLEEP", "0.2"); got != "+OK\r\n" || time.Since(start) < 200*time.Millisecond {
		t.Errorf("DEBUG SLEEP 0.2 = %q after %v", got, time.Since(start))
	}
	tc.do("DEBUG", "SET-ACTIVE-EXPIRE", "0")
	if s.activeExpire.Load() {
		t.Error("active expiry still on")
	}
	tc.do("DEBUG", "SET-ACTIVE-EXPIRE", "1")
	if !s.activeExpire.Load() {
		t.Error("active expiry still off")
	}
	tc.do("DEBUG", "POPULATE", "3", "obj", "50")
	obj := tc.do("DEBUG", "OBJECT", "obj:1")
	if !regexp.MustCompile(`^\+Value at:0x[0-9a-f]+ refcount:1 encoding:raw serializedlength:51 lru:\d+ lru_seconds_idle:\d+\r\n$`).MatchString(obj) {
		t.Errorf("DEBUG OBJECT = %q", obj)
	}
	tc.do("DEBUG", "POPULATE", "1", "small")
	if got := tc.do("DEBUG", "OBJECT", "small:0"); !strings.Contains(got, " encoding:embstr serializedlength:8 ") {
		t.Errorf("DEBUG OBJECT small = %q", got)
	}
	if got := tc.do("DEBUG", "SDSLEN", "small:0"); got != "+key_sds_len:7, key_sds_avail:0, key_zmalloc: 8, val_sds_len:7, val_sds_avail:0, val_zmalloc: 8\r\n" {
		t.Errorf("DEBUG SDSLEN = %q", got)
	}
	if got := tc.do("DEBUG", "STRINGMATCH-TEST"); got != "+Apparently Redis did not crash: test passed\r\n" {
		t.Errorf("DEBUG STRINGMATCH-TEST = %q", got)
	}
	for _, sub := range []string{"GOROUTINES", "HEAP"} {
		if got := tc.do("DEBUG", sub); got != "+OK\r\n" {
			t.Errorf("DEBUG %s = %q", sub, got)
		}
	}
	before := infoFields(t, tc, "replication")["master_replid"]
	tc.do("DEBUG", "CHANGE-REPL-ID")
	if after := infoFields(t, tc, "replication")["master_replid"]; after == before || len(after) != 40 {
		t.Errorf("master_replid %q → %q", before, after)
	}
	// The digest does not depend on the order keys were written.
	d1 := tc.do("DEBUG", "DIGEST")
	s2 := startTestServer(t, "--enable-debug-command", "yes")
	tc2 := dialTest(t, s2)
	tc2.do("DEBUG", "POPULATE", "1", "small")
	tc2.do("DEBUG", "POPULATE", "3", "obj", "50")
	if d2 := tc2.do("DEBUG", "DIGEST"); d1 != d2 || len(d1) != 43 {
		t.Errorf("digests %q and %q", d1, d2)
	}
}

func TestSlowlogAndMemory(t *testing.T) {
	s := startTestServer(t, "--enable-debug-command", "yes")
	tc := dialTest(t, s)
	tc.do("CONFIG", "SET", "slowlog-log-slower-than", "0")
	tc.do("CLIENT", "SETNAME", "slowpoke")
	tc.do("ECHO", "hello")
	if got := tc.do("SLOWLOG", "LEN"); got == ":0\r\n" {
		t.Fatalf("SLOWLOG LEN = %q", got)
	}
	entry := tc.do("SLOWLOG", "GET", "2") // SLOWLOG LEN, then ECHO
	if !regexp.MustCompile(`^\*2\r\n\*6\r\n:\d+\r\n:\d+\r\n:\d+\r\n\*2\r\n\$7\r\nSLOWLOG\r\n\$3\r\nLEN\r\n\$\d+\r\n127\.0\.0\.1:\d+\r\n\$8\r\nslowpoke\r\n` +
		`\*6\r\n:\d+\r\n:\d+\r\n:\d+\r\n\*2\r\n\$4\r\nECHO\r\n\$5\r\nhello\r\n\$\d+\r\n127\.0\.0\.1:\d+\r\n\$8\r\nslowpoke\r\n$`).MatchString(entry) {
		t.Errorf("SLOWLOG GET 2 = %q", entry)
	}
	// Secrets set by CONFIG SET are redacted, as in Redis.
	tc.do("CONFIG", "SET", "maxmemory-samples", "5", "cluster-bus-secret", "bus-secret-0123456789")
	if entry := tc.do("SLOWLOG", "GET", "1"); !strings.Contains(entry, "$17\r\nmaxmemory-samples\r\n$1\r\n5\r\n$18\r\ncluster-bus-secret\r\n$10\r\n(redacted)\r\n") {
		t.Errorf("SLOWLOG GET 1 after CONFIG SET of a secret = %q", entry)
	}
	tc.do("CONFIG", "RESETSTAT")
	if got := tc.do("SLOWLOG", "LEN"); got == ":0\r\n" {
		t.Error("CONFIG RESETSTAT emptied the slow log")
	}
	tc.do("CONFIG", "SET", "slowlog-log-slower-than", "10000")
	tc.do("SLOWLOG", "RESET")
	if got := tc.do("SLOWLOG", "LEN"); got != ":0\r\n" {
		t.Errorf("SLOWLOG LEN after RESET = %q", got)
	}

	tc.do("DEBUG", "POPULATE", "1", "m", "100")
	usage, err := strconv.Atoi(strings.Trim(tc.do("MEMORY", "USAGE", "m:0"), ":\r\n"))
	if err != nil || usage < 100+3+48 || usage > 400 {
		t.Errorf("MEMORY USAGE = %d (%v)", usage, err)
	}
	stats := tc.do("MEMORY", "STATS")
	for _, want := range []string{"$14\r\npeak.allocated\r\n", "$4\r\ndb.0\r\n", "$10\r\nkeys.count\r\n:1\r\n", "$19\r\nfragmentation.bytes\r\n"} {
		if !strings.Contains(stats, want) {
			t.Errorf("MEMORY STATS lacks %q", want)
		}
	}
	if !strings.HasPrefix(stats, "*56\r\n") { // 27 + 1 database, flattened
		t.Errorf("MEMORY STATS starts %q", stats[:10])
	}
	if got := bulkBody(t, tc.do("MEMORY", "DOCTOR")); !strings.HasPrefix(got, "Hi Sam") && !strings.HasPrefix(got, "Sam,") {
		t.Errorf("MEMORY DOCTOR = %q", got)
	}
	if got := bulkBody(t, tc.do("MEMORY", "MALLOC-STATS")); !strings.Contains(got, "/memory/classes/heap/objects:bytes: ") {
		t.Errorf("MEMORY MALLOC-STATS = %q", got)
	}
	if got := tc.do("LASTSAVE"); got != ":"+strconv.FormatInt(s.start.Unix(), 10)+"\r\n" {
		t.Errorf("LASTSAVE = %q", got)
	}
	now := time.Now().Unix()
	tm := tc.do("TIME")
	parts := strings.Split(tm, "\r\n")
	if len(parts) < 5 || parts[0] != "*2" {
		t.Fatalf("TIME = %q", tm)
	}
	if sec, _ := strconv.ParseInt(parts[2], 10, 64); sec < now-1 || sec > now+1 {
		t.Errorf("TIME = %q, now %d", tm, now)
	}
}

func TestShutdownCommand(t *testing.T) {
	// A save that cannot happen (the directory is gone) aborts SHUTDOWN
	// SAVE with Redis's error; the server keeps serving.
	dir := t.TempDir()
	gone := filepath.Join(dir, "gone")
	if err := os.Mkdir(gone, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load([]string{"--port", "0", "--bind", "127.0.0.1", "--dir", gone})
	if err != nil {
		t.Fatal(err)
	}
	hooked := make(chan struct{}, 1)
	s, err := New(cfg, Options{OnShutdown: func() { hooked <- struct{}{} }})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	tc := dialTest(t, s)
	if got := tc.do("SHUTDOWN", "SAVE"); got != "-ERR Errors trying to SHUTDOWN. Check logs.\r\n" {
		t.Errorf("SHUTDOWN SAVE with an unwritable dir = %q", got)
	}
	// The default save points make a plain SHUTDOWN save too: it fails the same way.
	if got := tc.do("SHUTDOWN"); got != "-ERR Errors trying to SHUTDOWN. Check logs.\r\n" {
		t.Errorf("SHUTDOWN with save points and an unwritable dir = %q", got)
	}
	if got := tc.do("PING"); got != "+PONG\r\n" {
		t.Errorf("after the failed SHUTDOWN, PING = %q", got)
	}
	if got := tc.do("SHUTDOWN", "ABORT"); got != "-ERR No shutdown in progress.\r\n" {
		t.Errorf("SHUTDOWN ABORT = %q", got)
	}
	tc.send("SHUTDOWN", "NOSAVE")
	expectClosed(t, tc)
	select {
	case <-hooked:
	case <-time.After(testIOTimeout):
		t.Fatal("the shutdown hook was not called")
	}

	// Without a hook, SHUTDOWN stops the server itself.
	s2 := startTestServer(t)
	tc2 := dialTest(t, s2)
	tc2.send("SHUTDOWN")
	expectClosed(t, tc2)
	select {
	case <-s2.Done():
	case <-time.After(testIOTimeout):
		t.Fatal("the server did not stop")
	}
}

func TestConfigSetMaxclientsChecksFileLimit(t *testing.T) {
	s := startTestServer(t)
	s.registerServerConfigHooks()
	s.registerServerConfigHooks() // idempotent
	tc := dialTest(t, s)
	if got := tc.do("CONFIG", "SET", "maxclients", "100"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET maxclients 100 = %q", got)
	}
	got := tc.do("CONFIG", "SET", "maxclients", "4000000000")
	if got == "+OK\r\n" {
		t.Skip("the open-files limit is unlimited here")
	}
	const want = "-ERR CONFIG SET failed (possibly related to argument 'maxclients') - The operating system is not able to handle the specified number of clients, try with "
	if !strings.HasPrefix(got, want) {
		t.Errorf("CONFIG SET maxclients 4000000000 = %q", got)
	}
	if got := tc.do("CONFIG", "GET", "maxclients"); got != "*2\r\n$10\r\nmaxclients\r\n$3\r\n100\r\n" {
		t.Errorf("maxclients after the failed SET = %q", got)
	}
}

func TestConfigSetPortAndBind(t *testing.T) {
	s := startTestServer(t)
	s.registerServerConfigHooks()
	tc := dialTest(t, s)
	oldAddr := s.Addr().String()

	// A port in use: CONFIG SET fails and nothing moves.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)
	if got := tc.do("CONFIG", "SET", "port", busyPort, "slowlog-max-len", "12345"); got != "-ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port. Check server logs.\r\n" {
		t.Errorf("CONFIG SET port <busy> = %q", got)
	}
	if got := tc.do("CONFIG", "GET", "slowlog-max-len"); got != "*2\r\n$15\r\nslowlog-max-len\r\n$3\r\n128\r\n" {
		t.Errorf("slowlog-max-len not rolled back: %q", got)
	}
	dialTestAddr(t, oldAddr).do("PING")

	// A free port: new connections go there and the old socket is closed.
	// (The connections accepted by the listener Listen opened are dropped
	// until Listen wraps it with newRetirableListener; later moves keep
	// them, which is checked with the second move.)
	port1, port2 := freeTCPPort(t), freeTCPPort(t)
	tc.send("CONFIG", "SET", "port", port1)
	_ = tc.c.SetReadDeadline(time.Now().Add(testIOTimeout))
	_, _ = tc.r.ReadString('\n') // +OK, or EOF: see above
	tc = dialTestAddr(t, "127.0.0.1:"+port1)
	if got := tc.do("PING"); got != "+PONG\r\n" {
		t.Errorf("PING on the new port = %q", got)
	}
	if c, err := net.DialTimeout("tcp", oldAddr, time.Second); err == nil {
		c.Close()
		t.Errorf("the old port %s still accepts connections", oldAddr)
	}
	if got := tc.do("CONFIG", "SET", "port", port2); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET port <free> = %q", got)
	}
	if got := tc.do("PING"); got != "+PONG\r\n" {
		t.Errorf("PING on a connection of the retired listener = %q", got)
	}
	if got := dialTestAddr(t, "127.0.0.1:"+port2).do("PING"); got != "+PONG\r\n" {
		t.Errorf("PING on the second new port = %q", got)
	}
	if c, err := net.DialTimeout("tcp", "127.0.0.1:"+port1, time.Second); err == nil {
		c.Close()
		t.Errorf("the retired port %s still accepts connections", port1)
	}
	if got := tc.do("CONFIG", "SET", "bind", "999.999.999.999"); got != "-ERR CONFIG SET failed (possibly related to argument 'bind') - Failed to bind to specified addresses.\r\n" {
		t.Errorf("CONFIG SET bind <invalid> = %q", got)
	}
	if got := dialTestAddr(t, "127.0.0.1:"+port2).do("PING"); got != "+PONG\r\n" {
		t.Errorf("PING after the failed bind = %q", got)
	}
	// bind "" closes every listener; the server still serves its clients.
	if got := tc.do("CONFIG", "SET", "bind", ""); got != "+OK\r\n" {
		t.Errorf("CONFIG SET bind \"\" = %q", got)
	}
	if c, err := net.DialTimeout("tcp", "127.0.0.1:"+port2, time.Second); err == nil {
		c.Close()
		t.Errorf("port %s still accepts connections after bind \"\"", port2)
	}
	if got := tc.do("CONFIG", "SET", "bind", "127.0.0.1"); got != "+OK\r\n" {
		t.Errorf("CONFIG SET bind 127.0.0.1 = %q", got)
	}
	if got := dialTestAddr(t, "127.0.0.1:"+port2).do("PING"); got != "+PONG\r\n" {
		t.Errorf("PING after bind 127.0.0.1 = %q", got)
	}
}

// freeTCPPort returns a loopback port that was free a moment ago.
func freeTCPPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}
