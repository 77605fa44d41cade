package node

import (
	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/commands/geo"
	"github.com/shoal-db/shoal/commands/stream"
)

// This file is THE key extractor. Slot routing, CROSSSLOT, locking, COMMAND
// GETKEYS, and later WATCH, replication and ACL all find a command's keys
// through commandKeys; nothing else parses key positions.

var errKeySpec = command.ErrKeySpec

// commandKeys appends to dst the argument positions of spec's keys in args
// (args[0] is the command name; for subcommands args[1] is the
// subcommand). It returns errKeySpec when the arguments do not fit the key
// specs (e.g. a numkeys that is not a number), in which case the command's
// own argument checks will report the error.
func commandKeys(spec *command.Spec, args [][]byte, dst []int) ([]int, error) {
	if spec.GetKeys != nil {
		pos, err := spec.GetKeys(args)
		return append(dst, pos...), err
	}
	argc := len(args)
	for i := range spec.KeySpecs {
		ks := &spec.KeySpecs[i]
		if ks.Flags&command.KeyNotKey != 0 {
			continue
		}
		var first int
		switch ks.BeginSearch {
		case command.BeginIndex:
			if ks.Index >= argc {
				continue
			}
			first = ks.Index
		case command.BeginKeyword:
			first = findKeyword(args, ks.Keyword, ks.StartFrom)
			if first == 0 {
				continue
			}
		default:
			continue
		}
		var last, step int
		switch ks.FindKeys {
		case command.FindRange:
			switch {
			case ks.LastKey >= 0:
				last = first + ks.LastKey
			case ks.Limit == 0:
				last = argc + ks.LastKey
			default:
				last = first + ((argc-first)/ks.Limit + ks.LastKey)
			}
			step = ks.KeyStep
		case command.FindKeynum:
			idx := first + ks.KeynumIdx
			if idx >= argc {
				return dst, errKeySpec
			}
			n, ok := command.ParseInt64(args[idx])
			if !ok || n < 0 || n > int64(argc) {
				return dst, errKeySpec
			}
			first += ks.FirstKey
			last = first + int(n) - 1
			step = ks.KeyStep
		default:
			continue
		}
		if step <= 0 {
			step = 1
		}
		for p := first; p <= last; p += step {
			if p >= argc || p < first {
				// Commands of variable arity have no dispatch-time check
				// that the declared positions exist; the command itself
				// reports the error (Redis does the same).
				if spec.Arity < 0 {
					break
				}
				return dst, errKeySpec
			}
			dst = append(dst, p)
		}
	}
	return dst, nil
}

// findKeyword returns the position after the keyword, searching from
// startFrom (negative: from the end, backwards), or 0.
func findKeyword(args [][]byte, kw string, startFrom int) int {
	argc := len(args)
	start, end := startFrom, argc-1
	if startFrom <= 0 {
		start, end = argc+startFrom, 1
	}
	for i := start; ; {
		if i >= argc || i < 1 {
			return 0
		}
		if command.EqualFoldASCII(args[i], kw) {
			return i + 1
		}
		if i == end {
			return 0
		}
		if start <= end {
			i++
		} else {
			i--
		}
	}
}

// keyProcFlags returns, for key procedures that find keys no single key
// spec describes, the flags of such a key (Redis's procedures set them).
func keyProcFlags() map[string]func([][]byte, int) command.KeySpecFlag {
	return map[string]func([][]byte, int) command.KeySpecFlag{
		"sort": sortKeyFlags, // node/cmd_sort.go
	}
}

// keyProcs returns the key procedures of commands whose keys the specs
// cannot locate exactly (Redis's getkeys_proc), by full command name.
func keyProcs() map[string]func([][]byte) ([]int, error) {
	return map[string]func([][]byte) ([]int, error){
		"sort":              sortGetKeys,
		"sort_ro":           sortROGetKeys,
		"georadius":         geo.RadiusKeys,
		"georadiusbymember": geo.RadiusByMemberKeys,
		// commands/stream: STREAMS found as Redis's xreadGetKeys
		// does, so a consumer named "streams" is not taken for it.
		"xread":      stream.KeyPositions,
		"xreadgroup": stream.KeyPositions,
		"migrate":    migrateGetKeys, // node/cmd_migrate.go
	}
}
