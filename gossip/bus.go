package gossip

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/shoal-db/shoal/clock"
	"github.com/shoal-db/shoal/slots"
	"go.uber.org/zap"
)

// Config configures a Bus.
type Config struct {
	Options
	// ID is the node id used when ConfigFile does not exist yet ("" = a new
	// random id). An existing nodes.conf always wins.
	ID string
	// IP is the announced address (cluster-announce-ip, else the bind
	// address); "" = the address memberlist advertises.
	IP string
	// Port is the client port; ClusterPort the bus port (0 = Port+10000).
	Port, ClusterPort int
	// Hostname is cluster-announce-hostname.
	Hostname string
	// BindAddr is the bus bind address ("" = 0.0.0.0); BindPort the port
	// the bus listens on (0 = ClusterPort, which is the announced one).
	BindAddr string
	BindPort int
	// ConfigFile is nodes.conf (cluster-config-file, resolved against dir);
	// "" keeps the state in memory only.
	ConfigFile string
	Logger     *zap.Logger
	// Clock defaults to the system clock; Seed (0 = random) seeds ids and
	// gossip choices.
	Clock clock.Clock
	Seed  uint64
	// Transport replaces memberlist's UDP/TCP transport (tests use
	// memberlist.MockNetwork).
	Transport memberlist.Transport
	// MemberName is the memberlist node name ("" = "shoal-<random>"). It
	// is not the cluster id (which RESET HARD changes); it must be unique
	// in the membership. memberlist.MockTransport routes by it.
	MemberName string
	// TickInterval is the cron period (default 100 ms, as Redis). The
	// owner may drive the cron with CronTick instead (see there).
	TickInterval time.Duration
	// RejoinInterval is how often peers missing from memberlist are joined
	// again (default 10 s; memberlist reaps dead peers and never re-joins
	// them by itself).
	RejoinInterval time.Duration
	// SourceAddr returns bind-source-addr ("" = none, or nil): the local
	// address the bus's outgoing TCP connections are made from.
	SourceAddr func() string
	// TLS, when set, carries the whole bus over TLS (tls-cluster yes;
	// gossip/tlstransport.go). Ignored with a caller-provided Transport.
	TLS *BusTLS
	// PPort is the plaintext client port announced beside Port in a TLS
	// cluster (Redis's pport; 0 = none).
	PPort int
	// Secrets are cluster-bus-secret's secrets (none: the bus is not
	// encrypted): the first encrypts, all decrypt (gossip/secret.go).
	Secrets []string
	// OnChange receives what the server must act on. Calls come from one
	// goroutine, in order, never with the Bus lock held: OnChange may call
	// Bus methods.
	OnChange func(Change)
}

// Change is one notification for the server.
type Change struct {
	// Table is the new routing table (also already stored in Slots()), or nil.
	Table *slots.Table
	// RoleChanged: this node became a replica of MasterID (whose client
	// address is MasterIP:MasterPort), or a master when MasterID is "".
	RoleChanged        bool
	MasterID, MasterIP string
	MasterPort         int
	// FlushData: CLUSTER RESET turned this replica into a master: stop
	// replicating and empty the data set (Redis's clusterReset).
	FlushData bool
	// LostSlots: slots this master lost to a newer configuration while
	// staying a master; delete their keys.
	LostSlots []int
	// MovedOutSlots: slots this master lost to the master it was migrating
	// them to; keep their keys for the migration to move, but stop serving
	// them (e.g. invalidate tracked keys).
	MovedOutSlots []int
	// Inbound: PUBLISH(SHARD) messages from known nodes, for pub/sub.
	Inbound []*Message
	// PauseWrites > 0: a manual failover of this master started; stop
	// accepting writes for that long (CLIENT PAUSE WRITE). ResumeWrites:
	// it ended, accept writes again.
	PauseWrites  time.Duration
	ResumeWrites bool
	// DataLostEnded: this master, restarted without its data, no longer
	// waits for a replica to take over (Bus.RestartedWithoutData): serve
	// its slots again and let replicas sync.
	DataLostEnded bool
}

