package failover

import (
	"errors"
	"math/rand/v2"
	"time"

	"github.com/shoal-db/shoal/clock"
	"go.uber.org/zap"
)

// Delays are the waits of a replica between its master's FAIL and its vote
// request: Fixed + rand[0, Random) + rank × PerRank.
//
// Redis waits 500 ms + rand(0..500) ms + rank × 1000 ms. At
// cluster-node-timeout 1000 ms that is a third of the unavailability, so
// shoal waits less (DefaultDelays: 50 ms + rand(0..50) ms + rank × 200 ms),
// each part still long enough for the job it does:
//
//   - Fixed lets the FAIL broadcast reach every voter before the vote
//     request does (a master that has not seen FAIL refuses silently, and
//     the replica then waits 2 × max(2 × NT, 2 s) before trying again).
//     FAIL goes out directly from the node that reached the quorum to every
//     node — one hop, under a millisecond on a LAN, a few ms across zones —
//     as a packet, while the request needs a stream connection (a round
//     trip more), and a voter handles its received messages in order. 50 ms
//     is an order of magnitude above that hop. The owner wakes the machine
//     at the exact deadline (Wakeup), so this is not rounded up to a tick.
//   - Random spreads siblings that still compute the same rank from stale
//     offsets. Equal offsets no longer share a rank (the node id breaks the
//     tie, see rank), so this only has to absorb staleness; the request →
//     ACK → promotion round trip it must separate is a few ms.
//   - PerRank lets the better replica finish its election and announce it
//     before the next one starts: 200 ms is far above a round trip plus two
//     fsyncs (~10 ms), and the rank is recomputed before the request when
//     fresher sibling offsets arrive (as Redis does), so the replica with
//     the most data wins.
//
// The best replica's expected wait drops from Redis's 750 ms to 75 ms.
type Delays struct {
	Fixed, Random, PerRank time.Duration
}

// DefaultDelays are shoal's election delays (see Delays for why).
func DefaultDelays() Delays {
	return Delays{Fixed: 50 * time.Millisecond, Random: 50 * time.Millisecond, PerRank: 200 * time.Millisecond}
}

// RedisDelays are Redis 7's (clusterHandleSlaveFailover).
func RedisDelays() Delays {
	return Delays{Fixed: 500 * time.Millisecond, Random: 500 * time.Millisecond, PerRank: time.Second}
}

// Config are the failover settings, from the cluster-* directives.
type Config struct {
	// NodeTimeout is cluster-node-timeout.
	NodeTimeout time.Duration
	// ValidityFactor is cluster-replica-validity-factor (0: a replica may
	// always fail over, however old its data).
	ValidityFactor int
	// ReplPingPeriod is repl-ping-replica-period (part of the data age
	// allowance, as in Redis).
	ReplPingPeriod time.Duration
	// MigrationBarrier is cluster-migration-barrier.
	MigrationBarrier int
	// AllowReplicaMigration is cluster-allow-replica-migration.
	AllowReplicaMigration bool
	// NoFailover is cluster-replica-no-failover.
	NoFailover bool
	// Delays are the election delays; zero means DefaultDelays.
	Delays Delays
}

// DefaultConfig is Redis's defaults with shoal's delays.
func DefaultConfig() Config {
	return Config{NodeTimeout: 15 * time.Second, ValidityFactor: 10, ReplPingPeriod: 10 * time.Second,
		MigrationBarrier: 1, AllowReplicaMigration: true, Delays: DefaultDelays()}
}

