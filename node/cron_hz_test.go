package node

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDynamicHz(t *testing.T) {
	for _, tc := range []struct{ hz, clients, want int64 }{
		{10, 0, 10}, {10, 2009, 10}, {10, 2010, 20}, {10, 4020, 40}, {10, 8040, 80},
		{100, 20099, 100}, {100, 20100, 200}, {300, 60299, 300}, {300, 60300, 500},
		{10, 1_000_000, 500}, {500, 1_000_000, 500}, {1, 201, 2},
	} {
		assert.Equal(t, tc.want, dynamicHz(tc.hz, tc.clients), "hz %d, %d clients", tc.hz, tc.clients)
	}
}

// CONFIG SET hz reaches the running cron (it used to be read once at start):
// INFO's hz follows within a tick, configured_hz at once.
func TestConfigSetHzReachesCron(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	require.Equal(t, "+OK\r\n", tc.do("CONFIG", "SET", "hz", "50"))
	deadline := time.Now().Add(10 * time.Second)
	for s.cronHz.Load() != 50 {
		require.True(t, time.Now().Before(deadline), "cron still at hz %d", s.cronHz.Load())
		time.Sleep(10 * time.Millisecond)
	}
	info := tc.do("INFO", "server")
	assert.Contains(t, info, "\r\nhz:50\r\n")
	assert.Contains(t, info, "\r\nconfigured_hz:50\r\n")
	require.Equal(t, "+OK\r\n", tc.do("CONFIG", "SET", "hz", "1000"))
	for s.cronHz.Load() != 500 {
		require.True(t, time.Now().Before(deadline), "cron at hz %d, want 500 (capped)", s.cronHz.Load())
		time.Sleep(10 * time.Millisecond)
	}
	assert.True(t, strings.Contains(tc.do("INFO", "server"), "\r\nhz:500\r\n"))
}
