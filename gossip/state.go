package gossip

import (
	crand "crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"net"
	"time"

	"github.com/shoal-db/shoal/clock"
	"github.com/shoal-db/shoal/failover"
	"github.com/shoal-db/shoal/slots"
	"go.uber.org/zap"
)

// Options are the settings of the cluster state machine.
type Options struct {
	// NodeTimeout is cluster-node-timeout.
	NodeTimeout time.Duration
	// RequireFullCoverage is cluster-require-full-coverage.
	RequireFullCoverage bool
	// AllowReplicaMigration is cluster-allow-replica-migration.
	AllowReplicaMigration bool
	// NoFailover is cluster-replica-no-failover (the nofailover flag).
	NoFailover bool
	// ValidityFactor is cluster-replica-validity-factor.
	ValidityFactor int
	// MigrationBarrier is cluster-migration-barrier.
	MigrationBarrier int
	// ReplPingPeriod is repl-ping-replica-period (part of a replica's
	// allowed data age).
	ReplPingPeriod time.Duration
	// LinkSendBufLimit is cluster-link-sendbuf-limit in bytes (0 = none):
	// the Bus frees a peer link whose send buffer passes it.
	LinkSendBufLimit uint64
	// ElectionDelays override the failover layer's election delays (zero:
	// failover.DefaultDelays).
	ElectionDelays failover.Delays
}

// DefaultOptions are Redis's defaults.
func DefaultOptions() Options {
	return Options{NodeTimeout: 15 * time.Second, RequireFullCoverage: true, AllowReplicaMigration: true,
		ValidityFactor: 10, MigrationBarrier: 1, ReplPingPeriod: 10 * time.Second}
}

const (
	blacklistTTL         = 60 * time.Second // CLUSTER_BLACKLIST_TTL
	maxRejoinDelay       = 5 * time.Second
	minRejoinDelay       = 500 * time.Millisecond
	writableDelay        = 2 * time.Second
	randomPingEveryTicks = 10 // one random ping per 10 ticks (ticks are 100 ms)
	// handshakeResendTicks: a handshake PING (or MEET) is repeated every
	// 200 ms until answered, several tries within the handshake timeout
	// (Redis reconnects a handshake link on every 100 ms cron): a node
	// that was met completes its side only through this PING's PONG.
	handshakeResendTicks = 2
)

// node is the state machine's record of one cluster node.
type node struct {
	id       string
	flags    Flags
	master   *node
	replicas []*node
	ip       string
	port     int
	// addrOf caches addr() for ip and cport as they were (the cron asks
	// for every peer's address ten times a second).
	addrOf struct {
		s, ip string
		cport int
	}
	cport    int
	pport    int // the plaintext client port of a TLS cluster's node (0: none)
	hostname string

	configEpoch uint64
	slots       slots.Bitmap
	numSlots    int

	ctime        time.Time
	pingSent     time.Time // zero: no ping pending
	pongReceived time.Time
	dataReceived time.Time
	failTime     time.Time
	linkTime     time.Time // when the "link" (our first send since it was down) was made
	// linkKilled: DEBUG CLUSTERLINK KILL freed the outbound link; nothing
	// is sent to the node until the next cron tick makes a new one.
	linkKilled bool
	// inboundTime is when the node's current link to us (its first
	// message after none for node-timeout, or after a kill) was made.
	inboundTime time.Time
	replOffset  int64
	// dataLost: the node's last message said it restarted as a master
	// without its data and waits for a replica to take over
	// (MFlagDataLost, failover/datalost.go).
	dataLost bool
	// loadedData: the node restarted from its own data set file with keys
	// and has not synced since (MFlagLoadedData; for myself, set by
	// RestartedWithData and cleared by a non-zero replication offset).
	loadedData bool

	failReports map[string]time.Time // reporting master id → last report
	lastGossip  uint64               // ping counter when last put in a gossip section
	handshakeTx int                  // ticks since the last handshake packet
}

