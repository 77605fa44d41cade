package node

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMultiQueueAcrossBatches: a transaction ended within its batch lets
// the connection reuse the batch's buffers; one still open at the batch's
// end keeps them, so its queued arguments survive the batches that follow.
func TestMultiQueueAcrossBatches(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	for i := 0; i < 20; i++ { // whole transactions, one batch each
		v := strings.Repeat(string(rune('a'+i)), 100+i)
		tc.writeRaw(append(append(encodeCommand("MULTI"), encodeCommand("SET", "{t}k", v)...), encodeCommand("EXEC")...))
		require.Equal(t, "+OK\r\n", tc.read())
		require.Equal(t, "+QUEUED\r\n", tc.read())
		require.Equal(t, "*1\r\n+OK\r\n", tc.read())
		require.Equal(t, v, bulkBody(t, tc.do("GET", "{t}k")))
	}
	// Open at the end of its batch: later batches must not overwrite it.
	queued := strings.Repeat("q", 300)
	tc.writeRaw(append(encodeCommand("MULTI"), encodeCommand("SET", "{t}k", queued)...))
	require.Equal(t, "+OK\r\n", tc.read())
	require.Equal(t, "+QUEUED\r\n", tc.read())
	other := dialTest(t, s)
	for i := 0; i < 5; i++ {
		require.Equal(t, "+QUEUED\r\n", tc.do("ECHO", strings.Repeat("z", 300)))
		require.Equal(t, "+OK\r\n", other.do("SET", "{u}x", strings.Repeat("y", 300)))
	}
	r := tc.do("EXEC")
	require.True(t, strings.HasPrefix(r, "*6\r\n+OK\r\n"), r)
	require.Equal(t, queued, bulkBody(t, tc.do("GET", "{t}k")))
}
