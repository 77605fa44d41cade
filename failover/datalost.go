package failover

import (
	"time"

	"go.uber.org/zap"
)

// A master that restarts without its data.
//
// In Redis a master killed and restarted at once without persistence comes
// back owning its slots with an empty data set, before anyone noticed it
// was gone; its replica then resyncs from it and empties itself too (Redis
// documents the trap and leaves it to operators). Here the restarted master
// knows it: it restarted from nodes.conf as a master owning slots and
// loaded no data set (no RDB or AOF file; an empty but valid file means the
// data really was empty, and does not count). Until one of its replicas
// that holds data takes its slots over, it serves none of them, lets no
// replica sync from it and says so in every bus message (DataLost). Such a
// replica then starts an election as if its master had failed, at once
// (no node-timeout to wait: the master told it), with FORCEACK since the
// master is up; the voters' other rules (one vote per epoch, the claimed
// slots' epochs, 2 × node-timeout per master) still hold. The old master
// then sees its slots claimed under a greater configEpoch and becomes a
// replica of the winner (the usual rules), which syncs the data back to it.
//
// The wait is bounded: the master serves its slots, empty, as soon as no
// replica can take over — it has none, or every one that is reachable has
// announced replication offset 0 and no data of its own (a fresh cluster
// holds no data) — and in any case after dataLostWait.
//
// A replica holds data when it received some of a master's stream (offset
// > 0) or restarted from its own data file with keys and has not synced
// since (LoadedData: a whole shard restarted, only the master lost its
// disk).
//
// The replica's side of the race: a replica whose master answers its PSYNC
// with a new history behind its own offset that brings no key (the master
// restarted and does not know, or stopped waiting) reports it
// (MasterRestartedEmpty); within dataLostWait of that it refuses the empty
// full sync (RefuseEmptySync) and takes over instead.

// dataLostWait is how long a master that restarted without its data waits
// for a replica to take over before it serves its slots empty: one
// election (authTimeout) and a retry after a failed one (2 × authTimeout),
// 3 × max(2 × node-timeout, 2 s). A replica that holds data refuses an
// empty full sync for as long after it first sees one.
func (m *Machine) dataLostWait() time.Duration { return 3 * m.authTimeout() }

// RestartedWithoutData tells the machine that this node just restarted
// from nodes.conf as a master owning slots without loading any data set.
// It returns whether the node must wait for a replica to take over (then
// DataLost is true until ActDataLostEnded): not when no replica of it can
// hold the data.
func (m *Machine) RestartedWithoutData(v View) bool {
	m.dataLostSince = m.clock.Now()
	m.log.Warn("restarted as a master owning slots without any data set: its slots are not served "+
		"until a replica holding the data takes them over", zap.Duration("atMost", m.dataLostWait()))
	m.checkDataLost(v, v.Myself(), m.dataLostSince)
	m.take() // the caller learns the outcome from the return value
	return m.DataLost()
}

// DataLost reports whether this master waits for a replica holding its
// data to take over: its slots are not served and no replica may sync.
func (m *Machine) DataLost() bool { return !m.dataLostSince.IsZero() }

// checkDataLost ends the wait of a master that restarted without its data
// once it no longer owns slots (a replica took over), once no replica can
// take over, or after dataLostWait.
func (m *Machine) checkDataLost(v View, me Node, now time.Time) {
	if m.dataLostSince.IsZero() {
		return
	}
	end := func(why string) {
		m.log.Warn("no longer waiting for a replica to take over the data: "+why,
			zap.Duration("waited", now.Sub(m.dataLostSince)))
		m.dataLostSince = time.Time{}
		m.emit(Action{Kind: ActDataLostEnded})
	}
	if !me.IsMaster || me.NumSlots == 0 {
		end("this node no longer serves slots (the data comes from the new master)")
		return
	}
	holders := 0 // replicas that may hold the data and could take over
	for _, id := range me.Replicas {
		r, ok := v.Node(id)
		if !ok || r.Fail || r.PFail || r.NoFailover {
			continue
		}
		// Not heard from since the restart: its offset is unknown yet.
		if r.LastSeen.Before(m.dataLostSince) || holdsData(r) {
			holders++
		}
	}
	if holders == 0 {
		end("no reachable replica holds data; serving the slots with an empty data set")
		return
	}
	if now.Sub(m.dataLostSince) >= m.dataLostWait() {
		end("no replica took the slots over in time; serving them with an empty data set")
	}
}

// MasterRestartedEmpty records that this replica's master answered its
// PSYNC with a new replication history behind this replica's offset: it
// restarted without its data. Within dataLostWait of the first such answer
// the replica takes over (as when the master says DataLost on the bus) and
// RefuseEmptySync holds.
func (m *Machine) MasterRestartedEmpty(master string) {
	if m.emptyMaster == master && !m.emptyMasterAt.IsZero() {
		return
	}
	m.emptyMaster, m.emptyMasterAt = master, m.clock.Now()
	m.log.Warn("my master restarted without its data: refusing its empty full sync and taking over",
		zap.String("master", master), zap.Duration("atMost", m.dataLostWait()))
}

// RefuseEmptySync reports whether this replica must refuse a full sync
// from master that would replace its data with an empty one: master
// restarted without its data (MasterRestartedEmpty, or DataLost on the
// bus) and this replica, which holds data, may still take over.
func (m *Machine) RefuseEmptySync(v View, master string) bool {
	me := v.Myself()
	n, ok := v.Node(master)
	return ok && !me.IsMaster && me.MasterID == master && m.takeoverFrom(me, n, m.clock.Now())
}

// takeoverFrom reports whether this replica takes over from master,
// which did not fail but restarted without its data, because this replica
// holds data.
func (m *Machine) takeoverFrom(me, master Node, now time.Time) bool {
	if !holdsData(me) || m.cfg.NoFailover || master.Fail {
		return false
	}
	if master.DataLost {
		return true
	}
	return m.emptyMaster == master.ID && now.Sub(m.emptyMasterAt) < m.dataLostWait()
}

// holdsData reports whether a replica may hold data: it received some of a
// master's stream (offset > 0), or it restarted from its own data set file
// with keys and has not synced since (a whole shard restarted: the replica
// kept its disk, the master lost its).
func holdsData(n Node) bool { return n.ReplOffset > 0 || n.LoadedData }
