// Package failover is the failover logic of a shoal cluster node: Redis
// Cluster's replica election (eligibility, rank by replication offset,
// election delay, currentEpoch++, FAILOVER_AUTH_REQUEST, majority of
// slot-serving masters, new configEpoch), vote granting (one vote per
// epoch, the 2 × node-timeout rule per master, the claimed-slots epoch
// check), manual failover (CLUSTER FAILOVER [FORCE|TAKEOVER] with the
// MFSTART / PAUSED handshake), replica migration
// (cluster-migration-barrier), and — not in Redis — the takeover from a
// master that restarted without its data (datalost.go).
//
// Machine is a deterministic state machine in the style of etcd-io/raft: no
// I/O, no goroutines, time from a clock.Clock and randomness from a seeded
// source. It reads the cluster through a View and answers each event (Tick,
// Step, ManualFailover) with Actions — set currentEpoch, record a vote,
// send an ACK, request votes, promote, pause writes, replicate — that the
// owner carries out in order. Package gossip owns the cluster state (nodes,
// flags, PFAIL/FAIL detection, epochs, nodes.conf) and is the owner: it
// persists every epoch and vote with fsync before the messages that depend
// on them leave.
//
// Role lives in the gossip state: a promotion or a migration changes
// myself's flags, master and slots there, and the replication layer follows
// the role it sees. The replication offsets used for ranking and for the
// manual failover's catch-up are the ones published into the gossip state.
package failover