const (
	// manualFailoverTimeout is CLUSTER_MF_TIMEOUT.
	manualFailoverTimeout = 5 * time.Second
	// manualPauseMult is CLUSTER_MF_PAUSE_MULT: the master pauses writers
	// for twice the manual failover timeout (the reset unpauses earlier).
	manualPauseMult = 2
	// migrationDelay is CLUSTER_SLAVE_MIGRATION_DELAY.
	migrationDelay = 5 * time.Second
	// pausedFlagDelay is how long a master waits after pausing its writers
	// before it announces its offset as final (PAUSED). Redis pauses
	// synchronously inside its event loop; here the pause is applied by the
	// server after this machine asked for it, and a write already past the
	// pause gate may still be finishing, so the announced offset must be
	// read after both: two cron ticks.
	pausedFlagDelay = 200 * time.Millisecond
)

// Reasons a replica cannot fail over (clusterLogCantFailover).
const (
	cantNone = iota
	cantDataAge
	cantWaitingDelay
	cantExpired
	cantWaitingVotes
)

var cantText = [...]string{
	cantNone:         "",
	cantDataAge:      "Disconnected from master for longer than allowed. Please check the 'cluster-replica-validity-factor' configuration option.",
	cantWaitingDelay: "Waiting the delay before I can start a new failover.",
	cantExpired:      "Failover attempt expired.",
	cantWaitingVotes: "Waiting for votes, but majority still not reached.",
}

// Errors of CLUSTER FAILOVER, with Redis's texts.
var (
	ErrFailoverOnMaster     = errors.New("ERR You should send CLUSTER FAILOVER to a replica")
	ErrFailoverNoMaster     = errors.New("ERR I'm a replica but my master is unknown to me")
	ErrFailoverMasterFailed = errors.New("ERR Master is down or failed, please use CLUSTER FAILOVER FORCE")
)

// Machine is one node's failover logic — Redis's replica election, vote
// granting, manual failover and replica migration — as a deterministic
// state machine: it does no I/O, reads time only from its Clock and
// randomness only from its seeded source, and answers every event with the
// Actions the cluster state must carry out, in order.
//
// Inputs: Tick (every cron tick, 100 ms), Step (a failover message from
// another node) and ManualFailover (CLUSTER FAILOVER). Each takes the
// current View of the cluster.
//
// A Machine is not safe for concurrent use; its owner (the gossip State,
// under the Bus lock) serializes every call.
type Machine struct {
	cfg   Config
	clock clock.Clock
	rng   *rand.Rand
	log   *zap.Logger

	// nodes and byID are Tick's view of the cluster, rebuilt every tick
	// into the same storage (an idle node ticks ten times a second).
	nodes []Node
	byID  map[string]*Node

	// Election (the replica side), Redis's failover_auth_*.
	authTime   time.Time // when the vote request may go out; zero: none scheduled
	authRank   int
	authSent   bool
	authEpoch  uint64
	authVoters map[string]bool // masters whose ACK counted this election
	cantReason int
	cantLogged time.Time

	// Voting (the master side): when we last voted for a replica of each
	// master (Redis's voted_time).
	votedTime map[string]time.Time

	// Manual failover, Redis's mf_*.
	mfEnd          time.Time // zero: none in progress
	mfCanStart     bool
	mfReplica      string    // master side: the replica failing us over
	mfFlagFrom     time.Time // master side: when PAUSED may be announced
	mfMasterOffset int64     // replica side: the master's final offset, -1 until known

	// Replica migration: since when each master has been orphaned.
	orphanedSince map[string]time.Time

	// restartedAt is when this node restarted from its saved configuration
	// (zero: a fresh node): see voteGrace.
	restartedAt time.Time

	// dataLostSince is when this master restarted without its data (zero:
	// it did not, or stopped waiting): see datalost.go.
	dataLostSince time.Time
	// emptyMaster offered this replica an empty history at emptyMasterAt
	// (MasterRestartedEmpty).
	emptyMaster   string
	emptyMasterAt time.Time

	out []Action
}

