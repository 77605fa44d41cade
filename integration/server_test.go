package integration

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shoal-db/shoal/internal/testharness"
	"github.com/stretchr/testify/require"
)

// runBinary runs shoal-server to completion (bounded) and returns its exit
// code and combined output.
func runBinary(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	bin := BuildServer(t) // outside the deadline: a build on a loaded machine takes minutes
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("shoal-server %q did not exit within 30s; output:\n%s", args, out)
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running shoal-server: %v", err)
	}
	return code, string(out)
}

func TestVersionAndHelp(t *testing.T) {
	code, out := runBinary(t, t.TempDir(), "--version")
	require.Equal(t, 0, code)
	require.Contains(t, out, "redis_version=7.0.15")
	require.Regexp(t, `^shoal-server v=\S+ redis_version=7\.0\.15 sha=[0-9a-f]{8}:[01] malloc=go bits=\d+ build=[0-9a-f]+ go=\S+\n$`, out)
	code, out = runBinary(t, t.TempDir(), "--help")
	require.Equal(t, 1, code, "redis-server --help exits 1")
	require.Contains(t, out, "Usage: ./shoal-server")
}

// TestMakeBuildStampsCommit: the Makefile's build sets the commit, so
// --version and INFO server name it (they said 00000000).
func TestMakeBuildStampsCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("a full build")
	}
	root, err := ModuleRoot()
	require.NoError(t, err)
	head, err := exec.Command("git", "-C", root, "rev-parse", "--short=8", "HEAD").Output()
	if err != nil {
		t.Skipf("no git work tree: %v", err)
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	sha := strings.TrimSpace(string(head))[:8]
	bin := filepath.Join(t.TempDir(), "shoal-server")
	out, err := exec.Command("make", "-s", "-C", root, "build", "BIN="+bin).CombinedOutput()
	require.NoError(t, err, "%s", out)
	version, err := exec.Command(bin, "--version").Output()
	require.NoError(t, err)
	require.Contains(t, string(version), " sha="+sha+":")

	s := StartServer(t) // the harness's binary (a plain go build), restarted as make's
	s.Bin = bin
	s.Restart()
	got, err := RedisCLI(t, s, "INFO", "server")
	require.NoError(t, err)
	require.Regexp(t, `redis_git_sha1:`+sha+`\r?\n`, got)
	require.Regexp(t, `redis_git_dirty:[01]\r?\nredis_build_id:[0-9a-f]+\r?\n`, got)
}

func TestBadConfigExitsWithRedisMessage(t *testing.T) {
	dir := t.TempDir()
	code, out := runBinary(t, dir, "--port", "0", "--no-such-directive", "x")
	require.Equal(t, 1, code)
	require.Contains(t, out, "*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***")
	require.Contains(t, out, ">>> 'no-such-directive \"x\"'")
	require.Contains(t, out, "Bad directive or wrong number of arguments")

	conf := filepath.Join(dir, "bad.conf")
	require.NoError(t, os.WriteFile(conf, []byte("port 0\nmaxclients notanumber\n"), 0o644))
	code, out = runBinary(t, dir, conf)
	require.Equal(t, 1, code)
	require.Contains(t, out, "Reading the configuration file, at line 2")
	require.Contains(t, out, ">>> 'maxclients notanumber'")
}

func TestBusyPortExits1(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	code, out := runBinary(t, t.TempDir(), "--port", strconv.Itoa(port), "--bind", "127.0.0.1")
	require.Equal(t, 1, code)
	require.Contains(t, out, fmt.Sprintf("ERROR\tFailed listening on port %d (TCP), aborting.", port), "a fatal abort is logged at ERROR")
}

// TestClusterPortTooHighExits1: with cluster-enabled and no cluster-port,
// the bus would need port+10000, so a port above 55535 stops the server
// with Redis's message (nothing is bound: the check comes first).
func TestClusterPortTooHighExits1(t *testing.T) {
	code, out := runBinary(t, t.TempDir(), "--port", "60000", "--bind", "127.0.0.1", "--cluster-enabled", "yes")
	require.Equal(t, 1, code)
	require.Contains(t, out, "ERROR\tRedis port number too high.")
	require.Contains(t, out, "Your Redis port number must be 55535 or less.")
}

