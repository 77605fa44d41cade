package gossip

import (
	"time"

	"go.uber.org/zap"
)

// The failure detector (Redis's PFAIL/FAIL rules, DESIGN.md §6): a node
// whose ping stays unanswered, with nothing at all heard from it, for
// node-timeout turns PFAIL; PFAIL plus failure reports from a majority of
// slot-serving masters, each valid for failReportValidity × node-timeout,
// make FAIL, broadcast to everyone. The reports travel in the gossip
// sections of pings (processGossip) and FAIL as a message of its own (Step).

const (
	failReportValidity = 2 // CLUSTER_FAIL_REPORT_VALIDITY_MULT
	failUndoTimeMult   = 2 // CLUSTER_FAIL_UNDO_TIME_MULT
)

// failure reports (issue 7 builds the failover on these).
func (s *State) addFailureReport(failing, sender *node) bool {
	if failing.failReports == nil {
		failing.failReports = make(map[string]time.Time)
	}
	_, existed := failing.failReports[sender.id]
	failing.failReports[sender.id] = s.clock.Now()
	return !existed
}

func (s *State) cleanupFailureReports(n *node) {
	maxAge := s.opts.NodeTimeout * failReportValidity
	now := s.clock.Now()
	for id, t := range n.failReports {
		if now.Sub(t) > maxAge {
			delete(n.failReports, id)
		}
	}
}

func (s *State) delFailureReport(n, sender *node) bool {
	if _, ok := n.failReports[sender.id]; !ok {
		return false
	}
	delete(n.failReports, sender.id)
	s.cleanupFailureReports(n)
	return true
}

func (s *State) failureReportsCount(n *node) int {
	s.cleanupFailureReports(n)
	return len(n.failReports)
}

// markFailingIfNeeded is markNodeAsFailingIfNeeded: PFAIL plus reports from
// a majority of slot-serving masters make FAIL, broadcast to everyone.
func (s *State) markFailingIfNeeded(n *node) {
	quorum := s.size/2 + 1
	if !n.timedOut() || n.failed() {
		return
	}
	failures := s.failureReportsCount(n)
	if s.myself.isMaster() {
		failures++
	}
	if failures < quorum {
		return
	}
	s.log.Warn("marking node as failing (quorum reached)", zap.String("peer", n.id), zap.Int("reports", failures),
		zap.Int("quorum", quorum), zap.Uint64("currentEpoch", s.currentEpoch))
	n.flags &^= FlagPFail
	n.flags |= FlagFail
	n.failTime = s.clock.Now()
	s.broadcast(&Message{Type: MsgFail, About: n.id}, false)
	s.todoUpdateState = true
	s.save(false)
	s.masterFailed(n)
}

// clearFailureIfNeeded is clearNodeFailureIfNeeded.
func (s *State) clearFailureIfNeeded(n *node) {
	now := s.clock.Now()
	if n.isSlave() || n.numSlots == 0 {
		s.log.Info("clear FAIL state: it is reachable again and serves no slot", zap.String("peer", n.id),
			zap.Uint64("currentEpoch", s.currentEpoch))
		n.flags &^= FlagFail
		s.todoUpdateState = true
		s.save(false)
	}
	if n.isMaster() && n.numSlots > 0 && now.Sub(n.failTime) > s.opts.NodeTimeout*failUndoTimeMult {
		s.log.Info("clear FAIL state: it is reachable again and nobody took its slots", zap.String("peer", n.id),
			zap.Uint64("currentEpoch", s.currentEpoch))
		n.flags &^= FlagFail
		s.todoUpdateState = true
		s.save(false)
	}
}

// stallGap is the longest wait between two runs of the timed work (Tick,
// Wake) that is not a stall of this node; tickPeriod is the cron period.
const (
	stallGap   = 300 * time.Millisecond
	tickPeriod = 100 * time.Millisecond
)

