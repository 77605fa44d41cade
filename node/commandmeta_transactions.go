package node

import "github.com/shoal-db/shoal/command"

// metaTransactions returns the metadata of Redis 7.0's "transactions" group, as COMMAND INFO and
// COMMAND DOCS report it (see commandmeta.go for the conventions).
func metaTransactions() []*command.Spec {
	return []*command.Spec{
		{Name: "discard", Arity: 1, Flags: command.FlagNoscript | command.FlagLoading | command.FlagStale | command.FlagFast | command.FlagAllowBusy, ACL: command.CatTransaction,
			Doc: cmdDoc("Discard all commands issued after MULTI", "2.0.0", "transactions", "O(N), when N is the number of queued commands")},
		{Name: "exec", Arity: 1, Flags: command.FlagNoscript | command.FlagLoading | command.FlagStale | command.FlagSkipSlowlog, ACL: command.CatTransaction,
			Doc: cmdDoc("Execute all commands issued after MULTI", "1.2.0", "transactions", "Depends on commands in the transaction")},
		{Name: "multi", Arity: 1, Flags: command.FlagNoscript | command.FlagLoading | command.FlagStale | command.FlagFast | command.FlagAllowBusy, ACL: command.CatTransaction,
			Doc: cmdDoc("Mark the start of a transaction block", "1.2.0", "transactions", "O(1)")},
		{Name: "unwatch", Arity: 1, Flags: command.FlagNoscript | command.FlagLoading | command.FlagStale | command.FlagFast | command.FlagAllowBusy, ACL: command.CatTransaction,
			Doc: cmdDoc("Forget about all watched keys", "2.2.0", "transactions", "O(1)")},
		{Name: "watch", Arity: -2, Flags: command.FlagNoscript | command.FlagLoading | command.FlagStale | command.FlagFast | command.FlagAllowBusy, ACL: command.CatTransaction,
			KeySpecs: []command.KeySpec{ksIndexRange(command.KeyRO, 1, -1, 1, 0)},
			Doc:      cmdDoc("Watch the given keys to determine execution of the MULTI/EXEC block", "2.2.0", "transactions", "O(1) for every key.")},
	}
}