// Bus is one node's cluster bus: the State, driven by a 100 ms cron and by
// messages carried over memberlist and the cluster links, with nodes.conf persisted before any
// message that depends on it leaves.
//
// Concurrency: every exported method is safe for concurrent use. Commands
// and queries take one mutex around the State (they are admin operations;
// the hot path reads Slots().Load() without any lock). Messages are sent
// after the mutex is released.
type Bus struct {
	cfg Config
	log *zap.Logger

	mu sync.Mutex // guards st and saving nodes.conf
	// cfLock is the flock on nodes.conf held from New to Stop (nil
	// without a ConfigFile): a second node on the file refuses to start.
	cfLock *configLock
	st     *State
	// hold is taken by the loop around every step (received messages,
	// ticks) and by Hold: a MULTI/EXEC of CLUSTER commands runs as one
	// step, as in single-threaded Redis.
	hold sync.Mutex

	ref   *slots.Ref
	ml    atomic.Pointer[memberlist.Memberlist]
	mlCfg *memberlist.Config
	name  string // memberlist node name (not the cluster id: that may change)
	// inbox holds the received messages for the loop (4096: a burst of
	// PONGs from a large cluster; a queue, not a channel, see
	// gossip/queue.go).
	inbox *queue[[]byte]
	// freeBufs holds buffers the loop has decoded, for NotifyMsg to
	// reuse (recycleBuf).
	freeBufs chan []byte
	// received and spare are stepReceived's batch and the decoded
	// messages it may decode into again (only the goroutine that takes
	// from inbox touches them).
	received []*Message
	spare    []*Message
	strs     stringTable // the strings of the messages it decodes
	// msgs recycles the messages the State sends: sendPacket and
	// linkFrame give each back once encoded.
	msgs  MessagePool
	peers []linkPeer // the cron's list of peers to keep links to, reused
	// cronTicks carries the owner's CronTick calls (cap 1).
	cronTicks chan struct{}
	// outq holds the packets (PING, PONG, FAIL) for the sender: 2048 fit a
	// FAIL and a PONG broadcast to a 1000-node cluster in one step. Not a
	// channel: a channel's ring buffer becomes resident as the sends go
	// round it, however short the queue (gossip/queue.go).
	outq *queue[outMsg]
	// packet is the sender's encoding buffer (only sendPacket touches it).
	packet []byte
	notes  chan Change
	stop   chan struct{}
	wg     sync.WaitGroup // loop and notifier
	swg    sync.WaitGroup // senders (a send may block inside the transport)

	started, stopped atomic.Bool
	joining          atomic.Bool

	bytesSent, bytesRecv, dropped atomic.Uint64
	guard                         *busGuard // checks bus input before memberlist parses it
	saveErr                       atomic.Pointer[error]

	myID atomic.Pointer[string] // for NodeMeta, which must not take mu
	// curEpoch is the current epoch as of the last step, for Identity
	// (read by every log line, which must not take mu: the bus logs under it).
	curEpoch atomic.Uint64

	srcMu  sync.Mutex
	srcIPs map[string]string // destination IP → our source address toward it

	// links are the cluster links, a stream per peer with its send
	// buffer (gossip/link.go); transport is the current guard transport
	// they dial through and accept from.
	links     *busLinks
	transport atomic.Pointer[guardTransport]

	offsetSrc  atomic.Pointer[func() int64]                 // SetReplOffsetSource
	dataAgeSrc atomic.Pointer[func() (time.Duration, bool)] // SetReplDataAgeSource
	wakeAt     time.Time                                    // State.NextWakeup; loop goroutine only
	// streamTimeout is memberlist's stream timeout for the current
	// cluster-node-timeout, in ns (SetOptions; gossip/bus_timing.go).
	streamTimeout atomic.Int64

	secretMu sync.Mutex          // guards keyring and cfg.Secrets
	keyring  *memberlist.Keyring // nil: no secret (gossip/secret.go)

	hintMu    sync.Mutex
	alive     map[string]bool // cluster id → memberlist's last verdict (a hint)
	aliveAddr map[string]bool // bus address → memberlist's last verdict
}

// New loads nodes.conf (or starts a fresh node when it does not exist or is
// empty) and returns a Bus that is not yet talking to anyone; call Start.
// The routing table is available from Slots() at once.
func New(cfg Config) (*Bus, error) {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.TickInterval <= 0 {
		cfg.TickInterval = 100 * time.Millisecond
	}
	if cfg.RejoinInterval <= 0 {
		cfg.RejoinInterval = 10 * time.Second
	}
	if cfg.ClusterPort == 0 {
		cfg.ClusterPort = cfg.Port + 10000
	}
	b := &Bus{
		cfg:       cfg,
		log:       cfg.Logger.Named("cluster"),
		ref:       slots.NewRef(nil),
		inbox:     newQueue[[]byte](4096),
		freeBufs:  make(chan []byte, 64),
		cronTicks: make(chan struct{}, 1),
		outq:      newQueue[outMsg](2048),
		notes:     make(chan Change, 1024),
		stop:      make(chan struct{}),
		alive:     make(map[string]bool),
		aliveAddr: make(map[string]bool),
	}
	b.guard = newBusGuard(b.log)
	b.links = newBusLinks(b)
	var st *State
	ok := false
	if cfg.ConfigFile != "" {
		lock, err := lockConfigFile(cfg.ConfigFile) // gossip/conflock.go
		if err != nil {
			return nil, err
		}
		b.cfLock = lock
		defer func() {
			if !ok {
				lock.release()
			}
		}()
		data, err := os.ReadFile(cfg.ConfigFile)
		switch {
		case err == nil && len(data) > 0:
			st, err = LoadState(cfg.Options, cfg.Clock, cfg.Seed, b.log, data)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", cfg.ConfigFile, err)
			}
			b.log.Info("node configuration loaded", zap.String("id", st.MyID()))
		case err != nil && !errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("loading the cluster node config from %s: %w", cfg.ConfigFile, err)
		}
	}
	if st == nil {
		st = NewState(cfg.Options, cfg.Clock, cfg.Seed, b.log, cfg.ID, cfg.IP, cfg.Port, cfg.ClusterPort, cfg.Hostname)
		b.log.Info("no cluster configuration found, I'm " + st.MyID())
	} else {
		st.SetAnnounced(cfg.IP, cfg.Port, cfg.ClusterPort, cfg.Hostname)
	}
	st.SetPlaintextPort(cfg.PPort)
	st.UseMessagePool(&b.msgs)
	b.st = st
	b.mu.Lock()
	rd := st.Ready()
	rd.Save, rd.Fsync = true, true
	if err := b.persistLocked(rd); err != nil {
		b.mu.Unlock()
		return nil, err
	}
	b.mu.Unlock()
	ok = true
	b.dispatch(rd, false)
	return b, nil
}

