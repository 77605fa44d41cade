package command

// metaBitmap returns the metadata of Redis 7.0's "bitmap" group, as COMMAND INFO and
// COMMAND DOCS report it (see meta_table.go for the conventions).
func metaBitmap() []*Spec {
	return []*Spec{
		{Name: "bitcount", Arity: -2, Flags: FlagReadonly, ACL: CatBitmap,
			KeySpecs: []KeySpec{ksIndexRange(KeyRO|KeyAccess, 1, 0, 1, 0)},
			Doc:      NewDoc("Count set bits in a string", "2.6.0", "bitmap", "O(N)")},
		{Name: "bitfield", Arity: -2, Flags: FlagWrite | FlagDenyOOM, ACL: CatBitmap,
			KeySpecs: []KeySpec{
				ksNote("This command allows both access and modification of the key",
					ksIndexRange(KeyRW|KeyAccess|KeyUpdate|KeyVariableFlags, 1, 0, 1, 0)),
			},
			Doc: NewDoc("Perform arbitrary bitfield integer operations on strings", "3.2.0", "bitmap", "O(1) for each subcommand specified")},
		{Name: "bitfield_ro", Arity: -2, Flags: FlagReadonly | FlagFast, ACL: CatBitmap,
			KeySpecs: []KeySpec{ksIndexRange(KeyRO|KeyAccess, 1, 0, 1, 0)},
			Doc:      NewDoc("Perform arbitrary bitfield integer operations on strings. Read-only variant of BITFIELD", "6.0.0", "bitmap", "O(1) for each subcommand specified")},
		{Name: "bitop", Arity: -4, Flags: FlagWrite | FlagDenyOOM, ACL: CatBitmap,
			KeySpecs: []KeySpec{
				ksIndexRange(KeyOW|KeyUpdate, 2, 0, 1, 0),
				ksIndexRange(KeyRO|KeyAccess, 3, -1, 1, 0),
			},
			Doc: NewDoc("Perform bitwise operations between strings", "2.6.0", "bitmap", "O(N)")},
		{Name: "bitpos", Arity: -3, Flags: FlagReadonly, ACL: CatBitmap,
			KeySpecs: []KeySpec{ksIndexRange(KeyRO|KeyAccess, 1, 0, 1, 0)},
			Doc:      NewDoc("Find first bit set or clear in a string", "2.8.7", "bitmap", "O(N)")},
		{Name: "getbit", Arity: 3, Flags: FlagReadonly | FlagFast, ACL: CatBitmap,
			KeySpecs: []KeySpec{ksIndexRange(KeyRO|KeyAccess, 1, 0, 1, 0)},
			Doc:      NewDoc("Returns the bit value at offset in the string value stored at key", "2.2.0", "bitmap", "O(1)")},
		{Name: "setbit", Arity: 4, Flags: FlagWrite | FlagDenyOOM, ACL: CatBitmap,
			KeySpecs: []KeySpec{ksIndexRange(KeyRW|KeyAccess|KeyUpdate, 1, 0, 1, 0)},
			Doc:      NewDoc("Sets or clears the bit at offset in the string value stored at key", "2.2.0", "bitmap", "O(1)")},
	}
}
