package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-db/shoal/internal/testharness"
)

type server struct {
	cmd     *exec.Cmd
	dir     string
	logPath string
	addr    string
	exited  chan struct{}
}

// errRefused marks a server that exited before it answered PING.
var errRefused = errors.New("refused")

// start runs bin on a free loopback port and waits until it answers PING.
// A server that exits first returns errRefused with its log's last lines.
func start(bin string, args ...string) (*server, string, error) {
	dir, err := os.MkdirTemp("", "evictcompare-")
	if err != nil {
		return nil, "", err
	}
	port, err := testharness.FreePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	s := &server{dir: dir, logPath: filepath.Join(dir, "server.log"), exited: make(chan struct{}),
		addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	logFile, err := os.Create(s.logPath)
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	defer logFile.Close() // the child holds its own descriptor
	all := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", ""}, args...)
	s.cmd = exec.Command(bin, all...)
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c, err := dial(s.addr); err == nil {
			v, err := c.do("PING")
			c.Close()
			if err == nil && v == "PONG" {
				return s, "", nil
			}
		}
		select {
		case <-s.exited:
			reason := s.logTail()
			s.stop()
			return nil, reason, errRefused
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, "", errors.New("no PONG within 20 s")
		}
	}
}

// logTail is the last non-empty lines of the server's log that say why it
// stopped (at most 3, joined by " / ").
func (s *server) logTail() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return "exited at start-up (no log)"
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return "exited at start-up (empty log)"
	}
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return strings.Join(lines, " / ")
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// stop interrupts the server (SIGKILL after 10 s) and removes its directory.
func (s *server) stop() {
	select {
	case <-s.exited:
	default:
		_ = s.cmd.Process.Signal(os.Interrupt)
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	}
	os.RemoveAll(s.dir)
}

func runOne(name, bin, policy string, o options) run {
	r := run{Server: name, Binary: bin, Policy: policy}
	s, reason, err := start(bin, "--maxmemory", o.maxmemory, "--maxmemory-policy", policy)
	if errors.Is(err, errRefused) {
		r.Refused = reason
		return r
	}
	if err != nil {
		r.Error = "start: " + err.Error()
		return r
	}
	defer s.stop()
	c, err := dial(s.addr)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer c.Close()
	if r.IdleCPU, err = idleCPU(s.pid(), o.idle); err != nil {
		r.Error = err.Error()
		return r
	}
	if err = r.readConfig(c); err == nil {
		if policy == "noeviction" {
			err = r.fillUntilRefused(c, s, o)
		} else {
			err = r.hotAndCold(c, s, o)
		}
	}
	if err != nil {
		select {
		case <-s.exited:
			err = fmt.Errorf("%v (server exited: %s)", err, s.logTail())
		default:
		}
		r.Error = err.Error()
	}
	return r
}

func (r *run) readConfig(c *conn) error {
	for _, p := range []struct {
		name string
		to   *string
	}{{"maxmemory", &r.ConfigMaxmemory}, {"maxmemory-policy", &r.ConfigPolicy}} {
		v, err := c.do("CONFIG", "GET", p.name)
		if err != nil {
			return fmt.Errorf("CONFIG GET %s: %w", p.name, err)
		}
		if a, ok := v.([]any); ok && len(a) == 2 {
			*p.to, _ = a[1].(string)
		}
	}
	return nil
}