// Start creates the memberlist instance on the bus port and starts the
// cron, receive and send loops. Peers known from nodes.conf are joined.
func (b *Bus) Start() error {
	if !b.started.CompareAndSwap(false, true) {
		return errors.New("gossip: bus already started")
	}
	mc := memberlist.DefaultLANConfig()
	var nonce [6]byte
	b.mu.Lock()
	v := b.st.rng.Uint64()
	b.mu.Unlock()
	for i := range nonce {
		nonce[i] = byte(v >> (8 * i))
	}
	b.name = fmt.Sprintf("shoal-%x", nonce)
	if b.cfg.MemberName != "" {
		b.name = b.cfg.MemberName
	}
	mc.Name = b.name
	mc.BindAddr = b.cfg.BindAddr
	if mc.BindAddr == "" {
		mc.BindAddr = "0.0.0.0"
	}
	mc.BindPort = b.cfg.ClusterPort
	if b.cfg.BindPort > 0 {
		mc.BindPort = b.cfg.BindPort
	}
	mc.AdvertisePort = b.cfg.ClusterPort
	if b.cfg.IP != "" {
		mc.AdvertiseAddr = b.cfg.IP
	} else if b.cfg.Transport == nil && net.ParseIP(mc.BindAddr).IsUnspecified() {
		// memberlist would refuse to start without a private address
		// with a default route (see advertiseFallback).
		mc.AdvertiseAddr = systemAdvertiseFallback()
	}
	// Compression is off: every node runs the same version, and an LZW
	// payload would be a decompression bomb the guard cannot bound.
	mc.EnableCompression = false
	// memberlist's timers follow cluster-node-timeout (gossip/bus_timing.go).
	b.mu.Lock()
	timingFor(b.st.opts.NodeTimeout).apply(mc)
	b.mu.Unlock()
	mc.SuspicionMult = 3
	mc.SuspicionMaxTimeoutMult = 2
	mc.PushPullInterval = 30 * time.Second
	mc.Delegate = (*busDelegate)(b)
	mc.Events = (*busEvents)(b)
	if ce := b.log.Core(); ce.Enabled(zap.DebugLevel) {
		mc.Logger = zap.NewStdLog(b.log.Named("memberlist"))
	} else {
		mc.Logger = log.New(io.Discard, "", 0)
	}
	if err := b.applySecrets(mc); err != nil {
		return fmt.Errorf("cluster-bus-secret: %w", err)
	}
	b.mlCfg = mc
	ml, err := b.createMemberlist(mc)
	if err != nil {
		return fmt.Errorf("cluster bus on port %d: %w", b.cfg.ClusterPort, err)
	}
	b.ml.Store(ml)
	if b.cfg.Transport != nil {
		// A caller-provided transport (tests) names the node by its
		// address: that is the announced one. A real node without
		// cluster-announce-ip or bind learns its IP from its peers
		// (State.learnMyIP): memberlist's advertised address is a guess
		// from the host's interfaces, possibly one its peers do not use.
		ln := ml.LocalNode()
		ip := b.cfg.IP
		if ip == "" {
			ip = ln.Addr.String()
		}
		b.mu.Lock()
		b.st.SetAnnounced(ip, 0, int(ln.Port), b.cfg.Hostname)
		rd := b.st.Ready()
		err := b.persistLocked(rd)
		b.mu.Unlock()
		if err != nil {
			b.log.Error("saving nodes.conf", zap.Error(err))
		}
		b.dispatch(rd, true)
	}
	b.wg.Add(2)
	go b.loop()
	go b.notifier()
	// Packets go out from one sender; everything else rides on the
	// cluster links, each with its own writer (gossip/link.go).
	b.swg.Add(1)
	go b.sender(b.outq)
	b.rejoin()
	return nil
}