func (n *node) isMaster() bool    { return n.flags&FlagMaster != 0 }
func (n *node) isSlave() bool     { return n.flags&FlagSlave != 0 }
func (n *node) inHandshake() bool { return n.flags&FlagHandshake != 0 }
func (n *node) timedOut() bool    { return n.flags&FlagPFail != 0 }
func (n *node) failed() bool      { return n.flags&FlagFail != 0 }
func (n *node) hasAddr() bool     { return n.flags&FlagNoAddr == 0 }
func (n *node) addr() string {
	if c := &n.addrOf; c.s == "" || c.ip != n.ip || c.cport != n.cport {
		c.s, c.ip, c.cport = net.JoinHostPort(n.ip, itoa(n.cport)), n.ip, n.cport
	}
	return n.addrOf.s
}

// lastHeard is when n last answered a ping of ours or sent us anything,
// as far as pinging it goes (pingGap): of a node flagged PFAIL or FAIL only
// its PONGs count, since only a PONG clears the flags.
func (n *node) lastHeard() time.Time {
	if n.flags&(FlagPFail|FlagFail) == 0 && n.dataReceived.After(n.pongReceived) {
		return n.dataReceived
	}
	return n.pongReceived
}

// Envelope is a message the state machine wants sent.
type Envelope struct {
	// To is the receiver's id in this node's table (a handshake node's
	// made-up id while the handshake lasts).
	To string
	// Addr is the receiver's bus address, "ip:cport".
	Addr string
	// Reliable asks for the stream transport (MEET, UPDATE, votes) instead
	// of a best-effort packet.
	Reliable bool
	Msg      *Message
}

// Ready is what the state machine produced since the last call to
// State.Ready, to be carried out by the I/O layer in this order: persist
// nodes.conf (fsync when Fsync) if Save, then send Messages, then tell the
// server about the rest.
type Ready struct {
	Messages []Envelope
	// Save asks for nodes.conf to be rewritten; Fsync asks for it to be on
	// disk before any message goes out (an epoch or vote changed).
	Save, Fsync bool
	// Table is the new routing table when it changed, else nil.
	Table *slots.Table
	// RoleChanged: myself became a replica of MasterID, or a master ("").
	RoleChanged bool
	MasterID    string
	// LostSlots are slots this master lost to a newer configuration while
	// remaining a master: the server must delete the keys it holds in them.
	LostSlots []int
	// MovedOutSlots are slots this master lost to the master it was
	// migrating them to, while remaining a master: the keys left in them
	// stay for the migration (or redis-cli fix) to move; the server no
	// longer serves them.
	MovedOutSlots []int
	// Inbound are received PUBLISH/PUBLISHSHARD messages for pub/sub, from
	// known senders only (the failover messages are handled inside, see
	// failover.go).
	Inbound []*Message
	// MemberlistJoin lists bus addresses to (re)join at the membership
	// layer (MEET).
	Join []string
	// IDChanged: myself's id changed (RESET HARD).
	IDChanged bool
	// AddrChanged: myself's announced address changed (learned from a
	// peer, or CONFIG SET); the membership layer's metadata must follow.
	AddrChanged bool
	// Reset: CLUSTER RESET ran; the membership layer must be left and
	// joined afresh.
	Reset bool
	// FlushData: a replica was reset; like Redis, the server must stop
	// replicating and empty its data set.
	FlushData bool
	// PauseWrites > 0: this master starts a manual failover; the server
	// must stop accepting writes for that long (CLIENT PAUSE WRITE).
	// ResumeWrites: that pause is over (the failover ended either way).
	PauseWrites  time.Duration
	ResumeWrites bool
	// DataLostEnded: this master, restarted without its data, stops
	// waiting for a replica to take over (RestartedWithoutData): it serves
	// its slots again (empty), or has become a replica meanwhile.
	DataLostEnded bool
}

