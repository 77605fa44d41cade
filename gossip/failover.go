package gossip

import (
	"strings"
	"time"

	"github.com/shoal-db/shoal/failover"
	"github.com/shoal-db/shoal/slots"
	"go.uber.org/zap"
)

// This file wires the failover layer (package failover, an I/O-free state
// machine) into the cluster state: the State is the machine's View, the
// cron and the FAILOVER_AUTH_REQUEST / FAILOVER_AUTH_ACK / MFSTART messages
// (and PAUSED packets from our master) are its events, and its Actions are
// carried out here, under the same serialization as everything else in
// State. Epochs and votes set by an action mark nodes.conf for a save with
// fsync; Ready hands that save to the Bus before any message of the same
// step leaves, so a vote is on disk before its ACK is sent.

// failoverConfig maps the cluster options onto the failover settings.
func failoverConfig(o Options) failover.Config {
	nt := o.NodeTimeout
	if nt <= 0 {
		nt = 15 * time.Second
	}
	return failover.Config{
		NodeTimeout:           nt,
		ValidityFactor:        o.ValidityFactor,
		ReplPingPeriod:        o.ReplPingPeriod,
		MigrationBarrier:      o.MigrationBarrier,
		AllowReplicaMigration: o.AllowReplicaMigration,
		NoFailover:            o.NoFailover,
		Delays:                o.ElectionDelays,
	}
}

// failoverView is the State seen through failover.View.
type failoverView State

var _ failover.View = (*failoverView)(nil)

func (v *failoverView) st() *State { return (*State)(v) }

func (v *failoverView) node(n *node) failover.Node {
	var fn failover.Node
	v.fill(&fn, n)
	return fn
}

// fill sets *fn to n's view, reusing fn's Replicas array.
func (v *failoverView) fill(fn *failover.Node, n *node) {
	s := v.st()
	replicas := fn.Replicas[:0]
	*fn = failover.Node{
		ID: n.id, IsMaster: n.isMaster(), IsReplica: n.isSlave(),
		PFail: n.timedOut(), Fail: n.failed(), NoFailover: n.flags&FlagNoFailover != 0,
		NumSlots: n.numSlots, ConfigEpoch: n.configEpoch, ReplOffset: n.replOffset,
		MigrateTo: n.flags&FlagMigrateTo != 0, LastSeen: n.dataReceived, DataLost: n.dataLost,
		LoadedData: n.loadedData,
	}
	if n == s.myself {
		fn.LastSeen = s.clock.Now()
		fn.ReplDataAge, fn.ReplDataAgeKnown = s.replDataAge, s.replDataAgeKnown
	}
	if n.master != nil {
		fn.MasterID = n.master.id
	}
	for _, r := range n.replicas {
		replicas = append(replicas, r.id)
	}
	fn.Replicas = replicas
}

func (v *failoverView) Myself() failover.Node { return v.node(v.myself) }

func (v *failoverView) Node(id string) (failover.Node, bool) {
	n := v.st().lookup(id)
	if n == nil || n.inHandshake() {
		return failover.Node{}, false
	}
	return v.node(n), true
}

func (v *failoverView) AppendNodes(dst []failover.Node) []failover.Node {
	dst = dst[:0]
	for _, n := range v.order {
		if n.inHandshake() {
			continue
		}
		if len(dst) < cap(dst) {
			dst = dst[:len(dst)+1] // the old element's Replicas array is reused
		} else {
			dst = append(dst, failover.Node{})
		}
		v.fill(&dst[len(dst)-1], n)
	}
	return dst
}

func (v *failoverView) CurrentEpoch() uint64   { return v.currentEpoch }
func (v *failoverView) LastVoteEpoch() uint64  { return v.lastVoteEpoch }
func (v *failoverView) MaxConfigEpoch() uint64 { return v.st().maxEpoch() }
func (v *failoverView) Size() int              { return v.size }
func (v *failoverView) StateOK() bool          { return v.stateOK }

func (v *failoverView) SlotOwnerEpoch(slot int) (uint64, bool) {
	if v.st().slotUnclaimed(slot) {
		return 0, false
	}
	return v.owner.get(slot).configEpoch, true
}

func (s *State) view() *failoverView { return (*failoverView)(s) }

// failoverTick runs the failover layer's cron part.
func (s *State) failoverTick() { s.applyFailover(s.fo.Tick(s.view())) }

// masterFailed is called when n was just flagged FAIL: a replica of n starts
// its election schedule at once instead of at the next cron tick.
func (s *State) masterFailed(n *node) {
	if s.myself.isSlave() && s.myself.master == n {
		s.failoverTick()
	}
}