// TestSecondNodeOnLockedNodesConfExits1: two processes on one nodes.conf
// would run with the same node ID; as Redis (clusterLockConfig) the second
// finds the file locked, logs why and exits 1, and the first goes on.
func TestSecondNodeOnLockedNodesConfExits1(t *testing.T) {
	first := StartServer(t, "--cluster-enabled", "yes")
	id, err := RedisCLI(t, first, "CLUSTER", "MYID")
	require.NoError(t, err)
	port, err := testharness.FreePort()
	require.NoError(t, err)
	code, out := runBinary(t, first.Dir, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--cluster-enabled", "yes", "--dir", first.Dir)
	require.Equal(t, 1, code, "second node's output:\n%s", out)
	require.Contains(t, out, "ERROR\tSorry, the cluster configuration file "+filepath.Join(first.Dir, "nodes.conf")+
		" is already used by a different Redis Cluster node. Please make sure that different nodes use different cluster configuration files.")
	require.True(t, first.Running())
	again, err := RedisCLI(t, first, "CLUSTER", "MYID")
	require.NoError(t, err)
	require.Equal(t, id, again)
}

func TestSignalsAndShutdownStopCleanly(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		s := StartServer(t)
		require.NoError(t, s.Cmd.Process.Signal(sig))
		waitExit(t, s)
		require.Equal(t, 0, s.Cmd.ProcessState.ExitCode(), "exit code after %v", sig)
		require.Contains(t, s.Log(), "ready to exit, bye bye")
	}
	s := StartServer(t)
	_, _ = RedisCLI(t, s, "SHUTDOWN", "NOSAVE")
	waitExit(t, s)
	require.Equal(t, 0, s.Cmd.ProcessState.ExitCode())
}

func waitExit(t *testing.T, s *Server) {
	t.Helper()
	for i := 0; i < 200 && s.Running(); i++ {
		time.Sleep(25 * time.Millisecond)
	}
	require.False(t, s.Running(), "server still running 5s after being told to stop")
}

