package node

import "github.com/shoal-db/shoal/command"

// metaScripting returns the metadata of Redis 7.0's "scripting" group, as COMMAND INFO and
// COMMAND DOCS report it (see commandmeta.go for the conventions).
func metaScripting() []*command.Spec {
	return []*command.Spec{
		{Name: "eval", Arity: -3, Flags: command.FlagNoscript | command.FlagStale | command.FlagSkipMonitor | command.FlagMayReplicate | command.FlagNoMandatoryKeys, ACL: command.CatScripting, // COMMAND shows movablekeys
			KeySpecs: []command.KeySpec{
				ksNote("We cannot tell how the keys will be used so we assume the worst, RW and UPDATE",
					ksIndexKeynum(command.KeyRW|command.KeyAccess|command.KeyUpdate, 2, 0, 1, 1)),
			},
			Doc: cmdDoc("Execute a Lua script server side", "2.6.0", "scripting", "Depends on the script that is executed.")},
		{Name: "eval_ro", Arity: -3, Flags: command.FlagReadonly | command.FlagNoscript | command.FlagStale | command.FlagSkipMonitor | command.FlagNoMandatoryKeys, ACL: command.CatScripting, // COMMAND shows movablekeys
			KeySpecs: []command.KeySpec{
				ksNote("We cannot tell how the keys will be used so we assume the worst, RO and ACCESS",
					ksIndexKeynum(command.KeyRO|command.KeyAccess, 2, 0, 1, 1)),
			},
			Doc: cmdDoc("Execute a read-only Lua script server side", "7.0.0", "scripting", "Depends on the script that is executed.")},
		{Name: "evalsha", Arity: -3, Flags: command.FlagNoscript | command.FlagStale | command.FlagSkipMonitor | command.FlagMayReplicate | command.FlagNoMandatoryKeys, ACL: command.CatScripting, // COMMAND shows movablekeys
			KeySpecs: []command.KeySpec{ksIndexKeynum(command.KeyRW|command.KeyAccess|command.KeyUpdate, 2, 0, 1, 1)},
			Doc:      cmdDoc("Execute a Lua script server side", "2.6.0", "scripting", "Depends on the script that is executed.")},
		{Name: "evalsha_ro", Arity: -3, Flags: command.FlagReadonly | command.FlagNoscript | command.FlagStale | command.FlagSkipMonitor | command.FlagNoMandatoryKeys, ACL: command.CatScripting, // COMMAND shows movablekeys
			KeySpecs: []command.KeySpec{ksIndexKeynum(command.KeyRO|command.KeyAccess, 2, 0, 1, 1)},
			Doc:      cmdDoc("Execute a read-only Lua script server side", "7.0.0", "scripting", "Depends on the script that is executed.")},
		{Name: "fcall", Arity: -3, Flags: command.FlagNoscript | command.FlagStale | command.FlagSkipMonitor | command.FlagMayReplicate | command.FlagNoMandatoryKeys, ACL: command.CatScripting, // COMMAND shows movablekeys
			KeySpecs: []command.KeySpec{
				ksNote("We cannot tell how the keys will be used so we assume the worst, RW and UPDATE",
					ksIndexKeynum(command.KeyRW|command.KeyAccess|command.KeyUpdate, 2, 0, 1, 1)),
			},
			Doc: cmdDoc("Invoke a function", "7.0.0", "scripting", "Depends on the function that is executed.")},
		{Name: "fcall_ro", Arity: -3, Flags: command.FlagReadonly | command.FlagNoscript | command.FlagStale | command.FlagSkipMonitor | command.FlagNoMandatoryKeys, ACL: command.CatScripting, // COMMAND shows movablekeys
			KeySpecs: []command.KeySpec{
				ksNote("We cannot tell how the keys will be used so we assume the worst, RO and ACCESS",
					ksIndexKeynum(command.KeyRO|command.KeyAccess, 2, 0, 1, 1)),
			},
			Doc: cmdDoc("Invoke a read-only function", "7.0.0", "scripting", "Depends on the function that is executed.")},
		{Name: "function", Arity: -2,
			Doc: cmdDoc("A container for function commands", "7.0.0", "scripting", "Depends on subcommand."),
			Subcommands: subcommandMap([]*command.Spec{
				{Name: "delete", Arity: 3, Flags: command.FlagWrite | command.FlagNoscript, ACL: command.CatScripting,
					Tips: []string{"request_policy:all_shards", "response_policy:all_succeeded"},
					Doc:  cmdDoc("Delete a function by name", "7.0.0", "scripting", "O(1)")},
				{Name: "dump", Arity: 2, Flags: command.FlagNoscript, ACL: command.CatScripting,
					Doc: cmdDoc("Dump all functions into a serialized binary payload", "7.0.0", "scripting", "O(N) where N is the number of functions")},
				{Name: "flush", Arity: -2, Flags: command.FlagWrite | command.FlagNoscript, ACL: command.CatScripting,
					Tips: []string{"request_policy:all_shards", "response_policy:all_succeeded"},
					Doc:  cmdDoc("Deleting all functions", "7.0.0", "scripting", "O(N) where N is the number of functions deleted")},
				{Name: "help", Arity: 2, Flags: command.FlagLoading | command.FlagStale, ACL: command.CatScripting,
					Doc: cmdDoc("Show helpful text about the different subcommands", "7.0.0", "scripting", "O(1)")},
				{Name: "kill", Arity: 2, Flags: command.FlagNoscript | command.FlagAllowBusy, ACL: command.CatScripting,
					Tips: []string{"request_policy:all_shards", "response_policy:one_succeeded"},
					Doc:  cmdDoc("Kill the function currently in execution.", "7.0.0", "scripting", "O(1)")},
				{Name: "list", Arity: -2, Flags: command.FlagNoscript, ACL: command.CatScripting,
					Tips: []string{"nondeterministic_output_order"},
					Doc:  cmdDoc("List information about all the functions", "7.0.0", "scripting", "O(N) where N is the number of functions")},
				{Name: "load", Arity: -3, Flags: command.FlagWrite | command.FlagDenyOOM | command.FlagNoscript, ACL: command.CatScripting,
					Tips: []string{"request_policy:all_shards", "response_policy:all_succeeded"},
					Doc:  cmdDoc("Create a function with the given arguments (name, code, description)", "7.0.0", "scripting", "O(1) (considering compilation time is redundant)")},
				{Name: "restore", Arity: -3, Flags: command.FlagWrite | command.FlagDenyOOM | command.FlagNoscript, ACL: command.CatScripting,
					Tips: []string{"request_policy:all_shards", "response_policy:all_succeeded"},
					Doc:  cmdDoc("Restore all the functions on the given payload", "7.0.0", "scripting", "O(N) where N is the number of functions on the payload")},
				{Name: "stats", Arity: 2, Flags: command.FlagNoscript | command.FlagAllowBusy, ACL: command.CatScripting,
					Tips: []string{"nondeterministic_output", "request_policy:all_shards", "response_policy:special"},
					Doc:  cmdDoc("Return information about the function currently running (name, description, duration)", "7.0.0", "scripting", "O(1)")},
			})},
		{Name: "script", Arity: -2,
			Doc: cmdDoc("A container for Lua scripts management commands", "2.6.0", "scripting", "Depends on subcommand."),
			Subcommands: subcommandMap([]*command.Spec{
				{Name: "debug", Arity: 3, Flags: command.FlagNoscript, ACL: command.CatScripting,
					Doc: cmdDoc("Set the debug mode for executed scripts.", "3.2.0", "scripting", "O(1)")},
				{Name: "exists", Arity: -3, Flags: command.FlagNoscript, ACL: command.CatScripting,
					Tips: []string{"request_policy:all_shards", "response_policy:agg_logical_and"},
					Doc:  cmdDoc("Check existence of scripts in the script cache.", "2.6.0", "scripting", "O(N) with N being the number of scripts to check (so checking a single script is an O(1) operation).")},
				{Name: "flush", Arity: -2, Flags: command.FlagNoscript, ACL: command.CatScripting,
					Tips: []string{"request_policy:all_nodes", "response_policy:all_succeeded"},
					Doc:  cmdDoc("Remove all the scripts from the script cache.", "2.6.0", "scripting", "O(N) with N being the number of scripts in cache")},
				{Name: "help", Arity: 2, Flags: command.FlagLoading | command.FlagStale, ACL: command.CatScripting,
					Doc: cmdDoc("Show helpful text about the different subcommands", "5.0.0", "scripting", "O(1)")},
				{Name: "kill", Arity: 2, Flags: command.FlagNoscript | command.FlagAllowBusy, ACL: command.CatScripting,
					Tips: []string{"request_policy:all_shards", "response_policy:one_succeeded"},
					Doc:  cmdDoc("Kill the script currently in execution.", "2.6.0", "scripting", "O(1)")},
				{Name: "load", Arity: 3, Flags: command.FlagNoscript | command.FlagStale, ACL: command.CatScripting,
					Tips: []string{"request_policy:all_nodes", "response_policy:all_succeeded"},
					Doc:  cmdDoc("Load the specified Lua script into the script cache.", "2.6.0", "scripting", "O(N) with N being the length in bytes of the script body.")},
			})},
	}
}
