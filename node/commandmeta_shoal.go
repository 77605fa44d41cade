package node

import "github.com/shoal-db/shoal/command"

// withShoalExtensions adds the commands shoal serves beyond Redis 7.0.15 to
// a fresh metadata table (command.AllMeta builds new specs on every call, so
// the Redis-only metadata that the COMMAND tests compare stays untouched):
//
//   - CLUSTER SLOT-STATS, as Valkey 8.0 defines it (node/cmd_slotstats.go).
func withShoalExtensions(all []*command.Spec) []*command.Spec {
	for _, spec := range all {
		if spec.Name != "cluster" || spec.Subcommands == nil {
			continue
		}
		spec.Subcommands["slot-stats"] = &command.Spec{
			Name: "slot-stats", Arity: -4, Flags: command.FlagStale | command.FlagLoading,
			Tips: []string{"nondeterministic_output", "request_policy:all_shards"},
			Doc: command.NewDoc("Return an array of slot usage statistics for slots assigned to the current node", "8.0.0", "cluster",
				"O(N) where N is the total number of slots based on arguments. O(N*log(N)) with ORDERBY subcommand."),
			Handler: nodeHandler(clusterOnly(cmdClusterSlotStats)),
		}
	}
	return all
}
