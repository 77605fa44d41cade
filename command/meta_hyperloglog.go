package command

// metaHyperLogLog returns the metadata of Redis 7.0's "hyperloglog" group, as COMMAND INFO and
// COMMAND DOCS report it (see meta_table.go for the conventions).
func metaHyperLogLog() []*Spec {
	return []*Spec{
		{Name: "pfadd", Arity: -2, Flags: FlagWrite | FlagDenyOOM | FlagFast, ACL: CatHyperLogLog,
			KeySpecs: []KeySpec{ksIndexRange(KeyRW|KeyInsert, 1, 0, 1, 0)},
			Doc:      NewDoc("Adds the specified elements to the specified HyperLogLog.", "2.8.9", "hyperloglog", "O(1) to add every element.")},
		{Name: "pfcount", Arity: -2, Flags: FlagReadonly | FlagMayReplicate, ACL: CatHyperLogLog,
			KeySpecs: []KeySpec{
				ksNote("RW because it may change the internal representation of the key, and propagate to replicas",
					ksIndexRange(KeyRW|KeyAccess, 1, -1, 1, 0)),
			},
			Doc: NewDoc("Return the approximated cardinality of the set(s) observed by the HyperLogLog at key(s).", "2.8.9", "hyperloglog", "O(1) with a very small average constant time when called with a single key. O(N) with N being the number of keys, and much bigger constant times, when called with multiple keys.")},
		{Name: "pfdebug", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagAdmin, ACL: CatHyperLogLog,
			KeySpecs: []KeySpec{ksIndexRange(KeyRW|KeyAccess, 2, 0, 1, 0)},
			Doc:      syscmdDoc(NewDoc("Internal commands for debugging HyperLogLog values", "2.8.9", "hyperloglog", "N/A"))},
		{Name: "pfmerge", Arity: -2, Flags: FlagWrite | FlagDenyOOM, ACL: CatHyperLogLog,
			KeySpecs: []KeySpec{
				ksIndexRange(KeyRW|KeyAccess|KeyInsert, 1, 0, 1, 0),
				ksIndexRange(KeyRO|KeyAccess, 2, -1, 1, 0),
			},
			Doc: NewDoc("Merge N different HyperLogLogs into a single one.", "2.8.9", "hyperloglog", "O(N) to merge N HyperLogLogs, but with high constant times.")},
		{Name: "pfselftest", Arity: 1, Flags: FlagAdmin, ACL: CatHyperLogLog,
			Doc: syscmdDoc(NewDoc("An internal command for testing HyperLogLog values", "2.8.9", "hyperloglog", "N/A"))},
	}
}
