package command

// metaTransactions returns the metadata of Redis 7.0's "transactions" group, as COMMAND INFO and
// COMMAND DOCS report it (see meta_table.go for the conventions).
func metaTransactions() []*Spec {
	return []*Spec{
		{Name: "discard", Arity: 1, Flags: FlagNoscript | FlagLoading | FlagStale | FlagFast | FlagAllowBusy, ACL: CatTransaction,
			Doc: NewDoc("Discard all commands issued after MULTI", "2.0.0", "transactions", "O(N), when N is the number of queued commands")},
		{Name: "exec", Arity: 1, Flags: FlagNoscript | FlagLoading | FlagStale | FlagSkipSlowlog, ACL: CatTransaction,
			Doc: NewDoc("Execute all commands issued after MULTI", "1.2.0", "transactions", "Depends on commands in the transaction")},
		{Name: "multi", Arity: 1, Flags: FlagNoscript | FlagLoading | FlagStale | FlagFast | FlagAllowBusy, ACL: CatTransaction,
			Doc: NewDoc("Mark the start of a transaction block", "1.2.0", "transactions", "O(1)")},
		{Name: "unwatch", Arity: 1, Flags: FlagNoscript | FlagLoading | FlagStale | FlagFast | FlagAllowBusy, ACL: CatTransaction,
			Doc: NewDoc("Forget about all watched keys", "2.2.0", "transactions", "O(1)")},
		{Name: "watch", Arity: -2, Flags: FlagNoscript | FlagLoading | FlagStale | FlagFast | FlagAllowBusy, ACL: CatTransaction,
			KeySpecs: []KeySpec{ksIndexRange(KeyRO, 1, -1, 1, 0)},
			Doc:      NewDoc("Watch the given keys to determine execution of the MULTI/EXEC block", "2.2.0", "transactions", "O(1) for every key.")},
	}
}
