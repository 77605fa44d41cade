// Package migrate is shoal's atomic slot migration: CLUSTER MIGRATESLOTS
// SLOTSRANGE start end [start end ...] NODE id (Valkey 9's interface),
// CLUSTER GETSLOTMIGRATIONS and CLUSTER CANCELSLOTMIGRATIONS.
//
// An export job moves a set of slots from this node (the source) to
// another master (the target) over one client connection, without ASK
// redirects and without losing a write:
//
//  1. The target is told to import the slots (an internal CLUSTER
//     IMPORTSLOTS BEGIN): it drops whatever stale keys it holds in them and
//     accepts this connection's commands for them, while every other client
//     is still redirected to the source, which keeps serving the slots.
//  2. Slot by slot, under the slot's lock, the source writes the slot's
//     image — commands that rebuild each live key, big values split into
//     bounded chunks — into the stream, and marks the slot as imaged. The
//     job's write-effect feed (registered before the first image) forwards
//     the effect of every later write to an imaged slot; since effects are
//     fed under the same slot lock, each slot's effects follow its image in
//     the stream in the order they were applied. Writes to slots not imaged
//     yet are not forwarded: the image will contain them.
//  3. When the target has nearly caught up, the source takes the locks of
//     all the job's slots (the write pause; commands on those slots wait),
//     waits until the target acknowledged everything sent, and asks it to
//     take the slots (CLUSTER IMPORTSLOTS FINISH): the target becomes their
//     owner under a configEpoch bumped without consensus and broadcasts it.
//     The source then gives the slots to the target in its own table,
//     releases the locks — the waiting commands are routed again and get
//     MOVED — and deletes its copy of the keys.
//
// Commands on a slot being moved are routed under the slot's lock by the
// node (see node/cluster_route.go), so no command admitted before the flip
// can write to the source after it. A failure before FINISH (the target
// unreachable, an error reply, a cancel, a stalled target) aborts the job:
// the source never stopped owning the slots and keeps every key; the target
// is asked to drop what it received.
//
// The package owns the protocol and the job state machine. The node offers
// what it needs through the Source and Target interfaces: slot locks, slot
// images, the effect feed, and the ownership flip.
//
// The package also holds the client side of the MIGRATE command
// (ConnCache.Migrate, client.go) and its cache of target connections
// (Redis's migrate_cached_sockets, conncache.go); the node parses the
// command, looks the keys up under their slot locks and deletes the ones the
// target acknowledged.
package migrate
