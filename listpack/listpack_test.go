package listpack

import (
	"bytes"
	"testing"
)

func TestEntrySizes(t *testing.T) {
	for _, c := range []struct {
		s    string
		size int
	}{
		{"0", 2}, {"127", 2}, {"128", 3}, {"-1", 3}, {"-4096", 3}, {"4096", 4}, {"32767", 4},
		{"32768", 5}, {"9223372036854775807", 10}, {"-9223372036854775808", 10},
		{"9223372036854775808", 21}, {"01", 4}, {"+1", 4}, {"-0", 4}, {"", 2}, {"abc", 5},
	} {
		if got := StringEntrySize([]byte(c.s)); got != c.size {
			t.Errorf("StringEntrySize(%q) = %d, want %d", c.s, got, c.size)
		}
		if got := len(AppendString(nil, []byte(c.s))); got != c.size {
			t.Errorf("AppendString(%q) wrote %d bytes, want %d", c.s, got, c.size)
		}
	}
	if got := StringEntrySize(bytes.Repeat([]byte("x"), 63)); got != 65 {
		t.Errorf("63 bytes: %d", got)
	}
	if got := StringEntrySize(bytes.Repeat([]byte("x"), 64)); got != 66+1 {
		t.Errorf("64 bytes: %d", got)
	}
}

// The bytes listpack.c writes for these entries.
func TestAppendEntries(t *testing.T) {
	for _, c := range []struct {
		v    int64
		want string
	}{
		{5, "\x05\x01"}, {-1, "\xdf\xff\x02"}, {4095, "\xcf\xff\x02"}, {-4096, "\xd0\x00\x02"},
		{32767, "\xf1\xff\x7f\x03"}, {-32768, "\xf1\x00\x80\x03"}, {1 << 23, "\xf3\x00\x00\x80\x00\x05"},
		{-(1 << 23), "\xf2\x00\x00\x80\x04"}, {1 << 31, "\xf4\x00\x00\x00\x80\x00\x00\x00\x00\x09"},
	} {
		if got := string(AppendInt(nil, c.v)); got != c.want {
			t.Errorf("AppendInt(%d) = %q, want %q", c.v, got, c.want)
		}
	}
	if got := string(AppendString([]byte("pre"), []byte("abc"))); got != "pre\x83abc\x04" {
		t.Errorf("AppendString(abc) = %q", got)
	}
	long := bytes.Repeat([]byte("y"), 200)
	if got := AppendString(nil, long); string(got[:2]) != "\xe0\xc8" || string(got[202:]) != "\x01\xca" {
		t.Errorf("AppendString(200 bytes) framing %q ... %q", got[:2], got[202:])
	}
}

func TestBacklen(t *testing.T) {
	for _, c := range []struct{ l, size int }{
		{0, 1}, {127, 1}, {128, 2}, {16382, 2}, {16383, 3}, {2097150, 3}, {2097151, 4},
		{268435454, 4}, {268435455, 5}, {1 << 30, 5},
	} {
		b := AppendBacklen(nil, c.l)
		if len(b) != c.size || BacklenSize(c.l) != c.size {
			t.Errorf("backlen of %d: %d bytes (BacklenSize %d), want %d", c.l, len(b), BacklenSize(c.l), c.size)
		}
		if v, ok := ReadBacklen(b); !ok || v != c.l {
			t.Errorf("ReadBacklen(%x) = %d, %v, want %d", b, v, ok, c.l)
		}
	}
	if got := AppendBacklen(nil, 300); string(got) != "\x02\xac" {
		t.Errorf("backlen 300 = %x", got)
	}
	// The first byte has no continuation flag, every other byte has one.
	for _, bad := range []string{"\x82\x81", "\x02\x01", "\x01\x81\x01"} {
		if _, ok := ReadBacklen([]byte(bad)); ok {
			t.Errorf("ReadBacklen(%x) accepted", bad)
		}
	}
}