// Stop saves nodes.conf, leaves memberlist and stops every goroutine.
func (b *Bus) Stop() error {
	if !b.started.Load() {
		b.cfLock.release() // never started: nothing to save
		return nil
	}
	if !b.stopped.CompareAndSwap(false, true) {
		return nil
	}
	close(b.stop)
	b.wg.Wait()
	// A sender stuck in a transport write (an in-memory peer that is gone)
	// must not hang Stop: give them a moment, then go on.
	done := make(chan struct{})
	go func() { b.swg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
	}
	b.links.close()
	b.mu.Lock()
	err := b.persistLocked(Ready{Save: true, Fsync: true})
	b.mu.Unlock()
	b.cfLock.release()
	if ml := b.ml.Load(); ml != nil {
		_ = ml.Leave(200 * time.Millisecond)
		_ = ml.Shutdown()
	}
	b.links.wait()
	return err
}

// maxBatch bounds the messages handled under one lock acquisition.
const maxBatch = 256

// loop is the single goroutine that feeds the State: cron ticks, received
// messages and the periodic re-join.
func (b *Bus) loop() {
	defer b.wg.Done()
	// The cron runs on the owner's CronTick calls, or on this timer when
	// none came for TickInterval and a half (the owner's cron is paused,
	// or slower than the bus's).
	tick := time.NewTimer(b.cfg.TickInterval)
	defer tick.Stop()
	rejoin := time.NewTicker(b.cfg.RejoinInterval)
	defer rejoin.Stop()
	// wake fires at the state machine's next deadline (a node turning
	// PFAIL, an election's start), which falls between two cron ticks.
	wake := time.NewTimer(time.Hour)
	defer wake.Stop()
	var armed time.Time
	for {
		if !b.wakeAt.Equal(armed) {
			armed = b.wakeAt
			wake.Stop()
			if !armed.IsZero() {
				wake.Reset(time.Until(armed))
			}
		}
		select {
		case <-b.stop:
			return
		case <-wake.C:
			armed = time.Time{}
			b.step(func(s *State) { s.Wake() })
		case <-tick.C:
			tick.Reset(b.cfg.TickInterval)
			b.cron()
		case <-b.cronTicks:
			tick.Reset(b.cfg.TickInterval + b.cfg.TickInterval/2)
			b.cron()
		case <-b.inbox.ready:
			if buf, ok := b.inbox.pop(); ok {
				b.stepReceived(buf)
			}
			if b.inbox.len() > 0 {
				b.inbox.wake() // the rest on the next turn, after whatever else is due
			}
		case <-rejoin.C:
			b.rejoin()
		}
	}
}

// cron is one run of the cluster cron.
func (b *Bus) cron() {
	// What arrived first is processed first: after a stall (DEBUG
	// SLEEP holds the loop for seconds) the cron must not judge
	// peers on stale receive times while their messages wait.
	for pending := b.inbox.len(); pending > 0; pending -= maxBatch {
		buf, ok := b.inbox.pop() // only this goroutine takes
		if !ok {
			break
		}
		b.stepReceived(buf)
	}
	// The replication offset is read outside the lock (the
	// source may take its own locks).
	off, fresh := b.readReplOffset()
	age, known := b.readReplDataAge()
	b.step(func(s *State) {
		if fresh {
			s.SetReplOffset(off)
		}
		s.SetReplDataAge(age, known)
		b.freeLinksOverLimit(s)
		s.Tick()
		b.peers = s.linkPeers(b.peers[:0])
		b.links.sync(b.peers)
	})
}

// CronTick runs the cluster cron now, from the owner's own periodic work
// (every TickInterval; as Redis runs clusterCron inside serverCron): an
// idle node then wakes once per period for both crons, not twice. The
// bus's own timer takes over while no CronTick comes. It never blocks.
func (b *Bus) CronTick() {
	select {
	case b.cronTicks <- struct{}{}:
	default: // one is pending already
	}
}

