package migrate

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func args(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		out = append(out, []byte(f))
	}
	return out
}

func TestParseMigrateSlots(t *testing.T) {
	specs, err := ParseMigrateSlots(args("SLOTSRANGE 20 29 0 9 NODE a slotsrange 10 19 node b"))
	require.NoError(t, err)
	require.Len(t, specs, 2)
	require.Equal(t, "a", specs[0].Target)
	require.Equal(t, 20, len(specs[0].Slots))
	require.Equal(t, 0, specs[0].Slots[0], "slots are sorted")
	require.Equal(t, "0-9 20-29", formatRanges(specs[0].Slots))
	require.Equal(t, "10-19", formatRanges(specs[1].Slots))

	for in, want := range map[string]string{
		"":                          "ERR syntax error",
		"NODE a":                    "ERR syntax error",
		"SLOTSRANGE 1 2":            "ERR syntax error",
		"SLOTSRANGE 1 2 NODE":       "ERR syntax error",
		"SLOTSRANGE 1 NODE a":       "ERR syntax error",
		"SLOTSRANGE NODE a":         "ERR syntax error",
		"SLOTSRANGE 1 x NODE a":     "ERR Invalid or out of range slot",
		"SLOTSRANGE -1 2 NODE a":    "ERR Invalid or out of range slot",
		"SLOTSRANGE 1 16384 NODE a": "ERR Invalid or out of range slot",
		"SLOTSRANGE 5 1 NODE a":     "ERR start slot number 5 is greater than end slot number 1",
		"SLOTSRANGE 1 5 4 6 NODE a": "ERR Slot 4 specified multiple times",
		"SLOTSRANGE 1 5 NODE a SLOTSRANGE 5 5 NODE b": "ERR Slot 5 specified multiple times",
	} {
		_, err := ParseMigrateSlots(args(in))
		require.EqualError(t, err, want, in)
	}
}

func TestParseImportRanges(t *testing.T) {
	list, err := ParseImportRanges(args("5 7 0 1 6 8"))
	require.NoError(t, err)
	require.Equal(t, []int{0, 1, 5, 6, 7, 8}, list)
	require.Equal(t, [][]byte{[]byte("0"), []byte("1"), []byte("5"), []byte("8")}, rangeArgs(list))
	_, err = ParseImportRanges(args("1"))
	require.Error(t, err)
}