// New returns a machine with no election or manual failover in progress.
// seed (0 is allowed) seeds the random part of the election delay.
func New(cfg Config, clk clock.Clock, seed uint64, log *zap.Logger) *Machine {
	if log == nil {
		log = zap.NewNop()
	}
	m := &Machine{
		clock:          clk,
		rng:            rand.New(rand.NewPCG(seed, seed^0xa0761d6478bd642f)),
		log:            log.Named("failover"),
		authVoters:     map[string]bool{},
		votedTime:      map[string]time.Time{},
		orphanedSince:  map[string]time.Time{},
		mfMasterOffset: -1,
	}
	m.SetConfig(cfg)
	return m
}

// SetConfig replaces the settings (CONFIG SET of a cluster-* directive).
func (m *Machine) SetConfig(cfg Config) {
	if cfg.NodeTimeout <= 0 {
		cfg.NodeTimeout = 15 * time.Second
	}
	if cfg.Delays == (Delays{}) {
		cfg.Delays = DefaultDelays()
	}
	m.cfg = cfg
}

// Config returns the current settings.
func (m *Machine) Config() Config { return m.cfg }

func (m *Machine) emit(a Action) { m.out = append(m.out, a) }

func (m *Machine) take() []Action {
	out := m.out
	m.out = nil
	return out
}

// Restarted tells the machine that this node was restarted from its saved
// configuration (nodes.conf) just now.
func (m *Machine) Restarted() { m.restartedAt = m.clock.Now() }

// voteGrace is how long a node restarted from nodes.conf waits before it
// votes: max(2 × NT, 2 s). Not in Redis. Such a master still believes it
// serves the slots it had; if it was failed over meanwhile, its successor
// votes for those slots too, and two candidates can then each count a
// majority of "masters" in one epoch (found by the randomized schedules).
// Within 2 × NT it normally learns from an UPDATE that it is a replica now
// (it pings every node as it starts), and a vote delayed this way only slows
// an election down. A fresh node (no saved configuration) has no stale
// view and votes at once.
func (m *Machine) voteGrace() time.Duration {
	g := 2 * m.cfg.NodeTimeout
	if g < 2*time.Second {
		g = 2 * time.Second
	}
	return g
}

// authTimeout is max(2 × NT, 2 s): how long an election may wait for votes.
func (m *Machine) authTimeout() time.Duration {
	t := 2 * m.cfg.NodeTimeout
	if t < 2*time.Second {
		t = 2 * time.Second
	}
	return t
}

// MasterPaused reports whether this master is paused for a manual failover
// and its offset final: every message it sends then carries the PAUSED
// flag (clusterBuildMessageHdr).
func (m *Machine) MasterPaused() bool {
	return m.mfReplica != "" && !m.mfEnd.IsZero() && !m.clock.Now().Before(m.mfFlagFrom)
}

// Wakeup is when the machine next needs a Tick sooner than the cron's
// period would give it one: the scheduled start of an election (zero: no
// such deadline). Honouring it makes the election delays exact instead of
// rounded up to the next cron tick.
//
// Only a future deadline is reported: one that passed without the election
// starting (the master came back, say) must not make the owner wake the
// machine in a loop; the cron takes it from there.
func (m *Machine) Wakeup() time.Time {
	if m.authTime.IsZero() || m.authSent || !m.authTime.After(m.clock.Now()) {
		return time.Time{}
	}
	return m.authTime
}

// ManualFailoverInProgress reports whether a manual failover (either side)
// is running.
func (m *Machine) ManualFailoverInProgress() bool { return !m.mfEnd.IsZero() }

// Election is a snapshot of the replica side's election, for tests and
// logs.
type Election struct {
	Scheduled bool
	Time      time.Time
	Rank      int
	Sent      bool
	Epoch     uint64
	Votes     int
}

// Election returns the election state.
func (m *Machine) Election() Election {
	return Election{Scheduled: !m.authTime.IsZero(), Time: m.authTime, Rank: m.authRank, Sent: m.authSent,
		Epoch: m.authEpoch, Votes: len(m.authVoters)}
}

