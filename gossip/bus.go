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
	// BindAddr is the bus bind address ("" = 0.0.0.0).
	BindAddr string
	// ConfigFile is nodes.conf (cluster-config-file, resolved against dir);
	// "" keeps the state in memory only.
	ConfigFile string
	Logger     *zap.Logger
	// Clock defaults to the system clock; Seed (0 = random) seeds ids and
	// gossip choices.
	Clock Clock
	Seed  uint64
	// Transport replaces memberlist's UDP/TCP transport (tests use
	// memberlist.MockNetwork).
	Transport memberlist.Transport
	// MemberName is the memberlist node name ("" = "shoal-<random>"). It
	// is not the cluster id (which RESET HARD changes); it must be unique
	// in the membership. memberlist.MockTransport routes by it.
	MemberName string
	// TickInterval is the cron period (default 100 ms, as Redis).
	TickInterval time.Duration
	// RejoinInterval is how often peers missing from memberlist are joined
	// again (default 10 s; memberlist reaps dead peers and never re-joins
	// them by itself).
	RejoinInterval time.Duration
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
	// Inbound: PUBLISH(SHARD) messages from known nodes, for pub/sub.
	Inbound []*Message
	// PauseWrites > 0: a manual failover of this master started; stop
	// accepting writes for that long (CLIENT PAUSE WRITE). ResumeWrites:
	// it ended, accept writes again.
	PauseWrites  time.Duration
	ResumeWrites bool
}

// Bus is one node's cluster bus: the State, driven by a 100 ms cron and by
// messages carried over memberlist, with nodes.conf persisted before any
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
	st *State
	// hold is taken by the loop around every step (received messages,
	// ticks) and by Hold: a MULTI/EXEC of CLUSTER commands runs as one
	// step, as in single-threaded Redis.
	hold sync.Mutex

	ref   *slots.Ref
	ml    atomic.Pointer[memberlist.Memberlist]
	mlCfg *memberlist.Config
	found chan discovery // memberlist joins, for the loop
	name  string         // memberlist node name (not the cluster id: that may change)
	inbox chan []byte
	outq  chan Envelope
	relq  chan Envelope
	notes chan Change
	stop  chan struct{}
	wg    sync.WaitGroup // loop and notifier
	swg   sync.WaitGroup // senders (a send may block inside the transport)

	started, stopped atomic.Bool
	joining          atomic.Bool

	bytesSent, bytesRecv, dropped atomic.Uint64
	saveErr                       atomic.Pointer[error]

	myID atomic.Pointer[string] // for NodeMeta, which must not take mu

	offsetSrc  atomic.Pointer[func() int64]                 // SetReplOffsetSource
	dataAgeSrc atomic.Pointer[func() (time.Duration, bool)] // SetReplDataAgeSource
	wakeAt     time.Time                                    // State.NextWakeup; loop goroutine only

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
		cfg.Clock = SystemClock{}
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
		inbox:     make(chan []byte, 4096),
		outq:      make(chan Envelope, 8192),
		relq:      make(chan Envelope, 1024),
		notes:     make(chan Change, 1024),
		stop:      make(chan struct{}),
		alive:     make(map[string]bool),
		aliveAddr: make(map[string]bool),
		found:     make(chan discovery, 1024),
	}
	var st *State
	if cfg.ConfigFile != "" {
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
		st.SetMyAddress(cfg.IP, cfg.Port, cfg.ClusterPort, cfg.Hostname)
	}
	b.st = st
	b.mu.Lock()
	rd := st.Ready()
	rd.Save, rd.Fsync = true, true
	if err := b.persistLocked(rd); err != nil {
		b.mu.Unlock()
		return nil, err
	}
	b.mu.Unlock()
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
	mc.AdvertisePort = b.cfg.ClusterPort
	if b.cfg.IP != "" {
		mc.AdvertiseAddr = b.cfg.IP
	} else if b.cfg.Transport == nil && net.ParseIP(mc.BindAddr).IsUnspecified() {
		// memberlist would refuse to start without a private address
		// with a default route (see advertiseFallback).
		mc.AdvertiseAddr = systemAdvertiseFallback()
	}
	if b.cfg.Transport != nil {
		mc.Transport = b.cfg.Transport
	}
	// memberlist's verdicts are hints only: keep its timers well below
	// cluster-node-timeout so that they are fresh when the cron reads them.
	nt := b.cfg.NodeTimeout
	probe := clampDur(nt/10, 100*time.Millisecond, time.Second)
	mc.ProbeInterval = probe
	mc.ProbeTimeout = probe / 2
	mc.SuspicionMult = 3
	mc.SuspicionMaxTimeoutMult = 2
	mc.GossipInterval = 200 * time.Millisecond
	mc.PushPullInterval = 30 * time.Second
	mc.TCPTimeout = clampDur(nt/2, 500*time.Millisecond, 5*time.Second)
	mc.DeadNodeReclaimTime = nt
	mc.Delegate = (*busDelegate)(b)
	mc.Events = (*busEvents)(b)
	if ce := b.log.Core(); ce.Enabled(zap.DebugLevel) {
		mc.Logger = zap.NewStdLog(b.log.Named("memberlist"))
	} else {
		mc.Logger = log.New(io.Discard, "", 0)
	}
	b.mlCfg = mc
	ml, err := memberlist.Create(mc)
	if err != nil {
		return fmt.Errorf("cluster bus on port %d: %w", b.cfg.ClusterPort, err)
	}
	b.ml.Store(ml)
	if b.cfg.IP == "" || b.cfg.Transport != nil {
		ln := ml.LocalNode()
		ip := b.cfg.IP
		if ip == "" {
			ip = ln.Addr.String()
		}
		b.mu.Lock()
		b.st.SetMyAddress(ip, 0, int(ln.Port), b.cfg.Hostname)
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
	// Reliable sends dial a stream each and may wait up to TCPTimeout for
	// an unreachable peer: several senders keep one dead address from
	// holding up a vote request or an ACK to the live ones (these
	// messages are idempotent and epoch-guarded, so their order across
	// senders does not matter).
	b.swg.Add(1 + reliableSenders)
	go b.sender(b.outq, false)
	for i := 0; i < reliableSenders; i++ {
		go b.sender(b.relq, true)
	}
	b.rejoin()
	return nil
}

