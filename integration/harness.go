// Package integration holds tests that start real shoal-server processes and
// talk to them with real clients over 127.0.0.1.
//
// The harness builds ./cmd/shoal-server once per test binary (or uses the
// binary named by $SHOAL_SERVER, e.g. SHOAL_SERVER=/usr/bin/redis-server to
// check a test against real Redis), starts servers on free ports in
// per-test temporary directories, and stops them when the test ends.
package integration

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shoal-db/shoal/internal/testharness"
)

const (
	readyLine      = "Ready to accept connections"
	stopTimeout    = 5 * time.Second
	buildTimeout   = 5 * time.Minute
	startAttempts  = 5
	failedLogLines = 50
)

// Waits for a process, stretched by SHOAL_TEST_SLACK on a loaded machine.
var (
	readyTimeout = testharness.Slack(10 * time.Second)
	cliTimeout   = testharness.Slack(10 * time.Second)
)

var (
	buildOnce sync.Once
	buildPath string
	buildDir  string
	buildErr  error
)

// BuildServer returns the path of a shoal-server binary: $SHOAL_SERVER if set,
// otherwise ./cmd/shoal-server built once per test binary into a temporary
// directory (extra `go build` flags may be given in $SHOAL_BUILD_FLAGS, e.g.
// "-race"). If the build fails -- cmd/shoal-server does not exist or does not
// compile yet -- the calling test is skipped with the compiler output: a
// compile error still fails `go vet ./...` and `go build ./...`, so nothing is
// hidden. Use TryBuildServer to get the error instead.
func BuildServer(t testing.TB) string {
	t.Helper()
	path, err := TryBuildServer()
	if err != nil {
		var ne *notExecutableError
		if errors.As(err, &ne) {
			t.Fatalf("%v", err)
		}
		t.Skipf("shoal-server is not available, skipping: %v", err)
	}
	return path
}

type notExecutableError struct{ path string }

func (e *notExecutableError) Error() string {
	return fmt.Sprintf("SHOAL_SERVER=%s is not an executable file", e.path)
}

// TryBuildServer is BuildServer without a testing.TB: it returns the binary's
// path or why there is none.
func TryBuildServer() (string, error) {
	if p := os.Getenv("SHOAL_SERVER"); p != "" {
		if !strings.ContainsRune(p, os.PathSeparator) {
			lp, err := exec.LookPath(p)
			if err != nil {
				return "", &notExecutableError{p}
			}
			p = lp
		}
		st, err := os.Stat(p)
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return "", &notExecutableError{p}
		}
		return p, nil
	}
	buildOnce.Do(func() { buildPath, buildErr = build() })
	return buildPath, buildErr
}

func build() (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "shoal-integration-bin-")
	if err != nil {
		return "", err
	}
	buildDir = dir
	out := filepath.Join(dir, "shoal-server")
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	args := []string{"build", "-trimpath", "-o", out}
	args = append(args, strings.Fields(os.Getenv("SHOAL_BUILD_FLAGS"))...)
	args = append(args, "./cmd/shoal-server")
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go %s (in %s): %v\n%s", strings.Join(args, " "), root, err, strings.TrimSpace(buf.String()))
	}
	return out, nil
}

// CleanupBuild removes the binary BuildServer built, if any. Call it from
// TestMain after m.Run.
func CleanupBuild() {
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
}

// ModuleRoot walks up from the working directory to the directory holding go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for i := 0; i < 64; i++ {
		if st, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && !st.IsDir() {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", errors.New("go.mod not found in any parent of the working directory")
}

// Server is one shoal-server process started by StartServer.
type Server struct {
	Addr string // "127.0.0.1:<Port>"
	Port int
	Dir  string    // --dir, a per-test temporary directory; also holds server.log
	Cmd  *exec.Cmd // the running process (replaced by Restart)
	Bin  string
	Args []string // the extra arguments given to StartServer

	t       testing.TB
	logPath string
	mu      sync.Mutex
	exited  chan struct{} // closed when Cmd has been waited for
	waitErr error
}

// StartServer starts shoal-server standalone on a free 127.0.0.1 port with
// --dir in a fresh t.TempDir() and stdout/stderr captured in Dir/server.log,
// waits (up to 10 s) for "Ready to accept connections", and registers a
// cleanup that stops it (SIGTERM, SIGKILL after 5 s) and, if the test failed,
// logs the last 50 lines of its log. args are appended to the command line
// (`--directive value` pairs, as for redis-server); do not override --logfile.
func StartServer(t testing.TB, args ...string) *Server {
	t.Helper()
	s := &Server{
		Bin:  BuildServer(t),
		Dir:  t.TempDir(),
		Args: append([]string(nil), args...),
		t:    t,
	}
	s.logPath = filepath.Join(s.Dir, "server.log")
	t.Cleanup(func() { s.stopAndReport(t, "") })
	var lastErr error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		port, err := testharness.FreePort()
		if err != nil {
			t.Fatalf("no free port: %v", err)
		}
		s.Port = port
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		portBusy, err := s.start()
		if err == nil {
			return s
		}
		lastErr = err
		if !portBusy {
			break
		}
		t.Logf("port %d was taken before the server bound it; retrying (%d/%d)", port, attempt, startAttempts)
	}
	t.Fatalf("starting %s: %v (its log follows at cleanup)", s.Bin, lastErr)
	return nil
}

