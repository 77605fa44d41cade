// Package gossip is the Redis Cluster bus of a shoal node: the cluster view
// (nodes by 40-hex id, flags, epochs, slot ownership, failure reports) and
// the messages that keep it in agreement, carried over hashicorp/memberlist
// and the cluster links.
//
// Two layers, in the style of etcd-raft and hashicorp/raft:
//
//   - State is Redis's cluster.c as a deterministic state machine: no I/O,
//     time only from a clock.Clock. Inputs: Step(msg) for a received message,
//     Tick() every 100 ms (clusterCron), and the CLUSTER command methods.
//     Outputs: Ready(), which hands over the messages to send, whether
//     nodes.conf must be written (and fsynced) first, the new routing table,
//     a role change, slots lost with keys, a write pause for a manual
//     failover, and messages for the pub/sub layer. Tests drive many States
//     in one process with a clock.Fake and in-memory delivery.
//   - The failover layer (package failover, also I/O-free) runs inside the
//     State: it sees the State as its View, gets the cron ticks and the
//     FAILOVER_AUTH_REQUEST/ACK, MFSTART and PAUSED messages, and its
//     actions (epochs, votes, promotion, migration) are applied to the
//     State with nodes.conf fsynced before any dependent message leaves.
//   - Bus is the I/O shell: one goroutine feeds the State (ticks, received
//     messages), nodes.conf is written atomically
//     (temp file, fsync, rename) before the messages that depend on it
//     leave, messages go out as memberlist best-effort packets when they
//     fit 1400 bytes, else (and for reliable ones: MEET, UPDATE, votes) on
//     the peer's cluster link, a persistent stream with a send buffer
//     (link.go), and the routing table is published in a slots.Ref for
//     lock-free reads.
//
// memberlist is membership, probing and packets only: its membership never adds a
// node (nodes are learned through MEET handshakes and gossip from known
// nodes, as in Redis), its suspect/dead verdicts are hints
// (Bus.MemberlistAlive), and with cluster-bus-secret its keyring seals
// every packet and stream (secret.go); PFAIL comes from a PING left unanswered
// for node-timeout and FAIL from failure reports of a majority of masters,
// as in Redis. A known id that talks from a new address is the same node
// (its address is updated); peers known from nodes.conf are re-joined every
// RejoinInterval because memberlist forgets dead peers.
//
// What the server does:
//
//   - at start: New(Config{...}) then Start(); route every keyed command
//     with Slots().Load() (Owner, Migrating, Importing, OK, MyID, MyMaster);
//   - CLUSTER subcommands: call the Bus method of the same name with the raw
//     arguments after the subcommand; a nil error is +OK, any other error's
//     text is the exact Redis reply; the read-only ones (NODES, INFO, SLOTS,
//     SHARDS, LINKS, REPLICAS, COUNT-FAILURE-REPORTS, MYID) have their data
//     methods; KEYSLOT, COUNTKEYSINSLOT, GETKEYSINSLOT are the server's own;
//   - OnChange: start/stop replication on RoleChanged (MasterIP:MasterPort),
//     empty the data set on FlushData, delete keys in LostSlots, stop
//     serving MovedOutSlots (their keys stay), deliver Inbound PUBLISH
//     messages, pause/resume writes on PauseWrites / ResumeWrites (manual
//     failover), serve the slots again on DataLostEnded
//     (RestartedWithoutData);
//   - SetReplOffsetSource (or SetReplOffset now and then); SetOptions on
//     CONFIG SET of the cluster-* directives; Failover for CLUSTER
//     FAILOVER; Stop at shutdown.
//
// Wire format: see the comment above Message.Encode (versioned, big-endian,
// every length checked before allocation).
package gossip