// State is Redis Cluster's view of the cluster as seen by one node, as a
// deterministic state machine: it does no I/O and reads time only from its
// Clock. Inputs are Step (a received message), Tick (every 100 ms) and the
// command methods; outputs are collected by Ready.
//
// A State is not safe for concurrent use: the owner (Bus) serializes every
// call. Values returned by query methods are copies.
type State struct {
	opts  Options
	clock clock.Clock
	rng   *rand.Rand
	log   *zap.Logger

	myself *node
	// ipFixed: myself's IP is configured (cluster-announce-ip or a bind
	// address); otherwise it is learned from peers (learnMyIP).
	ipFixed bool
	nodes   map[string]*node
	order   []*node // insertion order: deterministic iteration

	currentEpoch  uint64
	lastVoteEpoch uint64

	// fo is the failover layer (elections, votes, manual failover, replica
	// migration), fed by Tick and Step (gossip/failover.go).
	fo *failover.Machine
	// replDataAge is this replica's data age by its replication link
	// (SetReplDataAge), when replDataAgeKnown.
	replDataAge      time.Duration
	replDataAgeKnown bool

	owner            slotNodes
	ownerNotClaiming slots.Bitmap
	migrating        slotNodes
	importing        slotNodes
	// handoffs are slots this master took at the end of an import (SETSLOT
	// NODE myself while importing) or by ADDSLOTS right after DELSLOTS took
	// them from another master, by slot: see holdsHandoff.
	handoffs map[int]handoff
	// unbound are slots CLUSTER DELSLOTS just took from another master, by
	// slot, until node-timeout: an ADDSLOTS of one on this node is a hand-off
	// from that master too (see applySlots). addSlot forgets a slot's entry.
	unbound map[int]handoff

	blacklist map[string]time.Time

	stateOK        bool
	size           int
	firstStateCall time.Time
	minorityTime   time.Time

	statsSent, statsRecv [msgTypeCount]uint64
	// dropType is DEBUG DROP-CLUSTER-PACKET-FILTER: received messages of
	// this type are ignored (dropNone: none).
	dropType            int64
	pingCounter         uint64
	linksBufferExceeded uint64 // links freed over cluster-link-sendbuf-limit
	ticks               uint64
	// lastTimedRun is when Tick or Wake last ran (discountStall).
	lastTimedRun time.Time
	pfailNodes   int

	// outputs
	out Ready
	// msgs recycles the messages out carries (nil: allocate each; the
	// Bus sets it, gossip/message_pool.go).
	msgs            *MessagePool
	todoUpdateState bool
	tableGen        uint64
	publishedGen    uint64
	tableVersion    uint64
	lastTable       *slots.Table
	myMasterSeen    *node
	roleSeen        bool
}

// NewState returns the state of a fresh node (no peers, epoch 0, no slots)
// with the given id ("" = a new random id) and address.
func NewState(opts Options, clk clock.Clock, seed uint64, log *zap.Logger, id, ip string, port, cport int, hostname string) *State {
	s := newState(opts, clk, seed, log)
	if !ValidID(id) {
		id = s.randomID()
	}
	me := s.newNode(id, FlagMyself|FlagMaster)
	me.ip, me.port, me.cport, me.hostname = ip, port, cport, hostname
	s.ipFixed = ip != ""
	if opts.NoFailover {
		me.flags |= FlagNoFailover
	}
	s.myself = me
	s.addNode(me)
	s.todoUpdateState = true
	s.out.Save = true
	return s
}