// discountStall keeps a stall of this node from counting as its peers'
// silence. When the timed work runs late — the process was not scheduled
// (a loaded machine), the loop waited on a slow nodes.conf fsync, or DEBUG
// SLEEP held the bus — what the peers sent meanwhile may still wait in the
// socket buffers: Redis reads those before its cron judges anyone (file
// events come first in its event loop), while here the transport delivers
// them after. The time the node did not run is taken off every pending
// ping and every silence, so PFAIL still needs node-timeout of silence
// that this node was awake to observe (a peer that really died is flagged
// that much later).
func (s *State) discountStall(now time.Time) {
	last := s.lastTimedRun
	s.lastTimedRun = now
	if last.IsZero() {
		return
	}
	gap := now.Sub(last)
	if gap <= stallGap {
		return
	}
	lost := gap - tickPeriod
	for _, n := range s.order {
		if !n.pingSent.IsZero() {
			n.pingSent = minTime(n.pingSent.Add(lost), now)
		}
		if !n.dataReceived.IsZero() {
			n.dataReceived = minTime(n.dataReceived.Add(lost), now)
		}
	}
	s.log.Info("the cluster cron ran late: this node's stall does not count as its peers' silence",
		zap.Duration("late", lost))
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// checkPFail flags n PFAIL when nothing at all has come from it for longer
// than node-timeout (any bus data counts as liveness) while our ping to it
// is pending. It reports whether n was just flagged.
func (s *State) checkPFail(n *node, now time.Time) bool {
	if n.pingSent.IsZero() || n.flags&(FlagPFail|FlagFail|FlagMyself|FlagNoAddr|FlagHandshake) != 0 {
		return false
	}
	delay := now.Sub(s.silentSince(n))
	if delay <= s.opts.NodeTimeout {
		return false
	}
	s.log.Info("node possibly failing (PFAIL)", zap.String("peer", n.id), zap.Duration("silent", delay),
		zap.Uint64("currentEpoch", s.currentEpoch))
	n.flags |= FlagPFail
	return true
}

// silentSince is when n's silence began, for a node with a ping pending:
// its last message, but no earlier than one ping gap (pingGap, at most
// node-timeout/2) before our pending ping. A ping goes out one interval after the last PONG, so in a
// live exchange the two agree and a node that dies is flagged about
// node-timeout after it last spoke, instead of node-timeout after our next
// ping (Redis's rule, which adds up to its ping interval of phase). The
// bound keeps a node that stops for less than node-timeout minus one
// interval from being flagged, and gives a node we had not heard from
// lately (a link just made, a stalled exchange) that long to answer. A
// node never heard from is silent from our ping on.
func (s *State) silentSince(n *node) time.Time {
	if n.dataReceived.IsZero() {
		return n.pingSent
	}
	floor := n.pingSent.Add(-min(s.pingGap(n), s.opts.NodeTimeout/2))
	if n.dataReceived.After(floor) {
		return n.dataReceived
	}
	return floor
}

// pfailDeadline is the earliest moment a node with a pending ping turns
// PFAIL if nothing arrives from it (zero: none pending).
func (s *State) pfailDeadline() time.Time {
	var min time.Time
	for _, n := range s.order {
		if n.pingSent.IsZero() || n.flags&(FlagPFail|FlagFail|FlagMyself|FlagNoAddr|FlagHandshake) != 0 {
			continue
		}
		d := s.silentSince(n).Add(s.opts.NodeTimeout + time.Millisecond)
		if min.IsZero() || d.Before(min) {
			min = d
		}
	}
	return min
}

// NextWakeup is when the state machine wants Wake called before the next
// cron tick: a node that turns PFAIL then, or the failover layer's election
// deadline (zero: none). Honouring it takes the cron's 100 ms rounding out
// of failure detection and elections.
func (s *State) NextWakeup() time.Time {
	w := s.pfailDeadline()
	if !w.IsZero() && !w.After(s.clock.Now()) {
		// Overdue (Wake flags such a node at once, so this is a moment
		// before it runs): never report a past time, which would make the
		// owner wake us in a loop if something kept the node from turning
		// PFAIL; the cron takes it from there.
		w = time.Time{}
	}
	if f := s.fo.Wakeup(); !f.IsZero() && (w.IsZero() || f.Before(w)) {
		w = f
	}
	return w
}

// Wake runs the timed work that is due between two cron ticks: PFAIL
// flags (with their failure reports pushed to the masters) and the
// failover layer's deadlines.
func (s *State) Wake() {
	defer s.afterStep()
	now := s.clock.Now()
	s.discountStall(now)
	pfailed := false
	for _, n := range s.order {
		if s.checkPFail(n, now) {
			pfailed = true
		}
	}
	if pfailed {
		s.todoUpdateState = true
		s.pushFailureReports()
	}
	s.failoverTick()
}

// pushFailureReports sends our gossip (which lists every PFAIL node) to
// every reachable master at once when a cron tick flagged nodes PFAIL: only
// masters' reports count towards FAIL, and waiting for the next scheduled
// ping would add up to a ping interval before they reach the quorum. One
// ping per master per tick, however many nodes went PFAIL, so that a mass
// suspicion (an overloaded host) cannot turn into a ping storm.
func (s *State) pushFailureReports() {
	for _, n := range s.order {
		if n == s.myself || !n.isMaster() || n.flags&(FlagHandshake|FlagNoAddr|FlagPFail|FlagFail) != 0 {
			continue
		}
		old := n.pingSent
		s.sendPing(n, MsgPing, n.id)
		if !old.IsZero() {
			n.pingSent = old
		}
	}
}
