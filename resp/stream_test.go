package resp

import (
	"bytes"
	"testing"
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
