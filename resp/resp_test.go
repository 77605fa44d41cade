package resp

import "testing"

func TestAppendCommand(t *testing.T) {
	const want = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n"
	if got := string(AppendCommand(nil, "SET", "k", "")); got != want {
		t.Errorf("strings: %q", got)
	}
	if got := string(AppendCommand([]byte("x"), []byte("SET"), []byte("k"), nil)); got != "x"+want {
		t.Errorf("bytes: %q", got)
	}
	if got := string(AppendCommand[string](nil)); got != "*0\r\n" {
		t.Errorf("empty: %q", got)
	}
}