// resetManual is resetManualFailover: a master that paused its writers
// resumes them.
func (m *Machine) resetManual(why string) {
	if m.mfEnd.IsZero() && m.mfReplica == "" {
		return
	}
	if m.mfReplica != "" {
		m.emit(Action{Kind: ActResumeWrites})
	}
	if why != "" {
		m.log.Warn("manual failover reset", zap.String("why", why), zap.String("replica", m.mfReplica))
	}
	m.mfEnd = time.Time{}
	m.mfCanStart = false
	m.mfReplica = ""
	m.mfFlagFrom = time.Time{}
	m.mfMasterOffset = -1
}

// ManualFailover is CLUSTER FAILOVER [FORCE|TAKEOVER] on this node. The
// error, if any, is Redis's reply text; nothing changes then.
func (m *Machine) ManualFailover(v View, mode Mode) ([]Action, error) {
	me := v.Myself()
	if me.IsMaster {
		return nil, ErrFailoverOnMaster
	}
	master, ok := v.Node(me.MasterID)
	if me.MasterID == "" || !ok {
		return nil, ErrFailoverNoMaster
	}
	now := m.clock.Now()
	if mode == ModeDefault && (master.Fail || master.LastSeen.IsZero() || now.Sub(master.LastSeen) > m.cfg.NodeTimeout) {
		return nil, ErrFailoverMasterFailed
	}
	m.resetManual("")
	m.mfEnd = now.Add(manualFailoverTimeout)
	epoch := v.CurrentEpoch()
	switch mode {
	case ModeTakeover:
		// A new configEpoch without consensus
		// (clusterBumpConfigEpochWithoutConsensus), then take the slots.
		cfgEpoch := me.ConfigEpoch
		if cfgEpoch == 0 || cfgEpoch != v.MaxConfigEpoch() {
			epoch++
			cfgEpoch = epoch
			m.emit(Action{Kind: ActSetCurrentEpoch, Epoch: epoch})
		}
		m.log.Warn("taking over the master (user request)", zap.String("master", master.ID),
			zap.Uint64("configEpoch", cfgEpoch), zap.Uint64("currentEpoch", epoch))
		m.promote(cfgEpoch, master.ID)
	case ModeForce:
		m.log.Warn("forced failover user request accepted", zap.String("master", master.ID), zap.Uint64("currentEpoch", epoch))
		m.mfCanStart = true
		m.handleReplicaFailover(v, now)
	default:
		m.log.Warn("manual failover user request accepted", zap.String("master", master.ID), zap.Uint64("currentEpoch", epoch))
		m.emit(Action{Kind: ActSendMFStart, Node: master.ID})
	}
	return m.take(), nil
}

// promote is clusterFailoverReplaceYourMaster's decision part.
func (m *Machine) promote(configEpoch uint64, oldMaster string) {
	m.emit(Action{Kind: ActPromote, Epoch: configEpoch, Node: oldMaster})
	m.emptyMaster, m.emptyMasterAt = "", time.Time{}
	m.authTime = time.Time{}
	m.authSent = false
	m.resetManual("")
}