// stepReceived steps the State through buf and what else is waiting in
// the inbox: one lock, one Ready (table rebuild, nodes.conf write) per
// batch, not per message.
func (b *Bus) stepReceived(buf []byte) {
	batch := b.received[:0]
	for more := true; more; {
		m := b.spareMessage()
		err := decode(m, buf, reader{strs: &b.strs})
		b.recycleBuf(buf) // the message keeps nothing of it
		if err == nil {
			batch = append(batch, m)
		} else {
			b.spare = append(b.spare, m)
			// The guard checked it already: only a transport that
			// bypasses it gets here.
			b.guard.reject(nil, "bus message", err)
		}
		if len(batch) >= maxBatch {
			break
		}
		var ok bool
		if buf, ok = b.inbox.pop(); !ok {
			more = false
		}
	}
	b.step(func(s *State) {
		for _, m := range batch {
			s.Step(m)
		}
	})
	// Step keeps no message but a PUBLISH's (its Ready's Inbound, read by
	// the notifier): the others are decoded into again.
	for i, m := range batch {
		if m.Type != MsgPublish && m.Type != MsgPublishShard && len(b.spare) < maxBatch {
			b.spare = append(b.spare, m)
		}
		batch[i] = nil
	}
	b.received = batch[:0]
}

// recycledBufSize bounds the buffers freeBufs keeps: a PING or PONG fits
// (a packet is at most packetLimit), a large PUBLISH is left to the
// collector.
const recycledBufSize = 2048

// recycleBuf gives a decoded message's buffer to NotifyMsg to copy the
// next packet into (a new buffer per PING and PONG received was a tenth
// of an idle node's garbage).
func (b *Bus) recycleBuf(buf []byte) {
	if cap(buf) > recycledBufSize {
		return
	}
	select {
	case b.freeBufs <- buf[:0]:
	default:
	}
}

// spareMessage returns a message to decode into: a spare one, or a new one.
func (b *Bus) spareMessage() *Message {
	if n := len(b.spare); n > 0 {
		m := b.spare[n-1]
		b.spare[n-1] = nil
		b.spare = b.spare[:n-1]
		return m
	}
	return &Message{}
}

func (b *Bus) step(fn func(*State)) {
	b.hold.Lock()
	defer b.hold.Unlock()
	b.mu.Lock()
	fn(b.st)
	rd := b.st.Ready()
	b.wakeAt = b.st.NextWakeup()
	err := b.persistLocked(rd)
	b.mu.Unlock()
	if err != nil {
		b.log.Error("can't update cluster config file", zap.Error(err))
		rd = withoutUnsavedMessages(rd)
	}
	b.dispatch(rd, true)
}

// withoutUnsavedMessages drops the messages of a step whose epoch or vote
// could not be saved: a vote (ACK) or a vote request must never leave
// before its epoch is on disk (Redis exits in clusterSaveConfigOrDie; here
// the messages are withheld and the next successful save lets the
// protocol go on — a lost vote or request only delays an election).
func withoutUnsavedMessages(rd Ready) Ready {
	if rd.Fsync {
		rd.Messages = nil
	}
	return rd
}

// do runs a command against the State and carries out its effects.
func (b *Bus) do(fn func(*State) error) error {
	b.mu.Lock()
	err := fn(b.st)
	rd := b.st.Ready()
	perr := b.persistLocked(rd)
	b.mu.Unlock()
	if perr != nil {
		b.log.Error("can't update cluster config file", zap.Error(perr))
		rd = withoutUnsavedMessages(rd)
	}
	b.dispatch(rd, b.started.Load() && !b.stopped.Load())
	return err
}

// persistLocked writes nodes.conf when rd asks for it. Called with b.mu
// held, before any of rd's messages is sent.
func (b *Bus) persistLocked(rd Ready) error {
	if rd.Table != nil {
		b.ref.Store(rd.Table)
	}
	if id := b.st.MyID(); b.myIDAtomic() != id {
		b.myID.Store(&id)
	}
	cur, _ := b.st.Epochs()
	b.curEpoch.Store(cur)
	if !rd.Save || b.cfg.ConfigFile == "" {
		return nil
	}
	// Like Redis (clusterSaveConfig), only epoch and vote changes are
	// fsynced before the node goes on; the others are written (an atomic
	// rename) and left to the OS: fsyncing every SETSLOT made a redis-cli
	// reshard spend milliseconds per command on the disk.
	if err := writeConfigFile(b.cfg.ConfigFile, b.st.ConfigText(), rd.Fsync, b.cfLock); err != nil {
		b.saveErr.Store(&err)
		return err
	}
	return nil
}

