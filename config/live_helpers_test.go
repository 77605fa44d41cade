package config

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoal-db/shoal/internal/testharness"
	"github.com/stretchr/testify/require"
)

// Helpers to compare with a real redis-server 7.0 when one is on PATH.

func redisServerPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not on PATH")
	}
	out, err := exec.Command(p, "--version").Output()
	if err != nil || !strings.Contains(string(out), "v="+RedisVersion) {
		t.Skipf("redis-server is not Redis %s: %q", RedisVersion, out)
	}
	return p
}

type liveRedis struct {
	t    *testing.T
	cmd  *exec.Cmd
	conn net.Conn
	rd   *bufio.Reader
	args []string // arguments given to redis-server
	done chan struct{}
}

// startRedis starts redis-server with args plus a free port (unless args
// already hold --port), --save "" and --dir dir.
func startRedis(t *testing.T, dir string, args ...string) *liveRedis {
	t.Helper()
	bin := redisServerPath(t)
	port := testharness.TCPPort(t)
	var full []string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		full = append(full, args[0]) // config file first
		args = args[1:]
	}
	full = append(full, "--port", strconv.Itoa(port), "--save", "", "--dir", dir)
	full = append(full, args...)
	cmd := exec.Command(bin, full...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	require.NoError(t, cmd.Start())
	r := &liveRedis{t: t, cmd: cmd, args: full, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(r.done) }()
	t.Cleanup(r.stop)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err == nil {
			r.conn = c
			r.rd = bufio.NewReader(c)
			break
		}
		select {
		case <-r.done:
			t.Fatalf("redis-server exited early: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server did not start: %s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return r
}

func (r *liveRedis) stop() {
	if r.conn != nil {
		r.conn.Close()
	}
	select {
	case <-r.done:
		return
	default:
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
}

// do sends a command and returns the reply: string, int64, []any, nil, or
// an error value (testharness.ErrorReply) for error replies.
func (r *liveRedis) do(args ...string) any {
	r.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	require.NoError(r.t, r.conn.SetDeadline(time.Now().Add(10*time.Second)))
	_, err := io.WriteString(r.conn, b.String())
	require.NoError(r.t, err)
	v, err := testharness.ReadValue(r.rd)
	require.NoError(r.t, err)
	return v
}

// configGet returns CONFIG GET's reply as a map.
func (r *liveRedis) configGet(patterns ...string) map[string]string {
	r.t.Helper()
	rep := r.do(append([]string{"CONFIG", "GET"}, patterns...)...)
	arr, ok := rep.([]any)
	require.True(r.t, ok, "CONFIG GET reply %v", rep)
	return pairsToMap(r.t, toStrings(arr))
}

func toStrings(arr []any) []string {
	out := make([]string, len(arr))
	for i, x := range arr {
		out[i] = x.(string)
	}
	return out
}

func pairsToMap(t *testing.T, pairs []string) map[string]string {
	t.Helper()
	require.Equal(t, 0, len(pairs)%2)
	m := make(map[string]string, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		_, dup := m[pairs[i]]
		require.False(t, dup, "duplicate key %q", pairs[i])
		m[pairs[i]] = pairs[i+1]
	}
	return m
}

// replyText turns a reply into "OK"-like text or the error text.
func replyText(v any) string {
	switch x := v.(type) {
	case testharness.ErrorReply:
		return string(x)
	case string:
		return x
	}
	return fmt.Sprint(v)
}

// runRedisFailure runs redis-server with args, expecting it to exit with
// status 1, and returns its stdout and stderr.
func runRedisFailure(t *testing.T, dir string, stdin string, args ...string) (stdout, stderr string) {
	t.Helper()
	bin := redisServerPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	cmd.Stdin = strings.NewReader(stdin)
	err := cmd.Run()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "redis-server %q: expected exit status 1, got %v (%s)", args, err, so.String())
	require.Equal(t, 1, ee.ExitCode(), "redis-server %q", args)
	return so.String(), se.String()
}