// Tick runs the cron part of the failover logic (clusterCron): manual
// failover timeouts and progress, the replica election, replica migration.
func (m *Machine) Tick(v View) []Action {
	now := m.clock.Now()
	me := v.Myself()

	// Manual failover timeout; a role change also ends it.
	if !m.mfEnd.IsZero() && m.mfEnd.Before(now) {
		m.resetManual("timed out")
	}
	if m.mfReplica != "" && !me.IsMaster {
		m.resetManual("no longer a master")
	}
	if m.mfReplica == "" && !m.mfEnd.IsZero() && me.IsMaster {
		m.resetManual("no longer a replica")
	}
	m.checkDataLost(v, me, now)
	if me.IsMaster {
		m.authTime, m.authSent, m.cantReason = time.Time{}, false, cantNone
		if m.mfReplica != "" && !now.Before(m.mfFlagFrom) {
			// Ping the replica continuously with our (final) offset.
			m.emit(Action{Kind: ActPingPaused, Node: m.mfReplica})
		}
		return m.take()
	}

	if !m.mfEnd.IsZero() && !m.mfCanStart && m.mfMasterOffset < 0 && me.MasterID != "" {
		// Until the master answers with its final offset, repeat MFSTART
		// every tick: Redis sends it once, and a master that has not yet
		// processed our switch to being its replica (a replica that just
		// rejoined) drops it, leaving the manual failover to time out.
		m.emit(Action{Kind: ActSendMFStart, Node: me.MasterID})
	}

	m.nodes = v.AppendNodes(m.nodes)
	nodes := m.nodes
	if m.byID == nil {
		m.byID = make(map[string]*Node, len(nodes))
	}
	byID := m.byID
	clear(byID)
	for i := range nodes {
		byID[nodes[i].ID] = &nodes[i]
	}
	m.handleManual(me)
	m.handleReplicaFailover(v, now)

	// Replica migration inputs (clusterCron): orphaned masters, the most
	// working replicas any master has, and how many mine has.
	orphaned, maxReplicas, mine := 0, 0, 0
	for i := range nodes {
		n := &nodes[i]
		if !n.IsMaster || n.Fail {
			continue
		}
		ok := okReplicas(n, byID, false)
		if ok == 0 && n.NumSlots > 0 && n.MigrateTo {
			orphaned++
		}
		if ok > maxReplicas {
			maxReplicas = ok
		}
		if n.ID == me.MasterID {
			mine = ok
		}
	}
	if orphaned > 0 && maxReplicas >= 2 && mine == maxReplicas && m.cfg.AllowReplicaMigration {
		m.handleMigration(v, me, nodes, byID, maxReplicas, now)
	} else if orphaned == 0 {
		clear(m.orphanedSince)
	}
	return m.take()
}

// okReplicas counts n's replicas that are not FAIL (and, with strict, not
// PFAIL either).
func okReplicas(n *Node, byID map[string]*Node, strict bool) int {
	c := 0
	for _, id := range n.Replicas {
		r := byID[id]
		if r == nil || r.Fail || (strict && r.PFail) {
			continue
		}
		c++
	}
	return c
}

// Step processes a failover message from another node.
func (m *Machine) Step(v View, msg Message) []Action {
	now := m.clock.Now()
	switch msg.Kind {
	case MsgAuthRequest:
		m.maybeVote(v, msg, now)
	case MsgAuthAck:
		sender, ok := v.Node(msg.From)
		if !ok || !sender.IsMaster || sender.NumSlots == 0 || !m.authSent || msg.CurrentEpoch < m.authEpoch {
			break
		}
		if !m.authVoters[msg.From] {
			m.authVoters[msg.From] = true
			m.log.Info("failover auth ack received", zap.String("from", msg.From),
				zap.Uint64("epoch", m.authEpoch), zap.Int("votes", len(m.authVoters)))
		}
		// Count it now, not at the next tick (CLUSTER_TODO_HANDLE_FAILOVER).
		if me := v.Myself(); !me.IsMaster {
			m.handleReplicaFailover(v, now)
		}
	case MsgMFStart:
		me := v.Myself()
		sender, ok := v.Node(msg.From)
		if !ok || !me.IsMaster || sender.MasterID != me.ID {
			break
		}
		if m.mfReplica == msg.From && !m.mfEnd.IsZero() {
			break // a repeated MFSTART (see Tick): already paused for it
		}
		m.resetManual("")
		m.mfEnd = now.Add(manualFailoverTimeout)
		m.mfReplica = msg.From
		m.mfFlagFrom = now.Add(pausedFlagDelay)
		m.log.Warn("manual failover requested by replica", zap.String("replica", msg.From),
			zap.Uint64("currentEpoch", v.CurrentEpoch()))
		m.emit(Action{Kind: ActPauseWrites, Duration: manualFailoverTimeout * manualPauseMult})
	case MsgMasterPaused:
		me := v.Myself()
		if m.mfEnd.IsZero() || me.IsMaster || msg.From != me.MasterID {
			break
		}
		if msg.Offset > m.mfMasterOffset {
			m.mfMasterOffset = msg.Offset
			m.log.Info("received the master's final offset for the manual failover",
				zap.String("master", msg.From), zap.Int64("offset", msg.Offset))
		}
		m.handleManual(me)
		if m.mfCanStart {
			m.handleReplicaFailover(v, now)
		}
	}
	return m.take()
}