func TestDaemonizeWritesPidfile(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	pidfile := filepath.Join(dir, "shoal.pid")
	logfile := filepath.Join(dir, "shoal.log")
	code, _ := runBinary(t, dir, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--daemonize", "yes",
		"--pidfile", pidfile, "--logfile", logfile, "--dir", dir)
	require.Equal(t, 0, code, "the parent returns at once")
	var pid int
	for i := 0; i < 200; i++ {
		if b, err := os.ReadFile(pidfile); err == nil && len(b) > 0 {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	require.NotZero(t, pid, "pidfile never appeared")
	proc, err := os.FindProcess(pid)
	require.NoError(t, err)
	t.Cleanup(func() { _ = proc.Signal(syscall.SIGKILL) })
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var pong string
	for i := 0; i < 100; i++ {
		if pong, err = rdb.Ping(ctx).Result(); err == nil {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	require.Equal(t, "PONG", pong)
	require.NoError(t, proc.Signal(syscall.SIGTERM))
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(pidfile); os.IsNotExist(err) {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	_, err = os.Stat(pidfile)
	require.True(t, os.IsNotExist(err), "pidfile removed at exit")
	logText, _ := os.ReadFile(logfile)
	require.Contains(t, string(logText), "Ready to accept connections")
	require.Contains(t, string(logText), fmt.Sprintf(" PID: %d", pid))
}

// TestGoRedisClient drives a server with go-redis v9 in its default mode
// (HELLO 3, then RESP3), as applications do.
func TestGoRedisClient(t *testing.T) {
	s := StartServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer rdb.Close()

	require.NoError(t, rdb.Set(ctx, "greeting", "hello", 0).Err())
	require.Equal(t, "hello", rdb.Get(ctx, "greeting").Val())
	require.Equal(t, redis.Nil, rdb.Get(ctx, "missing").Err())
	require.EqualValues(t, 11, rdb.IncrBy(ctx, "counter", 11).Val())
	require.InDelta(t, 12.5, rdb.IncrByFloat(ctx, "counter", 1.5).Val(), 1e-9)
	require.True(t, rdb.SetNX(ctx, "once", "1", time.Minute).Val())
	require.False(t, rdb.SetNX(ctx, "once", "2", time.Minute).Val())
	ttl := rdb.TTL(ctx, "once").Val()
	require.True(t, ttl > 58*time.Second && ttl <= time.Minute, "ttl %v", ttl)
	require.NoError(t, rdb.MSet(ctx, "a", "1", "b", "2", "c", "3").Err())
	require.Equal(t, []any{"1", "2", "3", nil}, rdb.MGet(ctx, "a", "b", "c", "d").Val())

	// A pipeline of 1000 commands in one round trip.
	pipe := rdb.Pipeline()
	for i := 0; i < 1000; i++ {
		pipe.Set(ctx, fmt.Sprintf("p:%d", i), i, 0)
	}
	cmds, err := pipe.Exec(ctx)
	require.NoError(t, err)
	require.Len(t, cmds, 1000)

	// SCAN visits every key exactly as KEYS lists them.
	seen := map[string]bool{}
	var cursor uint64
	for i := 0; i < 10000; i++ {
		keys, next, err := rdb.Scan(ctx, cursor, "p:*", 100).Result()
		require.NoError(t, err)
		for _, k := range keys {
			seen[k] = true
		}
		cursor = next
		if cursor == 0 {
			break
		}
	}
	require.Len(t, seen, 1000)
	require.Len(t, rdb.Keys(ctx, "p:*").Val(), 1000)
	require.EqualValues(t, 1000+6, rdb.DBSize(ctx).Val()) // greeting counter once a b c

	// Expiry is observed by clients.
	require.NoError(t, rdb.Set(ctx, "short", "x", 100*time.Millisecond).Err())
	time.Sleep(250 * time.Millisecond)
	require.Equal(t, redis.Nil, rdb.Get(ctx, "short").Err())

	// Errors come back as Redis's texts.
	err = rdb.Incr(ctx, "greeting").Err()
	require.EqualError(t, err, "ERR value is not an integer or out of range")
	err = rdb.Do(ctx, "nosuchcommand", "x").Err()
	require.EqualError(t, err, "ERR unknown command 'nosuchcommand', with args beginning with: 'x' ")

	info := rdb.Info(ctx, "keyspace").Val()
	require.Contains(t, info, "db0:keys=")
	require.NoError(t, rdb.FlushAll(ctx).Err())
	require.EqualValues(t, 0, rdb.DBSize(ctx).Val())
}

// TestRedisCLINonInteractive feeds commands to redis-cli on stdin, the way
// scripts drive it.
func TestRedisCLINonInteractive(t *testing.T) {
	s := StartServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "redis-cli", "-p", strconv.Itoa(s.Port))
	cmd.Stdin = strings.NewReader("set k v\nget k\nappend k w\nstrlen k\nexists k nope\nttl k\nselect 3\ndbsize\n")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	require.Equal(t, "OK\nv\n2\n2\n1\n-1\nOK\n0\n", string(out))
}

// TestCorruptRDBAtStartup: a dump.rdb whose CRC64 footer is wrong (the
// tcl suite's "Server should not start if RDB is corrupted" overwrites it
// with "foobar00") stops the server with exit code 1 after its start-up
// lines — the " PID: <pid>" line the suite waits for and "Server
// initialized" come first — with Redis's words: the same "Wrong RDB
// checksum expected: (…) but got (…). Aborting now." line as redis-server
// for the same file, then "RDB CRC error". A truncated file is a "Short
// read", an unreadable one a "Fatal error loading the DB".
func TestCorruptRDBAtStartup(t *testing.T) {
	s := StartServer(t)
	for i := 0; i < 50; i++ {
		_, err := RedisCLI(t, s, "SET", fmt.Sprintf("key:%d", i), strings.Repeat("v", i))
		require.NoError(t, err)
	}
	out, err := RedisCLI(t, s, "SAVE")
	require.NoError(t, err, out)
	_, _ = RedisCLI(t, s, "SHUTDOWN", "NOSAVE")
	waitExit(t, s)
	good, err := os.ReadFile(filepath.Join(s.Dir, "dump.rdb"))
	require.NoError(t, err)

	run := func(data []byte) (int, string, string) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "dump.rdb"), data, 0o644))
		code, out := runBinary(t, dir, "--port", "0", "--bind", "127.0.0.1", "--dir", dir)
		return code, out, dir
	}
	// The order of the lines: start-up first, then the refusal.
	before := func(out string, first, then string) {
		t.Helper()
		i, j := strings.Index(out, first), strings.Index(out, then)
		require.True(t, i >= 0 && j > i, "%q must come before %q in:\n%s", first, then, out)
	}

	corrupt := append(bytes.Clone(good[:len(good)-8]), "foobar00"...)
	code, out, dir := run(corrupt)
	require.Equal(t, 1, code, out)
	wrong := regexp.MustCompile(`Wrong RDB checksum expected: \([0-9a-f]+\) but got \([0-9a-f]+\)\. Aborting now\.`).FindString(out)
	require.NotEmpty(t, wrong, out)
	require.Regexp(t, `Running mode=standalone, Port: \d+ PID: \d+`, out)
	before(out, " PID: ", "Server initialized")
	before(out, "Server initialized", wrong)
	before(out, wrong, "RDB CRC error")
	require.NotContains(t, out, "Ready to accept connections")
	if redis, err := exec.LookPath("redis-server"); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		require.NoError(t, ln.Close())
		cmd := exec.CommandContext(ctx, redis, "--port", port, "--bind", "127.0.0.1", "--dir", dir)
		rout, _ := cmd.CombinedOutput()
		require.Contains(t, string(rout), wrong, "redis-server logs the same checksum line for the same file")
		require.Contains(t, string(rout), "RDB CRC error")
	}

	code, out, _ = run(good[:len(good)-20])
	require.Equal(t, 1, code, out)
	before(out, "Server initialized", "Short read or OOM loading DB. Unrecoverable error, aborting now.")
	require.Contains(t, out, "Unexpected EOF reading RDB file")

	// An unreadable file (root reads any mode: checked by others only).
	if os.Geteuid() != 0 {
		dir = t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "dump.rdb"), good, 0o000))
		code, out = runBinary(t, dir, "--port", "0", "--bind", "127.0.0.1", "--dir", dir)
		require.Equal(t, 1, code, out)
		require.Contains(t, out, "Fatal error loading the DB: Permission denied. Exiting.")
	}
}
