package node

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// monitorTranscript runs one scripted session on addr while a MONITOR
// client watches, and returns what the monitor saw with the times and the
// client's port masked.
func monitorTranscript(t *testing.T, addr string) []string {
	mon := dialTestAddr(t, addr)
	require.Equal(t, "+OK\r\n", mon.do("MONITOR"))
	tc := dialTestAddr(t, addr)
	steps := [][]string{
		{"SET", "foo", "bar"},
		{"GET", "foo"},
		{"SET", "sp ace", "quote\"back\\slash\r\n\x01\xff"},
		{"CONFIG", "GET", "maxmemory"}, // administrative: not shown
		{"EVAL", "redis.call('set', KEYS[1], ARGV[1]); return redis.call('get', KEYS[1])", "1", "k", "v"},
		{"MULTI"}, {"SET", "a", "1"}, {"INCR", "a"}, {"EXEC"},
		{"MULTI"}, {"NOSUCHCOMMAND"}, {"EXEC"},
		{"AUTH", "not-real"},
		{"AUTH", "user", "not-a-password"},
		{"HELLO", "2", "AUTH", "user", "pass"},
		{"MIGRATE", "127.0.0.1", "1", "nokey", "0", "10", "AUTH", "secret"},
		{"MIGRATE", "127.0.0.1", "1", "nokey", "0", "10", "AUTH2", "u", "p"},
		{"SELECT", "5"}, {"SET", "in5", "x"}, {"SELECT", "0"},
		{"GET"}, // refused (arity): not shown
	}
	for _, st := range steps {
		tc.do(st...)
	}
	tc.do("PING") // the last line, so we know when to stop reading
	mask := regexp.MustCompile(`^\+\d+\.\d{6} \[(\d+) (?:127\.0\.0\.1:\d+|lua)\]`)
	var lines []string
	for i := 0; i < 40; i++ {
		_ = mon.c.SetReadDeadline(time.Now().Add(testIOTimeout))
		line, err := mon.r.ReadString('\n')
		require.NoError(t, err)
		kind := "client"
		if strings.Contains(line, " lua] ") {
			kind = "lua"
		}
		require.Regexp(t, mask, line)
		lines = append(lines, mask.ReplaceAllString(line, "[$1 "+kind+"]"))
		if strings.Contains(line, `"PING"`) {
			return lines
		}
	}
	t.Fatalf("no PING line in %q", lines)
	return nil
}

// TestMonitorMatchesRedis: what MONITOR shows of the same session (plain
// commands, a value needing escapes, an administrative command, a script
// and its commands, transactions including an aborted one, secrets, SELECT,
// refused commands) is line for line what redis-server 7.0 shows, with
// times and client ports masked.
func TestMonitorMatchesRedis(t *testing.T) {
	redisAddr := startRealRedis(t)
	want := monitorTranscript(t, redisAddr)
	s := startTestServer(t)
	got := monitorTranscript(t, s.Addr().String())
	require.Equal(t, want, got)
	// The monitor is listed with the O flag, and leaves the list when it
	// closes.
	tc := dialTest(t, s)
	require.Contains(t, tc.do("CLIENT", "LIST"), " flags=O ")
}