func clampDur(d, lo, hi time.Duration) time.Duration {
	if d < lo {
		return lo
	}
	if d > hi {
		return hi
	}
	return d
}

// Stop saves nodes.conf, leaves memberlist and stops every goroutine.
func (b *Bus) Stop() error {
	if !b.started.Load() || !b.stopped.CompareAndSwap(false, true) {
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
	b.mu.Lock()
	err := b.persistLocked(Ready{Save: true, Fsync: true})
	b.mu.Unlock()
	if ml := b.ml.Load(); ml != nil {
		_ = ml.Leave(200 * time.Millisecond)
		_ = ml.Shutdown()
	}
	return err
}

// reliableSenders is the number of goroutines draining the reliable queue.
const reliableSenders = 4

// maxBatch bounds the messages handled under one lock acquisition.
const maxBatch = 256

// loop is the single goroutine that feeds the State: cron ticks, received
// messages and the periodic re-join.
func (b *Bus) loop() {
	defer b.wg.Done()
	tick := time.NewTicker(b.cfg.TickInterval)
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
			// What arrived first is processed first: after a stall (DEBUG
			// SLEEP holds the loop for seconds) the cron must not judge
			// peers on stale receive times while their messages wait.
			for pending := len(b.inbox); pending > 0; pending -= maxBatch {
				b.stepReceived(<-b.inbox) // only this goroutine receives
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
				s.Tick()
			})
		case buf := <-b.inbox:
			b.stepReceived(buf)
		case d := <-b.found:
			b.step(func(s *State) { s.Discovered(d.id, d.ip, d.port, d.cport) })
		case <-rejoin.C:
			b.rejoin()
		}
	}
}

// stepReceived steps the State through buf and what else is waiting in
// the inbox: one lock, one Ready (table rebuild, nodes.conf write) per
// batch, not per message.
func (b *Bus) stepReceived(buf []byte) {
	batch := make([]*Message, 0, 16)
	for more := true; more; {
		if m, err := Decode(buf); err == nil {
			batch = append(batch, m)
		} else {
			b.log.Debug("dropping bus message", zap.Error(err))
		}
		if len(batch) >= maxBatch {
			break
		}
		select {
		case buf = <-b.inbox:
		default:
			more = false
		}
	}
	b.step(func(s *State) {
		for _, m := range batch {
			s.Step(m)
		}
	})
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
	if !rd.Save || b.cfg.ConfigFile == "" {
		return nil
	}
	// Like Redis (clusterSaveConfig), only epoch and vote changes are
	// fsynced before the node goes on; the others are written (an atomic
	// rename) and left to the OS: fsyncing every SETSLOT made a redis-cli
	// reshard spend milliseconds per command on the disk.
	if err := WriteConfigFile(b.cfg.ConfigFile, b.st.ConfigText(), rd.Fsync); err != nil {
		b.saveErr.Store(&err)
		return err
	}
	return nil
}