func newState(opts Options, clk clock.Clock, seed uint64, log *zap.Logger) *State {
	if clk == nil {
		clk = clock.System{}
	}
	if log == nil {
		log = zap.NewNop()
	}
	if seed == 0 {
		var b [8]byte
		_, _ = crand.Read(b[:])
		seed = binary.LittleEndian.Uint64(b[:]) | 1
	}
	if opts.NodeTimeout <= 0 {
		opts.NodeTimeout = 15 * time.Second
	}
	return &State{
		opts:      opts,
		clock:     clk,
		rng:       rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		log:       log,
		nodes:     make(map[string]*node),
		blacklist: make(map[string]time.Time),
		// Redis's clusterInit starts cluster_size at 1; a master keeps it
		// until its first state update after the writable delay.
		size:     1,
		dropType: dropNone,
		fo:       failover.New(failoverConfig(opts), clk, seed^0x5bd1e995, log),
	}
}

func (s *State) randomID() string {
	var b [20]byte
	for {
		for i := 0; i < len(b); i += 8 {
			v := s.rng.Uint64()
			for j := 0; j < 8 && i+j < len(b); j++ {
				b[i+j] = byte(v >> (8 * j))
			}
		}
		id := hex.EncodeToString(b[:])
		if s.nodes[id] == nil {
			return id
		}
	}
}

func (s *State) newNode(id string, flags Flags) *node {
	return &node{id: id, flags: flags, ctime: s.clock.Now()}
}

func (s *State) addNode(n *node) {
	s.nodes[n.id] = n
	s.order = append(s.order, n)
}