// handleManual is clusterHandleManualFailover: the replica may start once
// it has processed the whole stream its paused master announced.
func (m *Machine) handleManual(me Node) {
	if m.mfEnd.IsZero() || m.mfCanStart || m.mfMasterOffset < 0 {
		return
	}
	// Redis waits for equality; >= also covers an offset announced a
	// moment before the replica's own published offset caught up.
	if me.ReplOffset >= m.mfMasterOffset {
		m.mfCanStart = true
		m.log.Warn("all master replication stream processed, manual failover can start",
			zap.Int64("offset", me.ReplOffset))
	}
}

// maybeVote is clusterSendFailoverAuthIfNeeded. Refusals are silent (no
// NACK), as in Redis; each is logged with its reason.
func (m *Machine) maybeVote(v View, msg Message, now time.Time) {
	me := v.Myself()
	if !me.IsMaster || me.NumSlots == 0 {
		return
	}
	cur := v.CurrentEpoch()
	deny := func(why string, f ...zap.Field) {
		m.log.Warn("failover auth denied", append([]zap.Field{zap.String("to", msg.From), zap.String("why", why),
			zap.Uint64("reqEpoch", msg.CurrentEpoch), zap.Uint64("currentEpoch", cur)}, f...)...)
	}
	if msg.CurrentEpoch < cur {
		deny("reqEpoch < curEpoch")
		return
	}
	if v.LastVoteEpoch() == cur {
		deny("already voted for this epoch")
		return
	}
	if !m.restartedAt.IsZero() && now.Sub(m.restartedAt) < m.voteGrace() {
		deny("just restarted: my view of the slots may be stale")
		return
	}
	req, ok := v.Node(msg.From)
	if !ok {
		return
	}
	if req.IsMaster {
		deny("it is a master node")
		return
	}
	master, ok := v.Node(req.MasterID)
	if req.MasterID == "" || !ok {
		deny("I don't know its master")
		return
	}
	if !master.Fail && !msg.ForceAck {
		deny("its master is up", zap.String("master", master.ID))
		return
	}
	if t, ok := m.votedTime[master.ID]; ok && now.Sub(t) < 2*m.cfg.NodeTimeout {
		deny("already voted for a replica of this master within 2 × node-timeout", zap.String("master", master.ID))
		return
	}
	if msg.Slots != nil {
		bad := -1
		var badEpoch uint64
		msg.Slots.Each(func(j int) {
			if bad >= 0 {
				return
			}
			if e, claimed := v.SlotOwnerEpoch(j); claimed && e > msg.ConfigEpoch {
				bad, badEpoch = j, e
			}
		})
		if bad >= 0 {
			deny("a claimed slot has a newer owner", zap.Int("slot", bad), zap.Uint64("slotEpoch", badEpoch),
				zap.Uint64("reqConfigEpoch", msg.ConfigEpoch))
			return
		}
	}
	m.votedTime[master.ID] = now
	m.emit(Action{Kind: ActRecordVote, Epoch: cur, Node: req.ID})
	m.emit(Action{Kind: ActSendAuthAck, Node: req.ID, Epoch: cur})
	m.log.Warn("failover auth granted", zap.String("to", req.ID), zap.String("master", master.ID), zap.Uint64("epoch", cur))
}