// failoverStep hands a failover message (already counted and with its
// header epochs applied) to the failover layer.
func (s *State) failoverStep(m *Message, kind failover.MsgKind) {
	fm := failover.Message{Kind: kind, From: m.Sender, CurrentEpoch: m.CurrentEpoch, ConfigEpoch: m.ConfigEpoch,
		Slots: &m.Slots, ForceAck: m.MFlags&MFlagForceAck != 0, Offset: m.Offset}
	s.applyFailover(s.fo.Step(s.view(), fm))
}

// applyFailover carries out the failover layer's actions, in order.
func (s *State) applyFailover(acts []failover.Action) {
	me := s.myself
	for _, a := range acts {
		switch a.Kind {
		case failover.ActSetCurrentEpoch:
			if a.Epoch > s.currentEpoch {
				s.currentEpoch = a.Epoch
			}
			s.save(true)
			s.todoUpdateState = true
		case failover.ActRecordVote:
			s.SetLastVoteEpoch(a.Epoch)
		case failover.ActSendAuthAck:
			s.SendTo(a.Node, &Message{Type: MsgAuthAck}, true)
		case failover.ActRequestVotes:
			s.requestVotes(a.ForceAck)
		case failover.ActPromote:
			s.promoteMyself(a.Epoch)
		case failover.ActPongSiblings:
			if me.master != nil {
				for _, r := range me.master.replicas {
					if r != me && !r.inHandshake() {
						s.sendPing(r, MsgPong, "")
					}
				}
			}
		case failover.ActSendMFStart:
			s.SendTo(a.Node, &Message{Type: MsgMFStart}, true)
		case failover.ActPauseWrites:
			s.out.PauseWrites = a.Duration
			s.out.ResumeWrites = false
		case failover.ActResumeWrites:
			s.out.PauseWrites = 0
			s.out.ResumeWrites = true
		case failover.ActPingPaused:
			if n := s.lookup(a.Node); n != nil && n != me {
				s.sendPing(n, MsgPing, n.id)
			}
		case failover.ActDataLostEnded:
			s.out.DataLostEnded = true
			s.BroadcastPong() // without the data-lost flag
		case failover.ActReplicate:
			n := s.lookup(a.Node)
			if n == nil || n == me || !n.isMaster() || me.isMaster() {
				continue
			}
			s.setMyMaster(n)
			s.save(true)
			s.todoUpdateState = true
		}
	}
}

// requestVotes is clusterRequestFailoverAuth: the vote request goes to
// every master that may vote (Redis broadcasts it to every node; replicas
// and failed masters ignore it). Skipping the failed master keeps a
// reliable send to a dead address from delaying the others.
func (s *State) requestVotes(forceAck bool) {
	var mflags uint8
	if forceAck {
		mflags = MFlagForceAck
	}
	for _, n := range s.order {
		if n == s.myself || n.inHandshake() || !n.isMaster() || n.failed() {
			continue
		}
		h := s.header(MsgAuthRequest)
		h.MFlags = mflags
		h.To = n.id
		s.send(n, h, true)
	}
}

// promoteMyself is clusterFailoverReplaceYourMaster: turn myself into a
// master with configEpoch epoch (when greater), claim every slot of the old
// master, save with fsync, and tell everyone with a PONG.
func (s *State) promoteMyself(epoch uint64) {
	me := s.myself
	old := me.master
	if me.isMaster() || old == nil {
		return
	}
	if epoch > me.configEpoch {
		me.configEpoch = epoch
	}
	if epoch > s.currentEpoch {
		s.currentEpoch = epoch
	}
	s.setNodeAsMaster(me)
	var taken int
	for j := 0; j < slots.Count; j++ {
		if old.slots.Has(j) {
			s.delSlot(j)
			s.addSlot(me, j)
			taken++
		}
	}
	s.log.Warn("failover: promoted to master", zap.String("oldMaster", old.id),
		zap.Uint64("configEpoch", me.configEpoch), zap.Uint64("currentEpoch", s.currentEpoch), zap.Int("slots", taken))
	s.touchTable()
	s.updateState()
	s.save(true)
	s.BroadcastPong()
}

// Failover is CLUSTER FAILOVER [FORCE|TAKEOVER]; mode is the raw argument
// (nil for none). The error text is Redis's reply.
func (s *State) Failover(mode []byte) error {
	defer s.afterStep()
	md := failover.ModeDefault
	if mode != nil {
		switch strings.ToLower(string(mode)) {
		case "force":
			md = failover.ModeForce
		case "takeover":
			md = failover.ModeTakeover
		default:
			return errSyntax
		}
	}
	acts, err := s.fo.ManualFailover(s.view(), md)
	if err != nil {
		return err
	}
	s.applyFailover(acts)
	return nil
}