// dispatch sends rd's messages and queues its notifications.
func (b *Bus) dispatch(rd Ready, running bool) {
	if running {
		for _, e := range rd.Messages {
			m, ok := newOutMsg(e)
			if !ok {
				continue
			}
			// Reliable messages and those too large for a packet go on
			// the peer's link (which also opens with whatever comes
			// first); the others (PING, PONG, FAIL) as packets.
			if b.links.offer(m, e.Reliable || m.size > packetLimit) {
				continue
			}
			if !b.outq.push(m) {
				b.dropped.Add(1)
			}
		}
		ml := b.ml.Load()
		if rd.Reset {
			ml = b.restartMemberlist()
		}
		if ml != nil && len(rd.Join) > 0 {
			go func(addrs []string) { _, _ = ml.Join(addrs) }(rd.Join)
		}
		if ml != nil && (rd.IDChanged || rd.AddrChanged) && !rd.Reset {
			go func() { _ = ml.UpdateNode(time.Second) }()
		}
	}
	if rd.Table == nil && !rd.RoleChanged && !rd.FlushData && len(rd.LostSlots) == 0 && len(rd.MovedOutSlots) == 0 && len(rd.Inbound) == 0 &&
		rd.PauseWrites == 0 && !rd.ResumeWrites && !rd.DataLostEnded {
		return
	}
	c := Change{Table: rd.Table, RoleChanged: rd.RoleChanged, MasterID: rd.MasterID, FlushData: rd.FlushData,
		LostSlots: rd.LostSlots, MovedOutSlots: rd.MovedOutSlots, Inbound: rd.Inbound, PauseWrites: rd.PauseWrites, ResumeWrites: rd.ResumeWrites,
		DataLostEnded: rd.DataLostEnded}
	if c.RoleChanged && c.MasterID != "" {
		b.mu.Lock()
		if n, ok := b.st.Node(c.MasterID); ok {
			c.MasterIP, c.MasterPort = n.IP, n.Port
		}
		b.mu.Unlock()
	}
	if b.cfg.OnChange == nil {
		return
	}
	if !running {
		// Before Start (or after Stop) there is no notifier goroutine.
		b.cfg.OnChange(c)
		return
	}
	select {
	case b.notes <- c:
	case <-b.stop:
	}
}

func (b *Bus) notifier() {
	defer b.wg.Done()
	for {
		select {
		case <-b.stop:
			return
		case c := <-b.notes:
			b.cfg.OnChange(c)
		}
	}
}

// outMsg is one message on a send queue or a link's send buffer. It is
// encoded by the sender (a broadcast PUBLISH shares its payload until
// then); size is what it counts in its link's send buffer.
type outMsg struct {
	to, addr string
	msg      *Message
	size     int
}

// packetLimit is the largest message sent as a packet (memberlist's UDP
// budget).
const packetLimit = 1400 - 64

// newOutMsg is e to send; false when e has no usable address.
func newOutMsg(e Envelope) (outMsg, bool) {
	host, _, err := net.SplitHostPort(e.Addr)
	if err != nil || net.ParseIP(host) == nil {
		return outMsg{}, false
	}
	return outMsg{to: e.To, addr: e.Addr, msg: e.Msg, size: e.Msg.sizeHint()}, true
}

// freeLinksOverLimit is clusterCron's freeClusterLinkOnBufferLimitReached:
// a link whose send buffer passed cluster-link-sendbuf-limit (0 = none) is
// freed — its connection closed, its queued messages dropped — and
// counted; the State makes a new link (a PING) on this tick. Called by the
// loop with b.mu held.
func (b *Bus) freeLinksOverLimit(s *State) {
	limit := s.opts.LinkSendBufLimit
	if limit == 0 {
		return
	}
	for _, id := range b.links.overLimit(limit) {
		s.LinkFreed(id)
	}
}

// sender sends the packets of the queue.
func (b *Bus) sender(q *queue[outMsg]) {
	defer b.swg.Done()
	for {
		select {
		case <-b.stop:
			return
		case <-q.ready:
		}
		for {
			m, ok := q.pop()
			if !ok {
				break
			}
			b.sendPacket(m)
			select {
			case <-b.stop:
				return
			default:
			}
		}
	}
}

// sendPacket encodes one message and sends it as a packet (a stream if it
// turns out larger than a packet).
//
// Without a cluster secret the packet goes to the transport from here:
// memberlist would add nothing to it but its type byte ([mlUser][message]:
// compression is off, no label is set, and it adds a checksum only for a
// node of protocol 5 or more, which the Node built here is not), and the
// receiver's guard takes exactly that (deliverUser). memberlist copied the
// message twice on the way, a third of an idle node's remaining garbage.
// With a secret, memberlist seals it.
func (b *Bus) sendPacket(m outMsg) {
	host, portStr, err := net.SplitHostPort(m.addr)
	if err != nil {
		return
	}
	ml := b.ml.Load()
	if ml == nil {
		return
	}
	if m.msg.IP == "" {
		// We do not know our address yet: name the one this message
		// leaves from, which is what Redis's receiver reads from the
		// connection (the sender's peer address).
		m.msg.IP = b.sourceIP(host)
	}
	// Neither the transport nor memberlist keeps the packet once it
	// returns: the sender's one buffer serves every packet.
	buf := m.msg.AppendEncoded(append(b.packet[:0], mlUser))
	b.packet = buf
	b.msgs.Put(m.msg)
	msg := buf[1:]
	b.bytesSent.Add(uint64(len(msg)))
	if gt := b.transport.Load(); gt != nil && len(msg) <= packetLimit && b.sealKey() == nil {
		_, err = gt.WriteToAddress(buf, memberlist.Address{Addr: m.addr})
	} else {
		port, _ := strconv.Atoi(portStr)
		to := &memberlist.Node{Addr: net.ParseIP(host), Port: uint16(port)}
		if len(msg) > packetLimit {
			err = ml.SendReliable(to, msg)
		} else {
			err = ml.SendBestEffort(to, msg)
		}
	}
	if err != nil {
		b.log.Debug("bus send failed", zap.String("to", m.to), zap.Error(err))
	}
}

