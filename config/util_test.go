package config

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSplitArgs(t *testing.T) {
	tests := []struct {
		line string
		want []string // nil = unbalanced quotes
	}{
		{"", []string{}},
		{"   \t ", []string{}},
		{"port 6379", []string{"port", "6379"}},
		{"  a   b\tc  ", []string{"a", "b", "c"}},
		{`save ""`, []string{"save", ""}},
		{`save ''`, []string{"save", ""}},
		{`a "b c" d`, []string{"a", "b c", "d"}},
		{`"\n\r\t\b\a\\\"\x41\x4a"`, []string{"\n\r\t\b\a\\\"AJ"}},
		{`"\xZZ"`, []string{"xZZ"}},
		{`"\q"`, []string{"q"}},
		{`'a\'b'`, []string{"a'b"}},
		{`'a\nb'`, []string{`a\nb`}},
		{`'a"b'`, []string{`a"b`}},
		{`"a'b"`, []string{`a'b`}},
		{`foo"bar"`, []string{"foobar"}},
		{`foo'bar' x`, []string{"foobar", "x"}},
		{`"a"	b`, []string{"a", "b"}},
		{"a\x00b c", []string{"a"}},
		{`"abc`, nil},
		{`"a"b`, nil},
		{`'abc`, nil},
		{`'a'b`, nil},
		{`"abc\`, nil},
		{`requirepass "a"b`, nil},
	}
	for _, tt := range tests {
		got, ok := SplitArgs(tt.line)
		if tt.want == nil {
			assert.False(t, ok, "%q", tt.line)
			continue
		}
		require.True(t, ok, "%q", tt.line)
		assert.Equal(t, tt.want, got, "%q", tt.line)
	}
}

func TestRepr(t *testing.T) {
	assert.Equal(t, `"abc"`, Repr("abc"))
	assert.Equal(t, `""`, Repr(""))
	assert.Equal(t, `"a\"b\\c\n\r\t\a\b\x00\xff~"`, Repr("a\"b\\c\n\r\t\a\b\x00\xff~"))
	for _, s := range []string{"", "x y", "\x01\x7f\x80 \"'\\", "{title} {listen-addr}"} {
		got, ok := SplitArgs(Repr(s))
		require.True(t, ok)
		assert.Equal(t, []string{s}, got)
	}
}

func TestMemtoull(t *testing.T) {
	ok := map[string]uint64{"0": 0, "": 0, "1": 1, "5b": 5, "5B": 5, "1k": 1000, "1K": 1000, "1kb": 1024,
		"1KB": 1024, "1m": 1000000, "1mb": 1 << 20, "1Mb": 1 << 20, "1g": 1000000000, "1gb": 1 << 30,
		"1GB": 1 << 30, "k": 0, "18446744073709551615": math.MaxUint64}
	for s, want := range ok {
		v, good := memtoull(s)
		assert.True(t, good, s)
		assert.Equal(t, want, v, s)
	}
	for _, s := range []string{"-1", "1tb", "1 kb", " 1", "+1", "1.5gb", "abc", "1kbb"} {
		_, good := memtoull(s)
		assert.False(t, good, s)
	}
}

func TestCStrtoll(t *testing.T) {
	v, end, erange := cStrtoll("  -12x", 10)
	assert.Equal(t, int64(-12), v)
	assert.Equal(t, 5, end)
	assert.False(t, erange)
	v, end, _ = cStrtoll("abc", 10)
	assert.Equal(t, int64(0), v)
	assert.Equal(t, 0, end)
	v, _, erange = cStrtoll("99999999999999999999", 10)
	assert.Equal(t, int64(math.MaxInt64), v)
	assert.True(t, erange)
	v, end, _ = cStrtoll("0778", 8)
	assert.Equal(t, int64(0o77), v)
	assert.Equal(t, 3, end)
	n, ok := strtollFull("")
	assert.True(t, ok)
	assert.Equal(t, int64(0), n)
}

func TestFormatMemory(t *testing.T) {
	assert.Equal(t, "0", formatMemory(0))
	assert.Equal(t, "1gb", formatMemory(1<<30))
	assert.Equal(t, "3mb", formatMemory(3<<20))
	assert.Equal(t, "2kb", formatMemory(2048))
	assert.Equal(t, "1000", formatMemory(1000))
	assert.Equal(t, "1025kb", formatMemory(1025*1024))
}

func TestFormatPercentile(t *testing.T) {
	assert.Equal(t, "50", FormatPercentile(50))
	assert.Equal(t, "99.9", FormatPercentile(99.9))
	assert.Equal(t, "0.0001", FormatPercentile(0.0001))
	assert.Equal(t, "0", FormatPercentile(0.0000001))
}