// dispatch sends rd's messages and queues its notifications.
func (b *Bus) dispatch(rd Ready, running bool) {
	if running {
		for _, e := range rd.Messages {
			q := b.outq
			if e.Reliable {
				q = b.relq
			}
			select {
			case q <- e:
			default:
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
		if ml != nil && rd.IDChanged && !rd.Reset {
			go func() { _ = ml.UpdateNode(time.Second) }()
		}
	}
	if rd.Table == nil && !rd.RoleChanged && !rd.FlushData && len(rd.LostSlots) == 0 && len(rd.Inbound) == 0 &&
		rd.PauseWrites == 0 && !rd.ResumeWrites {
		return
	}
	c := Change{Table: rd.Table, RoleChanged: rd.RoleChanged, MasterID: rd.MasterID, FlushData: rd.FlushData,
		LostSlots: rd.LostSlots, Inbound: rd.Inbound, PauseWrites: rd.PauseWrites, ResumeWrites: rd.ResumeWrites}
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

// sender drains one send queue. Packets that do not fit memberlist's UDP
// budget go over the stream transport.
func (b *Bus) sender(q chan Envelope, reliable bool) {
	defer b.swg.Done()
	limit := 1400 - 64
	for {
		select {
		case <-b.stop:
			return
		case e := <-q:
			buf := e.Msg.Encode()
			host, portStr, err := net.SplitHostPort(e.Addr)
			if err != nil {
				continue
			}
			port, _ := strconv.Atoi(portStr)
			to := &memberlist.Node{Addr: net.ParseIP(host), Port: uint16(port)}
			if to.Addr == nil {
				continue
			}
			ml := b.ml.Load()
			if ml == nil {
				continue
			}
			b.bytesSent.Add(uint64(len(buf)))
			if reliable || len(buf) > limit {
				err = ml.SendReliable(to, buf)
			} else {
				err = ml.SendBestEffort(to, buf)
			}
			if err != nil {
				b.log.Debug("bus send failed", zap.String("to", e.To), zap.Error(err))
			}
		}
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
	buf := append([]byte(nil), p...)
	select {
	case b.inbox <- buf:
	default:
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

// hint records memberlist's verdict and, for a live member, hands it to the
// loop as a discovery: memberlist only ever learns about nodes of our own
// cluster (its membership grows only through MEET), so it is a trusted
// source like a gossip entry from a known node, and a much faster one.
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
	if sp < 0 || !ValidID(meta[:sp]) || n.Addr == nil {
		return
	}
	id := meta[:sp]
	port, err := strconv.Atoi(meta[sp+1:])
	if err != nil || port <= 0 || port > 65535 {
		return
	}
	b.hintMu.Lock()
	b.alive[id] = alive
	b.hintMu.Unlock()
	if alive {
		select {
		case b.found <- discovery{id: id, ip: n.Addr.String(), port: port, cport: int(n.Port)}:
		default:
		}
	}
}

type discovery struct {
	id, ip      string
	port, cport int
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
	if b.cfg.Transport == nil {
		mc.Transport = nil
	}
	ml, err := memberlist.Create(&mc)
	if err != nil {
		b.log.Error("restarting the cluster bus membership", zap.Error(err))
		b.ml.Store(nil)
		return nil
	}
	b.ml.Store(ml)
	return ml
}

// MemberlistAlive is memberlist's opinion of a node (a liveness hint for
// the failure detector, never a verdict): alive, and whether it has one.
func (b *Bus) MemberlistAlive(id string) (alive, known bool) {
	b.hintMu.Lock()
	defer b.hintMu.Unlock()
	alive, known = b.alive[id]
	return
}

// myIDAtomic reads the id for memberlist's NodeMeta, which may be called
// while the Bus lock is held by a goroutine waiting on memberlist.
func (b *Bus) myIDAtomic() string {
	if p := b.myID.Load(); p != nil {
		return *p
	}
	return ""
}