// RestartedWithoutData tells the failover layer that this node restarted
// from nodes.conf as a master owning slots without loading any data set
// (failover/datalost.go). It returns whether the node must wait for a
// replica to take over: serve none of its slots and let no replica sync
// until OnChange reports DataLostEnded.
func (s *State) RestartedWithoutData() bool {
	me := s.myself
	if !me.isMaster() || me.numSlots == 0 {
		return false
	}
	return s.fo.RestartedWithoutData(s.view())
}

// RestartedWithData tells the cluster state that this node restarted from
// its own data set file holding keys: until it syncs from a master (its
// replication offset turns non-zero) its messages say it holds data, so a
// master of it that restarted without its data waits for it to take over.
func (s *State) RestartedWithData() { s.myself.loadedData = true }

// MasterRestartedEmpty is called by a replica whose master (by node id)
// answered its PSYNC with a new history behind the replica's offset: it
// restarted without its data. It returns whether the replica refuses that
// full sync (it holds data and may take over instead; the takeover is
// scheduled at once).
func (s *State) MasterRestartedEmpty(master string) bool {
	defer s.afterStep()
	me := s.myself
	if me.isMaster() || me.master == nil || me.master.id != master {
		return false
	}
	s.fo.MasterRestartedEmpty(master)
	if !s.fo.RefuseEmptySync(s.view(), master) {
		return false
	}
	s.failoverTick()
	return true
}

// ElectionState returns the failover layer's election state (tests, logs).
func (s *State) ElectionState() failover.Election { return s.fo.Election() }

// Failover is CLUSTER FAILOVER [FORCE|TAKEOVER] (mode nil for none).
func (b *Bus) Failover(mode []byte) error {
	return b.do(func(s *State) error { return s.Failover(mode) })
}

// RestartedWithoutData: see State.RestartedWithoutData. Call it once the
// data set is known to be missing, before Start.
func (b *Bus) RestartedWithoutData() bool {
	var wait bool
	_ = b.do(func(s *State) error { wait = s.RestartedWithoutData(); return nil })
	return wait
}

// RestartedWithData: see State.RestartedWithData. Call it once the data set
// is loaded, before Start.
func (b *Bus) RestartedWithData() {
	_ = b.do(func(s *State) error { s.RestartedWithData(); return nil })
}

// MasterRestartedEmpty: see State.MasterRestartedEmpty.
func (b *Bus) MasterRestartedEmpty(master string) bool {
	var refuse bool
	_ = b.do(func(s *State) error { refuse = s.MasterRestartedEmpty(master); return nil })
	return refuse
}

// SetReplOffsetSource makes the bus read this node's replication offset
// from src before every cron tick (outside the Bus lock: src may take its
// own locks but must not call back into the Bus). The replication layer
// installs it; the failover layer ranks replicas and finishes manual
// failovers on these offsets. nil removes the source.
func (b *Bus) SetReplOffsetSource(src func() int64) {
	if src == nil {
		b.offsetSrc.Store(nil)
		return
	}
	b.offsetSrc.Store(&src)
}

// SetReplDataAgeSource makes the bus read, before every cron tick (outside
// its lock), how old this replica's data is by its replication link: since
// the master's last byte while the link is up, else since it went down;
// false when unknown (never connected). The failover layer then applies
// cluster-replica-validity-factor to it, as Redis does, instead of to the
// master's silence on the bus. nil removes the source.
func (b *Bus) SetReplDataAgeSource(src func() (time.Duration, bool)) {
	if src == nil {
		b.dataAgeSrc.Store(nil)
		return
	}
	b.dataAgeSrc.Store(&src)
}

// readReplDataAge calls the data age source, if any.
func (b *Bus) readReplDataAge() (time.Duration, bool) {
	p := b.dataAgeSrc.Load()
	if p == nil {
		return 0, false
	}
	return (*p)()
}

// SetReplDataAge records this replica's data age by its replication link
// (known false: unknown).
func (s *State) SetReplDataAge(age time.Duration, known bool) {
	s.replDataAge, s.replDataAgeKnown = age, known
}

// readReplOffset calls the offset source, if any.
func (b *Bus) readReplOffset() (int64, bool) {
	p := b.offsetSrc.Load()
	if p == nil {
		return 0, false
	}
	return (*p)(), true
}
