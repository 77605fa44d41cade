package command

// This file is THE key extractor. Slot routing, CROSSSLOT, locking, COMMAND
// GETKEYS, and later WATCH, replication and ACL all find a command's keys
// through Keys; nothing else parses key positions. The key procedures of
// commands whose keys the specs cannot locate exactly (Redis's
// getkeys_proc) that need no server state are here too; node attaches them
// (with those of commands/geo and commands/stream) by name when it builds
// its table.

// Keys appends to dst the argument positions of spec's keys in args
// (args[0] is the command name; for subcommands args[1] is the
// subcommand). It returns ErrKeySpec when the arguments do not fit the key
// specs (e.g. a numkeys that is not a number), in which case the command's
// own argument checks will report the error.
func Keys(spec *Spec, args [][]byte, dst []int) ([]int, error) {
	if spec.GetKeys != nil {
		pos, err := spec.GetKeys(args)
		return append(dst, pos...), err
	}
	kc := keyCollector{pos: dst}
	err := kc.walk(spec.KeySpecs, args, spec.Arity)
	return kc.pos, err
}

// KeyRef is a key's position in a command's arguments and the flags of the
// key spec that found it.
type KeyRef struct {
	Pos   int
	Flags KeySpecFlag
}

// KeyRefs is Keys with each key's flags, as Redis's
// getKeysFromCommandWithSpecs gives them to the ACL checks: one entry per
// key a spec finds, with that spec's flags. For a command with a key
// procedure (GetKeys), a position takes the flags of the first spec that
// finds it alone, else GetKeyFlags's, else the first spec's. The flags of
// variable_flags specs are the caller's to refine.
func KeyRefs(spec *Spec, args [][]byte, dst []KeyRef) ([]KeyRef, error) {
	if spec.GetKeys == nil {
		kc := keyCollector{refs: dst, withFlags: true}
		if err := kc.walk(spec.KeySpecs, args, spec.Arity); err != nil {
			return dst[:0], err
		}
		return kc.refs, nil
	}
	pos, err := spec.GetKeys(args)
	for _, p := range pos {
		dst = append(dst, KeyRef{Pos: p, Flags: procKeyFlags(spec, args, p)})
	}
	return dst, err
}

// procKeyFlags attributes a position a key procedure found to a key spec.
func procKeyFlags(spec *Spec, args [][]byte, p int) KeySpecFlag {
	var buf [8]int
	for i := range spec.KeySpecs {
		kc := keyCollector{pos: buf[:0]}
		if kc.walk(spec.KeySpecs[i:i+1], args, spec.Arity) != nil {
			continue
		}
		for _, q := range kc.pos {
			if q == p {
				return spec.KeySpecs[i].Flags
			}
		}
	}
	if spec.GetKeyFlags != nil {
		return spec.GetKeyFlags(args, p)
	}
	if len(spec.KeySpecs) > 0 {
		return spec.KeySpecs[0].Flags
	}
	return 0
}

// keyCollector gathers what the key-spec walk finds: positions, or
// positions with their spec's flags.
type keyCollector struct {
	pos       []int
	refs      []KeyRef
	withFlags bool
}

// walk runs the key specs over args (arity is the command's, for the
// variable-arity rule below).
func (kc *keyCollector) walk(specs []KeySpec, args [][]byte, arity int) error {
	argc := len(args)
	for i := range specs {
		ks := &specs[i]
		if ks.Flags&KeyNotKey != 0 {
			continue
		}
		var first int
		switch ks.BeginSearch {
		case BeginIndex:
			if ks.Index >= argc {
				continue
			}
			first = ks.Index
		case BeginKeyword:
			first = findKeyword(args, ks.Keyword, ks.StartFrom)
			if first == 0 {
				continue
			}
		default:
			continue
		}
		var last, step int
		switch ks.FindKeys {
		case FindRange:
			switch {
			case ks.LastKey >= 0:
				last = first + ks.LastKey
			case ks.Limit == 0:
				last = argc + ks.LastKey
			default:
				last = first + ((argc-first)/ks.Limit + ks.LastKey)
			}
			step = ks.KeyStep
		case FindKeynum:
			idx := first + ks.KeynumIdx
			if idx >= argc {
				return ErrKeySpec
			}
			n, ok := ParseInt64(args[idx])
			if !ok || n < 0 || n > int64(argc) {
				return ErrKeySpec
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
		if kc.withFlags && (last >= argc || last < first || first >= argc) {
			// Redis's getKeysUsingKeySpecs calls this an invalid spec
			// and finds no keys (the command reports the syntax error).
			return ErrKeySpec
		}
		for p := first; p <= last; p += step {
			if p >= argc || p < first {
				// Commands of variable arity have no dispatch-time check
				// that the declared positions exist; the command itself
				// reports the error (Redis does the same).
				if arity < 0 {
					break
				}
				return ErrKeySpec
			}
			if kc.withFlags {
				kc.refs = append(kc.refs, KeyRef{Pos: p, Flags: ks.Flags})
			} else {
				kc.pos = append(kc.pos, p)
			}
		}
	}
	return nil
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
		if EqualFoldASCII(args[i], kw) {
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

// SortKeys is Redis's sortGetKeys: the sorted key, and the destination
// of the last STORE option. Options are skipped by their argument counts
// (LIMIT 2, GET and BY 1); any other word is taken as an option without
// argument, so "STORE" is recognised wherever it appears.
func SortKeys(args [][]byte) ([]int, error) {
	keys := []int{1}
	store := 0
	for i := 2; i < len(args); i++ {
		switch {
		case ArgIs(args[i], "limit"):
			i += 2
		case ArgIs(args[i], "get"), ArgIs(args[i], "by"):
			i++
		case ArgIs(args[i], "store") && i+1 < len(args):
			store = i + 1
		}
	}
	if store != 0 {
		keys = append(keys, store)
	}
	return keys, nil
}

// SortKeyFlags: the sorted key is read, the STORE destination overwritten
// (Redis's sortGetKeys: CMD_KEY_RO|CMD_KEY_ACCESS, CMD_KEY_OW|CMD_KEY_UPDATE).
func SortKeyFlags(_ [][]byte, pos int) KeySpecFlag {
	if pos == 1 {
		return KeyRO | KeyAccess
	}
	return KeyOW | KeyUpdate
}

// SortROKeys: SORT_RO has no destination.
func SortROKeys(args [][]byte) ([]int, error) { return []int{1}, nil }

// MigrateKeys is Redis's migrateGetKeys: the key argument, or with the
// KEYS option every argument after it (the empty key argument then names
// no key). AUTH and AUTH2 values are skipped so that a password "keys" is
// not taken for the option.
func MigrateKeys(args [][]byte) ([]int, error) {
	first, num := 3, 1
	for i := 6; i < len(args); i++ {
		switch a := args[i]; {
		case ArgIs(a, "keys"):
			if len(args[3]) != 0 {
				return nil, nil
			}
			first, num = i+1, len(args)-i-1
			i = len(args)
		case ArgIs(a, "auth"):
			i++
		case ArgIs(a, "auth2"):
			i += 2
		}
	}
	keys := make([]int, num)
	for j := range keys {
		keys[j] = first + j
	}
	return keys, nil
}
