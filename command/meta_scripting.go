package command

// metaScripting returns the metadata of Redis 7.0's "scripting" group, as COMMAND INFO and
// COMMAND DOCS report it (see meta_table.go for the conventions).
func metaScripting() []*Spec {
	return []*Spec{
		{Name: "eval", Arity: -3, Flags: FlagNoscript | FlagStale | FlagSkipMonitor | FlagMayReplicate | FlagNoMandatoryKeys, ACL: CatScripting, // COMMAND shows movablekeys
			KeySpecs: []KeySpec{
				ksNote("We cannot tell how the keys will be used so we assume the worst, RW and UPDATE",
					ksIndexKeynum(KeyRW|KeyAccess|KeyUpdate, 2, 0, 1, 1)),
			},
			Doc: NewDoc("Execute a Lua script server side", "2.6.0", "scripting", "Depends on the script that is executed.")},
		{Name: "eval_ro", Arity: -3, Flags: FlagReadonly | FlagNoscript | FlagStale | FlagSkipMonitor | FlagNoMandatoryKeys, ACL: CatScripting, // COMMAND shows movablekeys
			KeySpecs: []KeySpec{
				ksNote("We cannot tell how the keys will be used so we assume the worst, RO and ACCESS",
					ksIndexKeynum(KeyRO|KeyAccess, 2, 0, 1, 1)),
			},
			Doc: NewDoc("Execute a read-only Lua script server side", "7.0.0", "scripting", "Depends on the script that is executed.")},
		{Name: "evalsha", Arity: -3, Flags: FlagNoscript | FlagStale | FlagSkipMonitor | FlagMayReplicate | FlagNoMandatoryKeys, ACL: CatScripting, // COMMAND shows movablekeys
			KeySpecs: []KeySpec{ksIndexKeynum(KeyRW|KeyAccess|KeyUpdate, 2, 0, 1, 1)},
			Doc:      NewDoc("Execute a Lua script server side", "2.6.0", "scripting", "Depends on the script that is executed.")},
		{Name: "evalsha_ro", Arity: -3, Flags: FlagReadonly | FlagNoscript | FlagStale | FlagSkipMonitor | FlagNoMandatoryKeys, ACL: CatScripting, // COMMAND shows movablekeys
			KeySpecs: []KeySpec{ksIndexKeynum(KeyRO|KeyAccess, 2, 0, 1, 1)},
			Doc:      NewDoc("Execute a read-only Lua script server side", "7.0.0", "scripting", "Depends on the script that is executed.")},
		{Name: "fcall", Arity: -3, Flags: FlagNoscript | FlagStale | FlagSkipMonitor | FlagMayReplicate | FlagNoMandatoryKeys, ACL: CatScripting, // COMMAND shows movablekeys
			KeySpecs: []KeySpec{
				ksNote("We cannot tell how the keys will be used so we assume the worst, RW and UPDATE",
					ksIndexKeynum(KeyRW|KeyAccess|KeyUpdate, 2, 0, 1, 1)),
			},
			Doc: NewDoc("Invoke a function", "7.0.0", "scripting", "Depends on the function that is executed.")},
		{Name: "fcall_ro", Arity: -3, Flags: FlagReadonly | FlagNoscript | FlagStale | FlagSkipMonitor | FlagNoMandatoryKeys, ACL: CatScripting, // COMMAND shows movablekeys
			KeySpecs: []KeySpec{
				ksNote("We cannot tell how the keys will be used so we assume the worst, RO and ACCESS",
					ksIndexKeynum(KeyRO|KeyAccess, 2, 0, 1, 1)),
			},
			Doc: NewDoc("Invoke a read-only function", "7.0.0", "scripting", "Depends on the function that is executed.")},
		{Name: "function", Arity: -2,
			Doc: NewDoc("A container for function commands", "7.0.0", "scripting", "Depends on subcommand."),
			Subcommands: subcommandMap([]*Spec{
				{Name: "delete", Arity: 3, Flags: FlagWrite | FlagNoscript, ACL: CatScripting,
					Tips: []string{"request_policy:all_shards", "response_policy:all_succeeded"},
					Doc:  NewDoc("Delete a function by name", "7.0.0", "scripting", "O(1)")},
				{Name: "dump", Arity: 2, Flags: FlagNoscript, ACL: CatScripting,
					Doc: NewDoc("Dump all functions into a serialized binary payload", "7.0.0", "scripting", "O(N) where N is the number of functions")},
				{Name: "flush", Arity: -2, Flags: FlagWrite | FlagNoscript, ACL: CatScripting,
					Tips: []string{"request_policy:all_shards", "response_policy:all_succeeded"},
					Doc:  NewDoc("Deleting all functions", "7.0.0", "scripting", "O(N) where N is the number of functions deleted")},
				{Name: "help", Arity: 2, Flags: FlagLoading | FlagStale, ACL: CatScripting,
					Doc: NewDoc("Show helpful text about the different subcommands", "7.0.0", "scripting", "O(1)")},
				{Name: "kill", Arity: 2, Flags: FlagNoscript | FlagAllowBusy, ACL: CatScripting,
					Tips: []string{"request_policy:all_shards", "response_policy:one_succeeded"},
					Doc:  NewDoc("Kill the function currently in execution.", "7.0.0", "scripting", "O(1)")},
				{Name: "list", Arity: -2, Flags: FlagNoscript, ACL: CatScripting,
					Tips: []string{"nondeterministic_output_order"},
					Doc:  NewDoc("List information about all the functions", "7.0.0", "scripting", "O(N) where N is the number of functions")},
				{Name: "load", Arity: -3, Flags: FlagWrite | FlagDenyOOM | FlagNoscript, ACL: CatScripting,
					Tips: []string{"request_policy:all_shards", "response_policy:all_succeeded"},
					Doc:  NewDoc("Create a function with the given arguments (name, code, description)", "7.0.0", "scripting", "O(1) (considering compilation time is redundant)")},
				{Name: "restore", Arity: -3, Flags: FlagWrite | FlagDenyOOM | FlagNoscript, ACL: CatScripting,
					Tips: []string{"request_policy:all_shards", "response_policy:all_succeeded"},
					Doc:  NewDoc("Restore all the functions on the given payload", "7.0.0", "scripting", "O(N) where N is the number of functions on the payload")},
				{Name: "stats", Arity: 2, Flags: FlagNoscript | FlagAllowBusy, ACL: CatScripting,
					Tips: []string{"nondeterministic_output", "request_policy:all_shards", "response_policy:special"},
					Doc:  NewDoc("Return information about the function currently running (name, description, duration)", "7.0.0", "scripting", "O(1)")},
			})},
		{Name: "script", Arity: -2,
			Doc: NewDoc("A container for Lua scripts management commands", "2.6.0", "scripting", "Depends on subcommand."),
			Subcommands: subcommandMap([]*Spec{
				{Name: "debug", Arity: 3, Flags: FlagNoscript, ACL: CatScripting,
					Doc: NewDoc("Set the debug mode for executed scripts.", "3.2.0", "scripting", "O(1)")},
				{Name: "exists", Arity: -3, Flags: FlagNoscript, ACL: CatScripting,
					Tips: []string{"request_policy:all_shards", "response_policy:agg_logical_and"},
					Doc:  NewDoc("Check existence of scripts in the script cache.", "2.6.0", "scripting", "O(N) with N being the number of scripts to check (so checking a single script is an O(1) operation).")},
				{Name: "flush", Arity: -2, Flags: FlagNoscript, ACL: CatScripting,
					Tips: []string{"request_policy:all_nodes", "response_policy:all_succeeded"},
					Doc:  NewDoc("Remove all the scripts from the script cache.", "2.6.0", "scripting", "O(N) with N being the number of scripts in cache")},
				{Name: "help", Arity: 2, Flags: FlagLoading | FlagStale, ACL: CatScripting,
					Doc: NewDoc("Show helpful text about the different subcommands", "5.0.0", "scripting", "O(1)")},
				{Name: "kill", Arity: 2, Flags: FlagNoscript | FlagAllowBusy, ACL: CatScripting,
					Tips: []string{"request_policy:all_shards", "response_policy:one_succeeded"},
					Doc:  NewDoc("Kill the script currently in execution.", "2.6.0", "scripting", "O(1)")},
				{Name: "load", Arity: 3, Flags: FlagNoscript | FlagStale, ACL: CatScripting,
					Tips: []string{"request_policy:all_nodes", "response_policy:all_succeeded"},
					Doc:  NewDoc("Load the specified Lua script into the script cache.", "2.6.0", "scripting", "O(N) with N being the length in bytes of the script body.")},
			})},
	}
}
