package node

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// A run of writes gathers its statistics (SET is not a fast command), and a
// command that reads them, INFO in the same pipelined batch, still sees each
// write before it counted, as do the other connections once the replies are
// sent.
func TestPipelinedWritesCountedBeforeInfo(t *testing.T) {
	s := startTestServer(t)
	c := dialTest(t, s)
	require.Equal(t, "+OK\r\n", c.do("CONFIG", "RESETSTAT"))
	var batch bytes.Buffer
	for _, cmd := range [][]string{
		{"SET", "a", "1"}, {"SET", "b", "2"}, {"SET", "c", "3"},
		{"INFO", "commandstats"},
		{"LPUSH", "l", "x"}, {"LPUSH", "l", "y"}, {"LPUSH", "a", "z"},
	} {
		batch.Write(encodeCommand(cmd...))
	}
	c.writeRaw(batch.Bytes())
	for i := 0; i < 3; i++ {
		require.Equal(t, "+OK\r\n", c.read())
	}
	info := c.read()
	require.Contains(t, info, "cmdstat_set:calls=3,", "INFO in the batch sees the SETs before it")
	require.NotContains(t, info, "cmdstat_lpush:")
	require.Equal(t, ":1\r\n", c.read())
	require.Equal(t, ":2\r\n", c.read())
	require.Contains(t, c.read(), "WRONGTYPE")
	other := dialTest(t, s)
	info = other.do("INFO", "commandstats")
	require.Regexp(t, `cmdstat_lpush:calls=3,usec=\d+,usec_per_call=[\d.]+,rejected_calls=0,failed_calls=1`, info)
	require.Contains(t, info, "cmdstat_info:calls=1,")
	require.Contains(t, other.do("INFO", "stats"), "total_commands_processed:9\r\n")
}