// rank is clusterGetSlaveRank: the number of sibling replicas (that may
// fail over) with a greater offset than mine — and, unlike Redis, those with
// the same offset and a smaller node id. Siblings with equal data (an idle
// shard) then get distinct ranks instead of racing in the same epoch, where
// split votes would cost a retry 2 × max(2 × NT, 2 s) later.
func rank(v View, me Node, master Node) int {
	r := 0
	for _, id := range master.Replicas {
		if id == me.ID {
			continue
		}
		s, ok := v.Node(id)
		if !ok || s.NoFailover {
			continue
		}
		if s.ReplOffset > me.ReplOffset || (s.ReplOffset == me.ReplOffset && s.ID < me.ID) {
			r++
		}
	}
	return r
}

// handleReplicaFailover is clusterHandleSlaveFailover.
func (m *Machine) handleReplicaFailover(v View, now time.Time) {
	me := v.Myself()
	manual := !m.mfEnd.IsZero() && m.mfCanStart
	master, ok := v.Node(me.MasterID)
	// A master that restarted without its data is taken over as if it
	// had failed (datalost.go); it is up, so the vote request carries
	// FORCEACK.
	takeover := ok && !me.IsMaster && !manual && m.takeoverFrom(me, master, now)
	if me.IsMaster || me.MasterID == "" || !ok || (!master.Fail && !manual && !takeover) ||
		(m.cfg.NoFailover && !manual) || master.NumSlots == 0 {
		m.cantReason = cantNone
		return
	}
	authTimeout := m.authTimeout()
	authRetry := 2 * authTimeout
	authAge := time.Duration(1<<62 - 1)
	if !m.authTime.IsZero() {
		authAge = now.Sub(m.authTime)
	}

	// Data age: how long since the replication link last carried data
	// (or, without that information, since we last heard from the master
	// on the bus), minus the node timeout it took to declare the master
	// failed (the baseline).
	var dataAge time.Duration
	switch {
	case me.ReplDataAgeKnown:
		dataAge = me.ReplDataAge
	case !master.LastSeen.IsZero():
		dataAge = now.Sub(master.LastSeen)
	}
	if dataAge > m.cfg.NodeTimeout {
		dataAge -= m.cfg.NodeTimeout
	}
	if m.cfg.ValidityFactor > 0 &&
		dataAge > m.cfg.ReplPingPeriod+m.cfg.NodeTimeout*time.Duration(m.cfg.ValidityFactor) && !manual {
		m.cantFailover(cantDataAge, master, now)
		return
	}

	if authAge > authRetry {
		d := m.cfg.Delays
		delay := d.Fixed
		if d.Random > 0 {
			delay += time.Duration(m.rng.Int64N(int64(d.Random)))
		}
		m.authRank = rank(v, me, master)
		delay += time.Duration(m.authRank) * d.PerRank
		m.authTime = now.Add(delay)
		m.authSent = false
		clear(m.authVoters)
		if !m.mfEnd.IsZero() {
			m.authTime = now
			m.authRank = 0
		}
		m.log.Warn("start of election delayed", zap.Duration("delay", m.authTime.Sub(now)), zap.Int("rank", m.authRank),
			zap.Int64("offset", me.ReplOffset), zap.String("master", master.ID), zap.Uint64("currentEpoch", v.CurrentEpoch()))
		// Tell the siblings our offset, so they rank themselves on fresh data.
		m.emit(Action{Kind: ActPongSiblings})
		if m.mfEnd.IsZero() {
			return
		}
		authAge = now.Sub(m.authTime)
	}

	// Fresher sibling offsets may have arrived: re-rank before asking.
	if !m.authSent && m.mfEnd.IsZero() {
		if r := rank(v, me, master); r > m.authRank {
			added := time.Duration(r-m.authRank) * m.cfg.Delays.PerRank
			m.authTime = m.authTime.Add(added)
			m.authRank = r
			m.log.Warn("replica rank updated", zap.Int("rank", r), zap.Duration("addedDelay", added))
		}
	}
	if now.Before(m.authTime) {
		m.cantFailover(cantWaitingDelay, master, now)
		return
	}
	if authAge > authTimeout {
		m.cantFailover(cantExpired, master, now)
		return
	}
	if !m.authSent {
		epoch := v.CurrentEpoch() + 1
		m.authEpoch = epoch
		m.authSent = true
		clear(m.authVoters)
		m.log.Warn("starting a failover election", zap.Uint64("epoch", epoch), zap.String("master", master.ID),
			zap.Int("rank", m.authRank), zap.Bool("manual", !m.mfEnd.IsZero()), zap.Bool("masterLostItsData", takeover))
		m.emit(Action{Kind: ActSetCurrentEpoch, Epoch: epoch})
		m.emit(Action{Kind: ActRequestVotes, Epoch: epoch, ForceAck: !m.mfEnd.IsZero() || takeover})
		return
	}
	quorum := v.Size()/2 + 1
	if len(m.authVoters) >= quorum {
		cfgEpoch := me.ConfigEpoch
		if cfgEpoch < m.authEpoch {
			cfgEpoch = m.authEpoch
		}
		m.log.Warn("failover election won: I'm the new master", zap.Uint64("epoch", m.authEpoch),
			zap.Uint64("configEpoch", cfgEpoch), zap.String("oldMaster", master.ID), zap.Int("votes", len(m.authVoters)))
		m.promote(cfgEpoch, master.ID)
		return
	}
	m.cantFailover(cantWaitingVotes, master, now)
}