// delNode removes n from the cluster (clusterDelNode).
func (s *State) delNode(n *node) {
	for j := 0; j < slots.Count; j++ {
		if s.importing.get(j) == n {
			s.importing.set(j, nil)
			s.touchTable()
		}
		if s.migrating.get(j) == n {
			s.migrating.set(j, nil)
			s.touchTable()
		}
		if s.owner.get(j) == n {
			s.delSlot(j)
		}
	}
	for _, o := range s.order {
		delete(o.failReports, n.id)
	}
	if n.master != nil {
		n.master.removeReplica(n)
	}
	for _, r := range n.replicas {
		if r.master == n {
			r.master = nil
		}
	}
	delete(s.nodes, n.id)
	for i, o := range s.order {
		if o == n {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
}

func (s *State) renameNode(n *node, id string) {
	delete(s.nodes, n.id)
	n.id = id
	s.nodes[id] = n
}

func (m *node) removeReplica(r *node) {
	for i, x := range m.replicas {
		if x == r {
			m.replicas = append(m.replicas[:i], m.replicas[i+1:]...)
			break
		}
	}
	if len(m.replicas) == 0 {
		m.flags &^= FlagMigrateTo
	}
}

func (m *node) addReplica(r *node) {
	for _, x := range m.replicas {
		if x == r {
			return
		}
	}
	m.replicas = append(m.replicas, r)
	m.flags |= FlagMigrateTo
}

func (s *State) lookup(id string) *node {
	if !ValidID(id) {
		return nil
	}
	return s.nodes[id]
}

// touchTable records that the routing table must be republished.
func (s *State) touchTable() { s.tableGen++ }

func (s *State) save(fsync bool) {
	s.out.Save = true
	if fsync {
		s.out.Fsync = true
	}
}

func (s *State) addSlot(n *node, slot int) bool {
	if s.owner.get(slot) != nil {
		return false
	}
	if n.slots.Set(slot) {
		n.numSlots++
	}
	s.owner.set(slot, n)
	s.ownerNotClaiming.Clear(slot)
	delete(s.unbound, slot)
	s.touchTable()
	return true
}

func (s *State) delSlot(slot int) bool {
	delete(s.handoffs, slot)
	n := s.owner.get(slot)
	if n == nil {
		return false
	}
	if n.slots.Clear(slot) {
		n.numSlots--
	}
	s.owner.set(slot, nil)
	s.ownerNotClaiming.Clear(slot)
	s.touchTable()
	return true
}

func (s *State) delNodeSlots(n *node) int {
	deleted := 0
	n.slots.Each(func(j int) {
		if s.owner.get(j) == n {
			s.delSlot(j)
			deleted++
		} else {
			n.slots.Clear(j)
			n.numSlots--
		}
	})
	return deleted
}

func (s *State) closeAllSlots() {
	for j := range slots.Count {
		if s.migrating.get(j) != nil || s.importing.get(j) != nil {
			s.touchTable()
		}
		s.migrating.set(j, nil)
		s.importing.set(j, nil)
	}
}

func (s *State) slotUnclaimed(slot int) bool {
	return s.owner.get(slot) == nil || s.ownerNotClaiming.Has(slot)
}

// maxEpoch is clusterGetMaxEpoch.
func (s *State) maxEpoch() uint64 {
	max := s.currentEpoch
	for _, n := range s.order {
		if n.configEpoch > max {
			max = n.configEpoch
		}
	}
	return max
}

// bumpEpochWithoutConsensus is clusterBumpConfigEpochWithoutConsensus.
func (s *State) bumpEpochWithoutConsensus() bool {
	max := s.maxEpoch()
	if s.myself.configEpoch == 0 || s.myself.configEpoch != max {
		s.currentEpoch++
		s.myself.configEpoch = s.currentEpoch
		s.save(true)
		s.log.Warn("new configEpoch set", zap.Uint64("configEpoch", s.myself.configEpoch))
		return true
	}
	return false
}

// handleEpochCollision is clusterHandleConfigEpochCollision: of two masters
// with the same configEpoch the one with the smaller id moves on.
func (s *State) handleEpochCollision(sender *node) {
	me := s.myself
	if sender.configEpoch != me.configEpoch || !sender.isMaster() || !me.isMaster() {
		return
	}
	if sender.id <= me.id {
		return
	}
	s.currentEpoch++
	me.configEpoch = s.currentEpoch
	s.save(true)
	s.log.Info("configEpoch collision resolved", zap.String("with", sender.id), zap.Uint64("configEpoch", me.configEpoch))
}

// setNodeAsMaster is clusterSetNodeAsMaster.
func (s *State) setNodeAsMaster(n *node) {
	if n.isMaster() {
		return
	}
	if n.master != nil {
		n.master.removeReplica(n)
		if n != s.myself {
			n.flags |= FlagMigrateTo
		}
	}
	n.flags &^= FlagSlave
	n.flags |= FlagMaster
	n.master = nil
	s.save(false)
	s.todoUpdateState = true
	s.touchTable()
}

// setMyMaster is clusterSetMaster: myself becomes a replica of n.
func (s *State) setMyMaster(n *node) {
	me := s.myself
	if me.isMaster() {
		me.flags &^= FlagMaster | FlagMigrateTo
		me.flags |= FlagSlave
		s.closeAllSlots()
	} else if me.master != nil {
		me.master.removeReplica(me)
	}
	me.master = n
	n.addReplica(me)
	s.touchTable()
}

// blacklist handling (60 s after FORGET).
func (s *State) blacklistCleanup() {
	now := s.clock.Now()
	for id, exp := range s.blacklist {
		if now.After(exp) {
			delete(s.blacklist, id)
		}
	}
}

func (s *State) blacklisted(id string) bool {
	s.blacklistCleanup()
	_, ok := s.blacklist[id]
	return ok
}

// connected reports whether the node counts as linked: myself, or a node
// from which something arrived within node-timeout (we ping every node at
// least every node-timeout/2, so a live node never drops out).
func (s *State) connected(n *node) bool {
	if n == s.myself {
		return true
	}
	if n.dataReceived.IsZero() {
		return false
	}
	return s.clock.Now().Sub(n.dataReceived) <= s.opts.NodeTimeout
}

func itoa(v int) string {
	var b [20]byte
	i := len(b)
	neg := v < 0
	u := uint64(v)
	if neg {
		u = uint64(-v)
	}
	for {
		i--
		b[i] = byte('0' + u%10)
		u /= 10
		if u == 0 {
			break
		}
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
