package resp

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

func TestStreamReaderCountsBytes(t *testing.T) {
	in := AppendCommand(nil, "SET", "k", "v")
	in = append(in, '\n')
	in = AppendCommand(in, "PING")
	rd := NewStreamReader(bytes.NewReader(in), StreamLimits{MaxBulkLen: 16})
	args, raw, err := rd.ReadCommand(nil)
	if err != nil || len(args) != 3 || string(args[2]) != "v" || len(raw) != 27 {
		t.Fatalf("args %q raw %d err %v", args, len(raw), err)
	}
	args, raw, err = rd.ReadCommand(args)
	if err != nil || len(args) != 1 || string(args[0]) != "PING" || len(raw) != 15 {
		t.Fatalf("args %q raw %q err %v", args, raw, err)
	}
	big := AppendCommand(nil, "SET", "k", "0123456789abcdefXYZ")
	if _, _, err := NewStreamReader(bytes.NewReader(big), StreamLimits{MaxBulkLen: 16}).ReadCommand(nil); err != ErrStreamProtocol {
		t.Fatalf("oversized bulk: %v", err)
	}
}

// The buffered fast path and the line-by-line reader must read the same
// stream the same way: every command whole in one read, or split byte by
// byte, gives the same arguments and raw bytes, and the same errors.
func TestStreamReaderWholeAndSplitAgree(t *testing.T) {
	var in []byte
	in = AppendCommand(in, "SELECT", "0")
	in = AppendCommand(in, "SET", "key", "value")
	in = append(in, '\n', '\n') // keep-alives count into the next command
	in = AppendCommand(in, "MSET", "a", "", "b", "0123456789abcdef")
	in = append(in, "*2\r\n$3\r\nDEL\r\n$001\r\nk\r\n"...) // leading zeros
	in = append(in, "*+1\r\n$4\r\nPING\r\n"...)            // a sign: ParseInt's rules
	read := func(rd *StreamReader) (out []string) {
		var args [][]byte
		for {
			var raw []byte
			var err error
			args, raw, err = rd.ReadCommand(args)
			if err != nil {
				return append(out, "err:"+err.Error())
			}
			out = append(out, fmt.Sprintf("%q %q", args, raw))
		}
	}
	whole := read(NewStreamReader(bytes.NewReader(in), StreamLimits{MaxBulkLen: 16}))
	split := read(NewStreamReader(iotest.OneByteReader(bytes.NewReader(in)), StreamLimits{MaxBulkLen: 16}))
	if len(whole) != 6 || !slices.Equal(whole, split) {
		t.Fatalf("whole %q\nsplit %q", whole, split)
	}
	if whole[2] != fmt.Sprintf("%q %q", [][]byte{[]byte("MSET"), []byte("a"), {}, []byte("b"), []byte("0123456789abcdef")},
		append([]byte("\n\n"), AppendCommand(nil, "MSET", "a", "", "b", "0123456789abcdef")...)) {
		t.Fatalf("keep-alives: %s", whole[2])
	}
	for _, bad := range []string{"*1\r\n$17\r\n0123456789abcdefX\r\n", "*1\r\n$1\r\nab\r\n", "*0\r\n", "+OK\r\n", "*1\r\n:1\r\n"} {
		for _, r := range []io.Reader{strings.NewReader(bad), iotest.OneByteReader(strings.NewReader(bad))} {
			if _, _, err := NewStreamReader(r, StreamLimits{MaxBulkLen: 16}).ReadCommand(nil); err != ErrStreamProtocol {
				t.Errorf("%q: %v", bad, err)
			}
		}
	}
}

func TestSelectedAfter(t *testing.T) {
	cmd := func(a ...string) [][]byte {
		out := make([][]byte, len(a))
		for i, s := range a {
			out[i] = []byte(s)
		}
		return out
	}
	if got := SelectedAfter(3, [][][]byte{cmd("SET", "a", "1")}); got != 3 {
		t.Fatalf("no SELECT: %d", got)
	}
	unit := [][][]byte{cmd("MULTI"), cmd("SET", "a", "1"), cmd("select", "12"), cmd("SET", "b", "1"), cmd("SELECT", "2"), cmd("SET", "c", "1"), cmd("EXEC")}
	if got := SelectedAfter(0, unit); got != 2 {
		t.Fatalf("the last SELECT names the database: %d", got)
	}
	if got := SelectedAfter(5, [][][]byte{cmd("SELECTX", "1"), cmd("SELECT", "1", "2")}); got != 5 {
		t.Fatalf("only a two-argument SELECT counts: %d", got)
	}
}
