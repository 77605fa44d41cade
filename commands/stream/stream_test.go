package stream

import (
	"slices"
	"strings"
	"testing"

	"github.com/shoal-db/shoal/store"
)

func TestParseStreamID(t *testing.T) {
	for _, c := range []struct {
		in     string
		ok     bool
		ms, sq uint64
	}{
		{"1-2", true, 1, 2}, {"5", true, 5, 0}, {"-", true, 0, 0}, {"+", true, 1<<64 - 1, 1<<64 - 1},
		{" 7-1", true, 7, 1}, {"+7-+1", true, 7, 1}, {"007-01", true, 7, 1}, {"1--1", false, 0, 0},
		{"1--01", true, 1, 1<<64 - 1}, {"1-", false, 0, 0}, {"-1", false, 0, 0}, {"x", false, 0, 0},
		{"18446744073709551616", false, 0, 0}, {"18446744073709551615-18446744073709551615", true, 1<<64 - 1, 1<<64 - 1},
		{"1-2 ", false, 0, 0}, {"1-2\x00junk", true, 1, 2}, {"", false, 0, 0},
	} {
		id, ok := parseStreamID([]byte(c.in), 0, false, nil)
		if ok != c.ok || ok && (id != store.StreamID{Ms: c.ms, Seq: c.sq}) {
			t.Errorf("parseStreamID(%q) = %v %v, want %v %d-%d", c.in, id, ok, c.ok, c.ms, c.sq)
		}
	}
	var given bool
	if id, ok := parseStreamID([]byte("5-*"), 0, true, &given); !ok || given || id.Ms != 5 {
		t.Fatal("ms-* form")
	}
	if _, ok := parseStreamID([]byte("5-*"), 0, true, nil); ok {
		t.Fatal("ms-* accepted outside XADD")
	}
	if _, ok := parseStreamID([]byte("+"), 0, true, nil); ok {
		t.Fatal("strict accepted +")
	}
}

func TestXReadKeyPositions(t *testing.T) {
	for _, c := range []struct {
		args string
		want []int
	}{
		{"XREAD STREAMS a b 0 0", []int{2, 3}},
		{"XREAD COUNT 1 BLOCK 0 STREAMS a 0", []int{6}},
		{"XREADGROUP GROUP g streams COUNT 1 STREAMS a >", []int{7}},
		{"XREAD STREAMS a", nil},
		{"XREAD FOO STREAMS a 0", nil},
	} {
		var args [][]byte
		for _, f := range strings.Fields(c.args) {
			args = append(args, []byte(f))
		}
		got, err := KeyPositions(args)
		if !slices.Equal(got, c.want) || (err != nil) != (c.want == nil) {
			t.Errorf("%s: %v %v, want %v", c.args, got, err, c.want)
		}
	}
}