// rejoin asks memberlist to join every known peer it does not list as
// alive (memberlist reaps dead peers after a long partition and never
// re-joins them by itself). It never blocks the caller.
func (b *Bus) rejoin() {
	ml := b.ml.Load()
	if ml == nil || !b.joining.CompareAndSwap(false, true) {
		return
	}
	// memberlist's own view comes from the event hints (Members() hands
	// out nodes that memberlist keeps mutating).
	alive := map[string]bool{}
	b.hintMu.Lock()
	for addr, ok := range b.aliveAddr {
		alive[addr] = ok
	}
	b.hintMu.Unlock()
	b.mu.Lock()
	var addrs []string
	for _, n := range b.st.order {
		if n == b.st.myself || n.inHandshake() || !n.hasAddr() || n.ip == "" || n.cport <= 0 {
			continue
		}
		if a := n.addr(); !alive[a] {
			addrs = append(addrs, a)
		}
	}
	b.mu.Unlock()
	if len(addrs) == 0 {
		b.joining.Store(false)
		return
	}
	go func() {
		defer b.joining.Store(false)
		_, _ = ml.Join(addrs)
	}()
}

// busDelegate receives memberlist's callbacks; it never blocks and never
// takes the Bus lock.
type busDelegate Bus

// NodeMeta is "id port": the cluster id lets hint map memberlist's liveness
// verdict to a node. memberlist membership adds no node (who the bus
// believes: docs/ARCHITECTURE.md), so no address is carried.
func (d *busDelegate) NodeMeta(limit int) []byte {
	b := (*Bus)(d)
	meta := []byte(b.myIDAtomic() + " " + strconv.Itoa(b.cfg.Port))
	if len(meta) > limit {
		return nil
	}
	return meta
}

func (d *busDelegate) NotifyMsg(p []byte) {
	b := (*Bus)(d)
	if len(p) == 0 || len(p) > MaxMessageSize {
		return
	}
	b.bytesRecv.Add(uint64(len(p)))
	var buf []byte
	select {
	case buf = <-b.freeBufs:
	default:
		buf = make([]byte, 0, max(len(p), recycledBufSize/2))
	}
	buf = append(buf[:0], p...)
	if !b.inbox.push(buf) {
		b.dropped.Add(1)
	}
}

