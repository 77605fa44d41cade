package node

import "github.com/shoal-db/shoal/command"

// metaHyperLogLog returns the metadata of Redis 7.0's "hyperloglog" group, as COMMAND INFO and
// COMMAND DOCS report it (see commandmeta.go for the conventions).
func metaHyperLogLog() []*command.Spec {
	return []*command.Spec{
		{Name: "pfadd", Arity: -2, Flags: command.FlagWrite | command.FlagDenyOOM | command.FlagFast, ACL: command.CatHyperLogLog,
			KeySpecs: []command.KeySpec{ksIndexRange(command.KeyRW|command.KeyInsert, 1, 0, 1, 0)},
			Doc:      cmdDoc("Adds the specified elements to the specified HyperLogLog.", "2.8.9", "hyperloglog", "O(1) to add every element.")},
		{Name: "pfcount", Arity: -2, Flags: command.FlagReadonly | command.FlagMayReplicate, ACL: command.CatHyperLogLog,
			KeySpecs: []command.KeySpec{
				ksNote("RW because it may change the internal representation of the key, and propagate to replicas",
					ksIndexRange(command.KeyRW|command.KeyAccess, 1, -1, 1, 0)),
			},
			Doc: cmdDoc("Return the approximated cardinality of the set(s) observed by the HyperLogLog at key(s).", "2.8.9", "hyperloglog", "O(1) with a very small average constant time when called with a single key. O(N) with N being the number of keys, and much bigger constant times, when called with multiple keys.")},
		{Name: "pfdebug", Arity: 3, Flags: command.FlagWrite | command.FlagDenyOOM | command.FlagAdmin, ACL: command.CatHyperLogLog,
			KeySpecs: []command.KeySpec{ksIndexRange(command.KeyRW|command.KeyAccess, 2, 0, 1, 0)},
			Doc:      syscmdDoc(cmdDoc("Internal commands for debugging HyperLogLog values", "2.8.9", "hyperloglog", "N/A"))},
		{Name: "pfmerge", Arity: -2, Flags: command.FlagWrite | command.FlagDenyOOM, ACL: command.CatHyperLogLog,
			KeySpecs: []command.KeySpec{
				ksIndexRange(command.KeyRW|command.KeyAccess|command.KeyInsert, 1, 0, 1, 0),
				ksIndexRange(command.KeyRO|command.KeyAccess, 2, -1, 1, 0),
			},
			Doc: cmdDoc("Merge N different HyperLogLogs into a single one.", "2.8.9", "hyperloglog", "O(N) to merge N HyperLogLogs, but with high constant times.")},
		{Name: "pfselftest", Arity: 1, Flags: command.FlagAdmin, ACL: command.CatHyperLogLog,
			Doc: syscmdDoc(cmdDoc("An internal command for testing HyperLogLog values", "2.8.9", "hyperloglog", "N/A"))},
	}
}
