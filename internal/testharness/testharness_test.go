package testharness

import (
	"bufio"
	"bytes"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestReadRawKeepsEachReplyWhole(t *testing.T) {
	replies := []string{
		"+OK\r\n", "-ERR no\r\n", ":42\r\n", "$-1\r\n", "$3\r\nfoo\r\n", "*-1\r\n",
		"*2\r\n$1\r\na\r\n*1\r\n:1\r\n", "%1\r\n+k\r\n=8\r\ntxt:abcd\r\n", "_\r\n", ",1.5\r\n",
		"|1\r\n+ttl\r\n:3\r\n$1\r\nv\r\n", ">2\r\n+message\r\n$2\r\nhi\r\n",
	}
	r := bufio.NewReader(strings.NewReader(strings.Join(replies, "")))
	for _, want := range replies {
		var got bytes.Buffer
		require.NoError(t, ReadRaw(r, &got))
		require.Equal(t, want, got.String())
	}
	var rest bytes.Buffer
	require.Error(t, ReadRaw(r, &rest), "nothing left")
	require.Error(t, ReadRaw(bufio.NewReader(strings.NewReader("?x\r\n")), &rest))
	require.Error(t, ReadRaw(bufio.NewReader(strings.NewReader(strings.Repeat("*1\r\n", 100)+":1\r\n")), &rest))
}

func TestReadValueDecodes(t *testing.T) {
	v, err := ParseValue("*5\r\n+OK\r\n-ERR bad\r\n:-7\r\n$-1\r\n*2\r\n$0\r\n\r\n$4\r\na\r\nb\r\n")
	require.NoError(t, err)
	require.Equal(t, []any{"OK", ErrorReply("ERR bad"), int64(-7), nil, []any{"", "a\r\nb"}}, v)
	v, err = ParseValue("*-1\r\n")
	require.NoError(t, err)
	require.Nil(t, v)
	_, err = ParseValue("$5\r\nab")
	require.Error(t, err)
}

func TestWaits(t *testing.T) {
	n := 0
	WaitFor(t, 5*time.Second, "three checks", func() bool { n++; return n >= 3 })
	require.Equal(t, 3, n)
	require.False(t, WaitUntil(120*time.Millisecond, func() bool { return false }))
	WaitForReason(t, time.Second, time.Millisecond, "at once", func() string { return "" })
}

func TestPortsAreFree(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(TCPPort(t)))
	require.NoError(t, err)
	require.NoError(t, l.Close())
	p := BusPort(t)
	l, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	require.NoError(t, err)
	u, err := net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(p))
	require.NoError(t, err)
	require.NoError(t, u.Close())
	require.NoError(t, l.Close())
}

func TestParseReplyTree(t *testing.T) {
	v := ParseReply(t, "%2\r\n+a\r\n*2\r\n:1\r\n$-1\r\n=8\r\ntxt:abcd\r\n*-1\r\n")
	require.Equal(t, Reply{Kind: '%', Elems: []Reply{
		{Kind: '+', Str: "a"},
		{Kind: '*', Elems: []Reply{{Kind: ':', Str: "1"}, {Kind: '$', Null: true}}},
		{Kind: '=', Str: "txt:abcd"},
		{Kind: '*'},
	}}, v)
}

func TestParseSlack(t *testing.T) {
	for v, want := range map[string]float64{"": 1, "3": 3, "2.5": 2.5, "0.5": 1, "x": 1, "1000": 1} {
		require.Equal(t, want, parseSlack(v), "SHOAL_TEST_SLACK=%q", v)
	}
}