func (d *busDelegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (d *busDelegate) LocalState(join bool) []byte                { return nil }
func (d *busDelegate) MergeRemoteState(buf []byte, join bool)     {}

type busEvents Bus

func (e *busEvents) NotifyJoin(n *memberlist.Node)  { (*Bus)(e).hint(n, true) }
func (e *busEvents) NotifyLeave(n *memberlist.Node) { (*Bus)(e).hint(n, false) }
func (e *busEvents) NotifyUpdate(n *memberlist.Node) {
	(*Bus)(e).hint(n, n.State == memberlist.StateAlive)
}

// hint records memberlist's verdict (a liveness hint, see MemberlistAlive).
// It never adds a node to the cluster: as in Redis, nodes are learned only
// through a completed MEET handshake or from gossip of known nodes.
// memberlist's membership is not a trusted source: without a secret anyone
// reaching the bus port can join it, and even with one, a peer that has
// not run CLUSTER RESET yet re-joins a node that did and hands it its
// stale membership, old ids included (issue 23 item 5: old ids came back
// as noaddr entries after RESET HARD and a new MEET chain).
// Called by memberlist with its own locks held: it must not block.
func (b *Bus) hint(n *memberlist.Node, alive bool) {
	if n.Addr != nil {
		addr := net.JoinHostPort(n.Addr.String(), strconv.Itoa(int(n.Port)))
		b.hintMu.Lock()
		b.aliveAddr[addr] = alive
		b.hintMu.Unlock()
	}
	meta := string(n.Meta)
	sp := strings.IndexByte(meta, ' ')
	if sp < 0 || !ValidID(meta[:sp]) {
		return
	}
	b.hintMu.Lock()
	b.alive[meta[:sp]] = alive
	b.hintMu.Unlock()
}

// restartMemberlist leaves the membership and joins it afresh (after
// CLUSTER RESET: the peers must not keep discovering a node that forgot
// them). It returns the new instance, or nil if it could not be created.
func (b *Bus) restartMemberlist() *memberlist.Memberlist {
	old := b.ml.Load()
	if old == nil || b.mlCfg == nil || b.cfg.Transport != nil {
		// A caller-provided transport cannot be re-created: keep the
		// instance (the peers forget us through FORGET, as in Redis).
		return old
	}
	_ = old.Leave(200 * time.Millisecond)
	_ = old.Shutdown()
	b.hintMu.Lock()
	b.alive = make(map[string]bool)
	b.aliveAddr = make(map[string]bool)
	b.hintMu.Unlock()
	mc := *b.mlCfg
	b.mu.Lock()
	timingFor(b.st.opts.NodeTimeout).apply(&mc) // CONFIG SET may have changed it
	b.mu.Unlock()
	ml, err := b.createMemberlist(&mc)
	if err != nil {
		b.log.Error("restarting the cluster bus membership", zap.Error(err))
		b.ml.Store(nil)
		return nil
	}
	b.ml.Store(ml)
	return ml
}

// createMemberlist creates a memberlist instance on mc over a guarded
// transport: cfg.Transport when a test provides one, else a new
// busTransport on the bus port.
func (b *Bus) createMemberlist(mc *memberlist.Config) (*memberlist.Memberlist, error) {
	inner := b.cfg.Transport
	if inner == nil && b.cfg.TLS != nil {
		tt, err := newTLSTransport(mc.BindAddr, mc.BindPort, *b.cfg.TLS, b.log)
		if err != nil {
			return nil, err
		}
		if mc.BindPort == 0 {
			mc.BindPort = tt.port()
			mc.AdvertisePort = mc.BindPort
		}
		inner = tt
	}
	if inner == nil {
		nt, err := newBusTransport(mc.BindAddr, mc.BindPort, mc.Logger) // gossip/transport.go
		if err != nil {
			return nil, err
		}
		if mc.BindPort == 0 {
			mc.BindPort = nt.Port()
			mc.AdvertisePort = mc.BindPort
		}
		inner = nt
	}
	enc := func() ([][]byte, bool) {
		if mc.Keyring == nil {
			return nil, false
		}
		return mc.Keyring.GetKeys(), mc.GossipVerifyIncoming
	}
	gt := newGuardTransport(inner, b.guard, enc, streamTimeout{created: mc.TCPTimeout, current: &b.streamTimeout})
	if b.cfg.Transport == nil {
		gt.source = b.cfg.SourceAddr
	}
	gt.setLinkHandler(b.links.acceptLink)
	gt.setUserHandler((*busDelegate)(b).NotifyMsg)
	mc.Transport = gt
	ml, err := memberlist.Create(mc)
	if err != nil {
		if b.cfg.Transport == nil {
			_ = gt.Shutdown()
		}
		return nil, err
	}
	b.transport.Store(gt)
	return ml, nil
}

// MemberlistAlive is memberlist's opinion of a node (a liveness hint for
// the failure detector, never a verdict): alive, and whether it has one.
func (b *Bus) MemberlistAlive(id string) (alive, known bool) {
	b.hintMu.Lock()
	defer b.hintMu.Unlock()
	alive, known = b.alive[id]
	return
}

// sourceIP is the local address the host routes a packet to ip from (no
// packet is sent), cached per destination; "" when there is no route.
func (b *Bus) sourceIP(ip string) string {
	b.srcMu.Lock()
	defer b.srcMu.Unlock()
	if src, ok := b.srcIPs[ip]; ok {
		return src
	}
	src := ""
	if c, err := net.Dial("udp", net.JoinHostPort(ip, "9")); err == nil {
		if a, ok := c.LocalAddr().(*net.UDPAddr); ok {
			src = a.IP.String()
		}
		_ = c.Close()
	}
	if b.srcIPs == nil || len(b.srcIPs) >= maxSourceIPs {
		b.srcIPs = make(map[string]string)
	}
	b.srcIPs[ip] = src
	return src
}

// maxSourceIPs bounds the source address cache (one entry per peer IP).
const maxSourceIPs = 1024

// myIDAtomic reads the id for memberlist's NodeMeta, which may be called
// while the Bus lock is held by a goroutine waiting on memberlist.
// Identity is this node's id and the current epoch as of the bus's last
// step, without taking mu: what every log line of the node carries.
func (b *Bus) Identity() (id string, currentEpoch uint64) {
	return b.myIDAtomic(), b.curEpoch.Load()
}

func (b *Bus) myIDAtomic() string {
	if p := b.myID.Load(); p != nil {
		return *p
	}
	return ""
}