// start launches the process on s.Port and waits until it is ready. portBusy
// reports that it failed because the port was in use.
func (s *Server) start() (portBusy bool, err error) {
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return false, err
	}
	defer logf.Close() // the child has its own descriptor
	before := s.readyCount()
	args := []string{
		"--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1", "--dir", s.Dir,
		"--daemonize", "no", "--logfile", "",
		// Full syncs start at once, as in Redis's own test configuration
		// (the default waits 5 s for more replicas to share the snapshot).
		"--repl-diskless-sync-delay", "0",
	}
	args = append(args, s.Args...)
	cmd := exec.Command(s.Bin, args...)
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		return false, err
	}
	exited := make(chan struct{})
	s.mu.Lock()
	s.Cmd, s.exited, s.waitErr = cmd, exited, nil
	s.mu.Unlock()
	go func() {
		err := cmd.Wait()
		s.mu.Lock()
		s.waitErr = err
		s.mu.Unlock()
		close(exited)
	}()

	deadline := time.NewTimer(readyTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if s.readyCount() > before {
			return false, nil
		}
		select {
		case <-exited:
			log := s.Log()
			busy := strings.Contains(log, "Failed listening") || strings.Contains(log, "ddress already in use")
			s.mu.Lock()
			werr := s.waitErr
			s.mu.Unlock()
			return busy, fmt.Errorf("server exited before %q: %v", readyLine, werr)
		case <-deadline.C:
			s.Kill()
			return false, fmt.Errorf("no %q in the log after %v", readyLine, readyTimeout)
		case <-tick.C:
		}
	}
}

func (s *Server) readyCount() int {
	return strings.Count(s.Log(), readyLine)
}

// Log returns everything the server has written to stdout/stderr so far
// (across restarts).
func (s *Server) Log() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return ""
	}
	return string(b)
}

// stopAndReport stops s and, if t failed, logs the last lines of its log
// (label, if any, names the server) and copies the whole log into
// $SHOAL_KEEP_LOGS when that names a directory: a failure seen once on a
// loaded machine can then be read in full.
func (s *Server) stopAndReport(t testing.TB, label string) {
	s.Stop()
	if !t.Failed() {
		return
	}
	if label != "" {
		label += ", "
	}
	t.Logf("last %d lines of %s (%sport %d):\n%s", failedLogLines, s.logPath, label, s.Port, s.lastLines(failedLogLines))
	if dir := os.Getenv("SHOAL_KEEP_LOGS"); dir != "" {
		name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()) + "-" + strconv.Itoa(s.Port) + ".log"
		kept := filepath.Join(dir, name)
		if err := os.WriteFile(kept, []byte(s.Log()), 0o644); err != nil {
			t.Logf("keeping the log: %v", err)
		} else {
			t.Logf("whole log kept in %s", kept)
		}
	}
}

func (s *Server) lastLines(n int) string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s.Log()))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// PID returns the process id of the running server (0 if never started).
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Cmd == nil || s.Cmd.Process == nil {
		return 0
	}
	return s.Cmd.Process.Pid
}

// Running reports whether the server process has not exited yet.
func (s *Server) Running() bool {
	s.mu.Lock()
	ch := s.exited
	s.mu.Unlock()
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return false
	default:
		return true
	}
}

// Stop sends SIGTERM and waits for the process to exit, sending SIGKILL if it
// is still running after 5 s. It is a no-op if the server is not running.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, ch := s.Cmd, s.exited
	s.mu.Unlock()
	if cmd == nil || ch == nil {
		return
	}
	select {
	case <-ch:
		return
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-ch:
		return
	case <-time.After(stopTimeout):
	}
	s.t.Logf("shoal-server pid %d did not exit %v after SIGTERM; sending SIGKILL", cmd.Process.Pid, stopTimeout)
	s.Kill()
}

// Kill sends SIGKILL and waits for the process to be gone.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, ch := s.Cmd, s.exited
	s.mu.Unlock()
	if cmd == nil || ch == nil {
		return
	}
	select {
	case <-ch:
		return
	default:
	}
	_ = cmd.Process.Kill()
	select {
	case <-ch:
	case <-time.After(stopTimeout):
		s.t.Errorf("shoal-server pid %d still not reaped %v after SIGKILL", cmd.Process.Pid, stopTimeout)
	}
}

// Restart stops the server (if running) and starts it again with the same
// port, directory and arguments, waiting until it is ready again.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	var err error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		var busy bool
		busy, err = s.start()
		if err == nil {
			return
		}
		if !busy {
			break
		}
		time.Sleep(200 * time.Millisecond) // the old socket may linger briefly
	}
	s.t.Fatalf("restarting %s on port %d: %v (its log follows at cleanup)", s.Bin, s.Port, err)
}

// RedisCLI runs `redis-cli -h 127.0.0.1 -p <port> args...` (redis-cli from
// $REDIS_CLI, else /usr/bin/redis-cli, else $PATH) with a 10 s timeout and
// returns its standard output without the trailing newline. The error, if
// any, carries redis-cli's standard error. Note that redis-cli exits 0 on an
// error reply; such replies arrive in the output as "ERR ..." text.
func RedisCLI(t testing.TB, s *Server, args ...string) (string, error) {
	t.Helper()
	cli := os.Getenv("REDIS_CLI")
	if cli == "" {
		cli = "/usr/bin/redis-cli"
		if _, err := os.Stat(cli); err != nil {
			cli = "redis-cli"
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	full := append([]string{"-h", "127.0.0.1", "-p", strconv.Itoa(s.Port)}, args...)
	cmd := exec.CommandContext(ctx, cli, full...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := strings.TrimRight(stdout.String(), "\n")
	if ctx.Err() != nil {
		return out, fmt.Errorf("redis-cli %s: timed out after %v", strings.Join(args, " "), cliTimeout)
	}
	if err != nil {
		return out, fmt.Errorf("redis-cli %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
