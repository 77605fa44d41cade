package node

import (
	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/commands/geo"
	"github.com/shoal-db/shoal/commands/stream"
)

// The key procedures of the commands whose keys the specs cannot locate
// exactly, by full command name; the key extractor itself is command.Keys.

// keyProcFlags returns, for key procedures that find keys no single key
// spec describes, the flags of such a key (Redis's procedures set them).
func keyProcFlags() map[string]func([][]byte, int) command.KeySpecFlag {
	return map[string]func([][]byte, int) command.KeySpecFlag{
		"sort": command.SortKeyFlags,
	}
}

// keyProcs returns the key procedures of commands whose keys the specs
// cannot locate exactly (Redis's getkeys_proc), by full command name.
func keyProcs() map[string]func([][]byte) ([]int, error) {
	return map[string]func([][]byte) ([]int, error){
		"sort":              command.SortKeys,
		"sort_ro":           command.SortROKeys,
		"georadius":         geo.RadiusKeys,
		"georadiusbymember": geo.RadiusByMemberKeys,
		// commands/stream: STREAMS found as Redis's xreadGetKeys
		// does, so a consumer named "streams" is not taken for it.
		"xread":      stream.KeyPositions,
		"xreadgroup": stream.KeyPositions,
		"migrate":    command.MigrateKeys,
	}
}