// cantFailover logs why the replica cannot fail over, when the reason
// changes (or every 10 s), and only once the master has been failing for
// node-timeout + 5 s: a failover that goes well logs nothing here.
func (m *Machine) cantFailover(reason int, master Node, now time.Time) {
	if reason == m.cantReason && now.Sub(m.cantLogged) < 10*time.Second {
		return
	}
	m.cantReason = reason
	m.cantLogged = now
	m.log.Debug("currently unable to failover", zap.String("reason", cantText[reason]), zap.String("master", master.ID))
}

// handleMigration is clusterHandleSlaveMigration: a replica of one of the
// masters with the most working replicas moves to an orphaned master.
func (m *Machine) handleMigration(v View, me Node, nodes []Node, byID map[string]*Node, maxReplicas int, now time.Time) {
	if !v.StateOK() {
		return
	}
	mine := byID[me.MasterID]
	if mine == nil || okReplicas(mine, byID, true) <= m.cfg.MigrationBarrier {
		return
	}
	var target *Node
	candidate := me.ID
	for i := range nodes {
		n := &nodes[i]
		ok := 0
		isOrphaned := n.IsMaster && !n.Fail && n.MigrateTo
		if n.IsMaster {
			ok = okReplicas(n, byID, false)
		}
		if ok > 0 {
			isOrphaned = false
		}
		if isOrphaned {
			if target == nil && n.NumSlots > 0 {
				target = n
			}
			if _, seen := m.orphanedSince[n.ID]; !seen {
				m.orphanedSince[n.ID] = now
			}
		} else {
			delete(m.orphanedSince, n.ID)
		}
		if ok == maxReplicas {
			for _, id := range n.Replicas {
				if id < candidate {
					candidate = id
				}
			}
		}
	}
	if target != nil && candidate == me.ID && now.Sub(m.orphanedSince[target.ID]) > migrationDelay {
		m.log.Warn("migrating to orphaned master", zap.String("master", target.ID), zap.String("from", me.MasterID),
			zap.Uint64("currentEpoch", v.CurrentEpoch()))
		delete(m.orphanedSince, target.ID)
		m.emit(Action{Kind: ActReplicate, Node: target.ID})
	}
}
