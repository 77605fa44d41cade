package node

import "github.com/shoal-db/shoal/command"

// metaBitmap returns the metadata of Redis 7.0's "bitmap" group, as COMMAND INFO and
// COMMAND DOCS report it (see commandmeta.go for the conventions).
func metaBitmap() []*command.Spec {
	return []*command.Spec{
		{Name: "bitcount", Arity: -2, Flags: command.FlagReadonly, ACL: command.CatBitmap,
			KeySpecs: []command.KeySpec{ksIndexRange(command.KeyRO|command.KeyAccess, 1, 0, 1, 0)},
			Doc:      cmdDoc("Count set bits in a string", "2.6.0", "bitmap", "O(N)")},
		{Name: "bitfield", Arity: -2, Flags: command.FlagWrite | command.FlagDenyOOM, ACL: command.CatBitmap,
			KeySpecs: []command.KeySpec{
				ksNote("This command allows both access and modification of the key",
					ksIndexRange(command.KeyRW|command.KeyAccess|command.KeyUpdate|command.KeyVariableFlags, 1, 0, 1, 0)),
			},
			Doc: cmdDoc("Perform arbitrary bitfield integer operations on strings", "3.2.0", "bitmap", "O(1) for each subcommand specified")},
		{Name: "bitfield_ro", Arity: -2, Flags: command.FlagReadonly | command.FlagFast, ACL: command.CatBitmap,
			KeySpecs: []command.KeySpec{ksIndexRange(command.KeyRO|command.KeyAccess, 1, 0, 1, 0)},
			Doc:      cmdDoc("Perform arbitrary bitfield integer operations on strings. Read-only variant of BITFIELD", "6.0.0", "bitmap", "O(1) for each subcommand specified")},
		{Name: "bitop", Arity: -4, Flags: command.FlagWrite | command.FlagDenyOOM, ACL: command.CatBitmap,
			KeySpecs: []command.KeySpec{
				ksIndexRange(command.KeyOW|command.KeyUpdate, 2, 0, 1, 0),
				ksIndexRange(command.KeyRO|command.KeyAccess, 3, -1, 1, 0),
			},
			Doc: cmdDoc("Perform bitwise operations between strings", "2.6.0", "bitmap", "O(N)")},
		{Name: "bitpos", Arity: -3, Flags: command.FlagReadonly, ACL: command.CatBitmap,
			KeySpecs: []command.KeySpec{ksIndexRange(command.KeyRO|command.KeyAccess, 1, 0, 1, 0)},
			Doc:      cmdDoc("Find first bit set or clear in a string", "2.8.7", "bitmap", "O(N)")},
		{Name: "getbit", Arity: 3, Flags: command.FlagReadonly | command.FlagFast, ACL: command.CatBitmap,
			KeySpecs: []command.KeySpec{ksIndexRange(command.KeyRO|command.KeyAccess, 1, 0, 1, 0)},
			Doc:      cmdDoc("Returns the bit value at offset in the string value stored at key", "2.2.0", "bitmap", "O(1)")},
		{Name: "setbit", Arity: 4, Flags: command.FlagWrite | command.FlagDenyOOM, ACL: command.CatBitmap,
			KeySpecs: []command.KeySpec{ksIndexRange(command.KeyRW|command.KeyAccess|command.KeyUpdate, 1, 0, 1, 0)},
			Doc:      cmdDoc("Sets or clears the bit at offset in the string value stored at key", "2.2.0", "bitmap", "O(1)")},
	}
}
