package resp

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// SkipReply reads every RESP2/RESP3 reply shape and finds errors, nested
// ones included (an EXEC reply).
func TestReplyReaderSkipReply(t *testing.T) {
	in := "+OK\r\n:12\r\n$3\r\nabc\r\n$-1\r\n*2\r\n+QUEUED\r\n*1\r\n$1\r\nx\r\n" +
		"-ERR boom\r\n*2\r\n:1\r\n-WRONGTYPE inner\r\n%1\r\n+k\r\n+v\r\n!5\r\nblob!\r\n_\r\n"
	r := NewReplyReader(strings.NewReader(in), 4096)
	want := []string{"", "", "", "", "", "ERR boom", "WRONGTYPE inner", "", "blob!", ""}
	for i, w := range want {
		isErr, msg, err := r.SkipReply()
		require.NoError(t, err, "reply %d", i)
		require.Equal(t, w != "", isErr, "reply %d", i)
		require.Equal(t, w, msg, "reply %d", i)
	}
	_, _, err := r.SkipReply()
	require.Error(t, err, "end of input")
	_, _, err = NewReplyReader(strings.NewReader("?what\r\n"), 4096).SkipReply()
	require.Error(t, err)
	_, _, err = NewReplyReader(strings.NewReader("$abc\r\n"), 4096).SkipReply()
	require.Error(t, err)
}

// ReadLine takes LF or CRLF lines longer than the buffer, up to
// MaxReplyLine, and refuses empty ones.
func TestReplyReaderReadLine(t *testing.T) {
	long := strings.Repeat("x", 10000)
	r := NewReplyReader(strings.NewReader("+OK\r\n-ERR no\n+"+long+"\r\n\r\n"), 4096)
	for _, want := range []string{"+OK", "-ERR no", "+" + long} {
		got, err := r.ReadLine()
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	_, err := r.ReadLine()
	require.EqualError(t, err, "empty reply line")
	_, err = NewReplyReader(strings.NewReader(strings.Repeat("y", MaxReplyLine+10)+"\r\n"), 4096).ReadLine()
	require.EqualError(t, err, "reply line too long")
}

// ReadText answers the simple replies and refuses the rest.
func TestReplyReaderReadText(t *testing.T) {
	for _, c := range []struct {
		in, want, err string
	}{
		{"+OK\r\n", "OK", ""},
		{":12\r\n", "12", ""},
		{"$5\r\nhello\r\n", "hello", ""},
		{"$-1\r\n", "", ""},
		{"-ERR unknown subcommand 'FAILOVER'\r\n", "", "ERR unknown subcommand 'FAILOVER'"},
		{"$99999999999\r\n", "", "bad bulk length"},
		{"$-2\r\n", "", "bad bulk length"},
		{"$x\r\n", "", "bad bulk length"},
		{"$5\r\nhel", "", "EOF"},
		{"*1\r\n", "", "unexpected reply"},
		{"\r\n", "", "empty reply"},
	} {
		got, err := NewReplyReader(strings.NewReader(c.in), 4096).ReadText(16 << 20)
		if c.err == "" && (err != nil || got != c.want) {
			t.Errorf("%q: %q %v, want %q", c.in, got, err, c.want)
		}
		if c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%q: error %v, want %q", c.in, err, c.err)
		}
	}
}

// A reply nested past MaxReplyDepth is refused, not followed.
func TestReplyReaderSkipReplyDepth(t *testing.T) {
	ok := strings.Repeat("*1\r\n", MaxReplyDepth) + ":1\r\n"
	_, _, err := NewReplyReader(strings.NewReader(ok), 4096).SkipReply()
	if err != nil {
		t.Fatalf("depth %d: %v", MaxReplyDepth, err)
	}
	deep := strings.Repeat("*1\r\n", MaxReplyDepth+1) + ":1\r\n"
	if _, _, err := NewReplyReader(strings.NewReader(deep), 4096).SkipReply(); err == nil {
		t.Fatal("a reply nested past MaxReplyDepth was followed")
	}
}
