package command

// metaPubsub returns the metadata of Redis 7.0's "pubsub" group, as COMMAND INFO and
// COMMAND DOCS report it (see meta_table.go for the conventions).
func metaPubsub() []*Spec {
	return []*Spec{
		{Name: "psubscribe", Arity: -2, Flags: FlagPubsub | FlagNoscript | FlagLoading | FlagStale,
			Doc: NewDoc("Listen for messages published to channels matching the given patterns", "2.0.0", "pubsub", "O(N) where N is the number of patterns the client is already subscribed to.")},
		{Name: "publish", Arity: 3, Flags: FlagPubsub | FlagLoading | FlagStale | FlagFast | FlagMayReplicate,
			Doc: NewDoc("Post a message to a channel", "2.0.0", "pubsub", "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).")},
		{Name: "pubsub", Arity: -2,
			Doc: NewDoc("A container for Pub/Sub commands", "2.8.0", "pubsub", "Depends on subcommand."),
			Subcommands: subcommandMap([]*Spec{
				{Name: "channels", Arity: -2, Flags: FlagPubsub | FlagLoading | FlagStale,
					Doc: NewDoc("List active channels", "2.8.0", "pubsub", "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)")},
				{Name: "help", Arity: 2, Flags: FlagLoading | FlagStale,
					Doc: NewDoc("Show helpful text about the different subcommands", "6.2.0", "pubsub", "O(1)")},
				{Name: "numpat", Arity: 2, Flags: FlagPubsub | FlagLoading | FlagStale,
					Doc: NewDoc("Get the count of unique patterns pattern subscriptions", "2.8.0", "pubsub", "O(1)")},
				{Name: "numsub", Arity: -2, Flags: FlagPubsub | FlagLoading | FlagStale,
					Doc: NewDoc("Get the count of subscribers for channels", "2.8.0", "pubsub", "O(N) for the NUMSUB subcommand, where N is the number of requested channels")},
				{Name: "shardchannels", Arity: -2, Flags: FlagPubsub | FlagLoading | FlagStale,
					Doc: NewDoc("List active shard channels", "7.0.0", "pubsub", "O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels).")},
				{Name: "shardnumsub", Arity: -2, Flags: FlagPubsub | FlagLoading | FlagStale,
					Doc: NewDoc("Get the count of subscribers for shard channels", "7.0.0", "pubsub", "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels")},
			})},
		{Name: "punsubscribe", Arity: -1, Flags: FlagPubsub | FlagNoscript | FlagLoading | FlagStale,
			Doc: NewDoc("Stop listening for messages posted to channels matching the given patterns", "2.0.0", "pubsub", "O(N+M) where N is the number of patterns the client is already subscribed and M is the number of total patterns subscribed in the system (by any client).")},
		{Name: "spublish", Arity: 3, Flags: FlagPubsub | FlagLoading | FlagStale | FlagFast | FlagMayReplicate,
			KeySpecs: []KeySpec{ksIndexRange(KeyNotKey, 1, 0, 1, 0)},
			Doc:      NewDoc("Post a message to a shard channel", "7.0.0", "pubsub", "O(N) where N is the number of clients subscribed to the receiving shard channel.")},
		{Name: "ssubscribe", Arity: -2, Flags: FlagPubsub | FlagNoscript | FlagLoading | FlagStale,
			KeySpecs: []KeySpec{ksIndexRange(KeyNotKey, 1, -1, 1, 0)},
			Doc:      NewDoc("Listen for messages published to the given shard channels", "7.0.0", "pubsub", "O(N) where N is the number of shard channels to subscribe to.")},
		{Name: "subscribe", Arity: -2, Flags: FlagPubsub | FlagNoscript | FlagLoading | FlagStale,
			Doc: NewDoc("Listen for messages published to the given channels", "2.0.0", "pubsub", "O(N) where N is the number of channels to subscribe to.")},
		{Name: "sunsubscribe", Arity: -1, Flags: FlagPubsub | FlagNoscript | FlagLoading | FlagStale,
			KeySpecs: []KeySpec{ksIndexRange(KeyNotKey, 1, -1, 1, 0)},
			Doc:      NewDoc("Stop listening for messages posted to the given shard channels", "7.0.0", "pubsub", "O(N) where N is the number of clients already subscribed to a shard channel.")},
		{Name: "unsubscribe", Arity: -1, Flags: FlagPubsub | FlagNoscript | FlagLoading | FlagStale,
			Doc: NewDoc("Stop listening for messages posted to the given channels", "2.0.0", "pubsub", "O(N) where N is the number of clients already subscribed to a channel.")},
	}
}
