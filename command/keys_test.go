package command

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// specByName finds a top-level spec of the metadata table, its key
// procedure attached as node attaches it.
func specByName(t *testing.T, name string) *Spec {
	t.Helper()
	procs := map[string]func([][]byte) ([]int, error){"sort": SortKeys, "sort_ro": SortROKeys, "migrate": MigrateKeys}
	for _, s := range AllMeta() {
		if s.Name == name {
			s.SetParent(nil)
			s.GetKeys = procs[name]
			s.Derive()
			return s
		}
	}
	t.Fatalf("no spec %q", name)
	return nil
}

func argv(line string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(line) {
		if f == `""` {
			f = ""
		}
		out = append(out, []byte(f))
	}
	return out
}

// TestKeys checks the key extractor on each kind of key spec (index and
// keyword begin-search, range and keynum find-keys) and on key procedures,
// with the positions Redis 7.0.15's COMMAND GETKEYS reports.
func TestKeys(t *testing.T) {
	cases := []struct {
		line string
		want []int
		err  error
	}{
		{"get k", []int{1}, nil},
		{"mset a 1 b 2 c 3", []int{1, 3, 5}, nil},
		{"bitop and dest s1 s2", []int{2, 3, 4}, nil},
		{"zunionstore dst 2 a b weights 1 2", []int{1, 3, 4}, nil},
		{"zunionstore dst x a b", nil, ErrKeySpec},
		{"lmpop 2 a b left count 3", []int{2, 3}, nil},
		{"sort s by w get g store d", []int{1, 7}, nil},
		{"sort_ro s store d", []int{1}, nil},
		{"migrate h 1 \"\" 0 10 auth keys keys a b", []int{9, 10}, nil},
		{"migrate h 1 k 0 10", []int{3}, nil},
	}
	for _, tc := range cases {
		args := argv(tc.line)
		got, err := Keys(specByName(t, string(args[0])), args, nil)
		if !errors.Is(err, tc.err) || tc.err == nil && !slices.Equal(got, tc.want) {
			t.Errorf("Keys(%q) = %v, %v; want %v, %v", tc.line, got, err, tc.want, tc.err)
		}
	}
}
