package replication

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-db/shoal/internal/rawsock"

	"github.com/shoal-db/shoal/internal/netdial"
	"github.com/shoal-db/shoal/rdb"
	"github.com/shoal-db/shoal/resp"
	"github.com/shoal-db/shoal/strconvx"
	"go.uber.org/zap"
)

// The replica side: one goroutine per followed master connects, hands
// shakes (PING, AUTH, REPLCONF, PSYNC with the cached ID and offset), loads
// a full sync's payload, and reads the stream, reconnecting with a partial
// resync after a drop. What the stream changes is applied by the node
// through FSM (hashicorp/raft's FSM is the model): this package owns the
// link, the protocol, the offsets and the forwarding of the master's bytes
// to this node's own backlog and sub-replicas (chained replication); the
// node owns the data and the command execution.

// FSM is what a replica applies its master's stream to. The node implements
// it; its methods are called from the link's goroutine.
type FSM interface {
	// LinkConfig is the configuration the next connection uses.
	LinkConfig() LinkConfig
	// MasterAddr is the current address of the master with this cluster
	// node ID, if known (a node's address may change).
	MasterAddr(nodeID string) (addr string, ok bool)
	// NumDBs is the number of databases.
	NumDBs() int
	// LoadPayload replaces the data with a full sync's RDB file: it
	// flushes every database, loads the file's keys and function
	// libraries, and hands each auxiliary field to aux. keys and libs count
	// what it loaded. A load that fails leaves the data empty (Redis's
	// replica flushes what it half loaded). stop is closed when the link
	// stops: a load still waiting to begin then returns ErrLinkStopped and
	// changes nothing.
	LoadPayload(data []byte, aux func(name, value []byte), stop <-chan struct{}) (keys, libs int, err error)
	// OpenStream starts applying one connection's stream, in database db;
	// stop is closed when the link stops (Stream.Apply).
	OpenStream(conn net.Conn, db int, stop <-chan struct{}) Stream
}

// EmptyHistoryGuard is an FSM that may refuse a full sync which would
// replace its data with a master's new, shorter history (cluster mode).
// It is asked only when the master is the same node (by cluster node ID)
// whose stream this replica last synced from, and it answered PSYNC with
// a replication ID other than ours and an offset behind ours: the master
// restarted without its data. Refusing drops the connection; the link
// retries after a second.
type EmptyHistoryGuard interface {
	RefuseEmptyHistory(masterNodeID string) bool
}

// Stream applies the commands of one connection to the master (the node's
// master-link client).
type Stream interface {
	// Apply runs one command. It is called with the replica's apply lock
	// held (LockApply); args are valid only during the call. It returns
	// false, having run nothing, when the link stopped while the command
	// waited to run (the node's execution gate was held by the very
	// command that stopped the link: REPLICAOF inside EXEC).
	Apply(args [][]byte) bool
	// InTransaction reports whether a MULTI is open (its commands queued).
	InTransaction() bool
	// DB is the database the stream is in now.
	DB() int
	// BeginBatch and EndBatch bracket what one read from the socket
	// brought.
	BeginBatch()
	EndBatch()
	// Close ends the stream: the connection is gone.
	Close()
}

// LinkConfig is what a connection to the master reads from the node's
// configuration, at every connect.
type LinkConfig struct {
	Timeout       time.Duration // repl-timeout
	NoDelay       bool          // not repl-disable-tcp-nodelay
	MaxBulkLen    int64         // proto-max-bulk-len
	AuthUser      string        // masteruser
	AuthPass      string        // masterauth
	ListeningPort int64         // port, or replica-announce-port
	AnnounceIP    string        // replica-announce-ip
	SourceAddr    string        // bind-source-addr: the link's local address, best effort
	// TLS, when not nil, is the client side of tls-replication: the link
	// to the master runs over TLS (the handshake within Timeout).
	TLS *tls.Config
}

// Replica is the replica side of a node: the link to the followed master
// and its state, as INFO and ROLE report it. Its stream passes through the
// node's Master (FeedRaw), so chained replicas share IDs and offsets.
type Replica struct {
	m   *Master
	fsm FSM
	log *zap.Logger

	linkMu sync.Mutex
	link   *masterLink
	// armedFailover is ArmFailover's callback for the next Start.
	armedFailover func(accepted bool)

	up      atomic.Bool // master_link_status:up
	syncing atomic.Bool // master_sync_in_progress
	// receiving: a full sync's RDB is arriving (read whole before it is
	// loaded, the old data served meanwhile).
	receiving atomic.Bool
	lastIO    atomic.Int64 // unix seconds of the last read from the master
	downAt    atomic.Int64 // unix seconds the link went down
	bytesIn   atomic.Int64 // read from the master (total_net_repl_input_bytes)

	// syncedFrom is the cluster node ID of the master whose stream this
	// replica holds (a full sync or a partial resync completed with it);
	// nil: none, or not in cluster mode.
	syncedFrom atomic.Pointer[string]

	// applyMu makes the apply-then-forward of one command, and the load
	// of a full sync with the offset it is at, one step for a
	// sub-replica's full sync: its snapshot's instant holds it, so the
	// data and the offset it records agree.
	applyMu sync.Mutex
	// feedPending: a command of the stream was applied and is not yet in
	// this node's own stream (set and cleared under applyMu).
	feedPending atomic.Bool
}

// masterLink is one followed master.
type masterLink struct {
	host   string
	port   int
	nodeID string // cluster mode: the master's node ID (its address may change)

	stop chan struct{}
	done chan struct{}

	mu    sync.Mutex // guards conn and writes to it
	conn  net.Conn
	state string // connect, connecting, handshake, sync, connected

	// failoverDone, when set, makes the handshake ask the master to fail
	// over to this node (PSYNC ... FAILOVER, standalone FAILOVER) and is
	// told once whether the PSYNC was accepted; only the link goroutine
	// touches it.
	failoverDone func(accepted bool)
}

// NewReplica returns the replica side of the node whose stream state is m.
func NewReplica(m *Master, fsm FSM, log *zap.Logger) *Replica {
	return &Replica{m: m, fsm: fsm, log: log}
}

// Master returns the followed master's address ("" when following none).
func (r *Replica) Master() (string, int) {
	r.linkMu.Lock()
	defer r.linkMu.Unlock()
	if r.link == nil {
		return "", 0
	}
	return r.link.host, r.link.port
}

// Following reports whether a master is followed, and its cluster node ID
// ("" outside cluster mode).
func (r *Replica) Following() (nodeID string, ok bool) {
	r.linkMu.Lock()
	defer r.linkMu.Unlock()
	if r.link == nil {
		return "", false
	}
	return r.link.nodeID, true
}

// StateName is ROLE's replication state of a replica.
func (r *Replica) StateName() string {
	r.linkMu.Lock()
	defer r.linkMu.Unlock()
	if r.link == nil {
		return "none"
	}
	r.link.mu.Lock()
	defer r.link.mu.Unlock()
	return r.link.state
}

// Up reports master_link_status:up.
func (r *Replica) Up() bool { return r.up.Load() }

// Syncing reports master_sync_in_progress: a full sync is loading.
func (r *Replica) Syncing() bool { return r.syncing.Load() }

// Receiving reports that a full sync's RDB is arriving: its first bytes
// came and it is not all read yet. The old dataset is served meanwhile.
func (r *Replica) Receiving() bool { return r.receiving.Load() }

// LastIO is the unix second of the master's last byte (while up).
func (r *Replica) LastIO() int64 { return r.lastIO.Load() }

// DownSince is the unix second the link went down, 0 when it never was up.
func (r *Replica) DownSince() int64 { return r.downAt.Load() }

// BytesIn is what was read from the master (total_net_repl_input_bytes).
func (r *Replica) BytesIn() int64 { return r.bytesIn.Load() }

// DataAge is the age of this replica's data, for
// cluster-replica-validity-factor: since the master's last byte while the
// link is up, else since it went down; false when never connected.
func (r *Replica) DataAge() (time.Duration, bool) {
	now := time.Now().Unix()
	if r.up.Load() {
		return time.Duration(now-r.lastIO.Load()) * time.Second, true
	}
	if d := r.downAt.Load(); d > 0 {
		return time.Duration(now-d) * time.Second, true
	}
	return 0, false
}

// LockApply holds back the master link's next apply-then-forward or full
// sync load (a sub-replica's snapshot takes its instant meanwhile);
// UnlockApply releases it, possibly from another goroutine.
func (r *Replica) LockApply()   { r.applyMu.Lock() }
func (r *Replica) UnlockApply() { r.applyMu.Unlock() }

// TryLockApply is LockApply if the lock is free.
func (r *Replica) TryLockApply() bool { return r.applyMu.TryLock() }

// FeedPending reports whether a command was applied and not yet forwarded
// (the holder of applyMu is between the two and needs nothing to finish).
func (r *Replica) FeedPending() bool { return r.feedPending.Load() }

// Start follows host:port (nodeID in cluster mode, whose address is looked
// up at every connect). The caller has stopped the previous link (Stop).
func (r *Replica) Start(host string, port int, nodeID string) {
	r.up.Store(false)
	r.downAt.Store(0)
	ml := &masterLink{host: host, port: port, nodeID: nodeID, stop: make(chan struct{}), done: make(chan struct{}), state: "connect"}
	r.linkMu.Lock()
	r.link = ml
	ml.failoverDone, r.armedFailover = r.armedFailover, nil
	r.linkMu.Unlock()
	r.log.Info("Connecting to MASTER", zap.String("addr", net.JoinHostPort(host, strconv.Itoa(port))))
	go r.runLink(ml)
}

// ArmFailover makes the next Start's link ask its master to fail over to
// this node: its PSYNC carries FAILOVER (Redis's FAILOVER_IN_PROGRESS
// handshake), on every connection attempt until the master answers. done
// is then called once, from the link's goroutine, with whether the PSYNC
// was accepted (+FULLRESYNC or +CONTINUE); it must not stop the link
// itself.
func (r *Replica) ArmFailover(done func(accepted bool)) {
	r.linkMu.Lock()
	r.armedFailover = done
	r.linkMu.Unlock()
}

// Stop ends the link goroutine, if any, and waits for it. The master stays
// named (Master) until Forget or the next Start.
func (r *Replica) Stop() {
	if done := r.signalStop(); done != nil {
		<-done
	}
}

// StopNoWait is Stop for a caller that holds what the link goroutine may be
// waiting for (the node's execution gate): the link is told to stop and its
// connection closed, and the goroutine ends on its own, applying and
// loading nothing more (the stop channel LoadPayload and OpenStream get).
func (r *Replica) StopNoWait() { r.signalStop() }

// signalStop closes the current link's stop channel and connection; it
// returns the channel closed when the link goroutine ends (nil: no link).
func (r *Replica) signalStop() <-chan struct{} {
	r.linkMu.Lock()
	ml := r.link
	r.linkMu.Unlock()
	if ml == nil {
		return nil
	}
	select {
	case <-ml.stop:
	default:
		close(ml.stop)
	}
	ml.mu.Lock()
	if ml.conn != nil {
		_ = ml.conn.Close()
	}
	ml.mu.Unlock()
	return ml.done
}

// Forget stops following: the link is stopped (Stop, or StopNoWait when
// wait is false) and no master is named any more.
func (r *Replica) Forget(wait bool) {
	if wait {
		r.Stop()
	} else {
		r.StopNoWait()
	}
	r.linkMu.Lock()
	r.link = nil
	r.linkMu.Unlock()
	r.up.Store(false)
	r.syncing.Store(false)
}

// current reports whether ml is still the followed link (a link stopped
// without waiting may end after the next one started: it must not touch
// the Replica's state, which is the new link's).
func (r *Replica) current(ml *masterLink) bool {
	r.linkMu.Lock()
	defer r.linkMu.Unlock()
	return r.link == ml
}

// runLink connects and replicates until stopped, retrying every second.
func (r *Replica) runLink(ml *masterLink) {
	defer close(ml.done)
	for {
		err := r.replicateOnce(ml)
		if !r.current(ml) {
			return // stopped without waiting; a later link owns the state
		}
		if r.up.Swap(false) {
			r.downAt.Store(time.Now().Unix())
		}
		r.syncing.Store(false)
		ml.mu.Lock()
		state := ml.state
		ml.state = "connect"
		ml.mu.Unlock()
		select {
		case <-ml.stop:
			return
		default:
		}
		if err != nil {
			r.logLinkError(state, err)
		}
		select {
		case <-ml.stop:
			return
		case <-time.After(time.Second):
		}
	}
}

// logLinkError logs why the link ended; a repl-timeout gets Redis's line
// for the state the link was in.
func (r *Replica) logLinkError(state string, err error) {
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		r.log.Info("Replication link to MASTER lost or failed", zap.Error(err))
		return
	}
	switch state {
	case "connecting", "handshake":
		r.log.Warn("Timeout connecting to the MASTER...")
	case "sync":
		r.log.Warn("Timeout receiving bulk data from MASTER... If the problem persists try to set the 'repl-timeout' parameter in redis.conf to a larger value.")
	default:
		r.log.Warn("MASTER timeout: no data nor PING received...")
	}
}

func (ml *masterLink) setState(s string) {
	ml.mu.Lock()
	ml.state = s
	ml.mu.Unlock()
}

// masterAddr is where to connect: in cluster mode the master's current
// address from the bus.
func (r *Replica) masterAddr(ml *masterLink) string {
	if ml.nodeID != "" {
		if addr, ok := r.fsm.MasterAddr(ml.nodeID); ok {
			return addr
		}
	}
	return net.JoinHostPort(ml.host, strconv.Itoa(ml.port))
}

var errStopped = errors.New("replication link stopped")

// replicateOnce is one connection's life: handshake, sync, stream.
func (r *Replica) replicateOnce(ml *masterLink) error {
	cfg := r.fsm.LinkConfig()
	timeout := cfg.Timeout
	ml.setState("connecting")
	// The dial ends early when the link is stopped (REPLICAOF, shutdown).
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	go func() {
		select {
		case <-ml.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	conn, err := netdial.Dial(ctx, r.masterAddr(ml), cfg.SourceAddr, 0)
	cancel()
	if err != nil {
		return err
	}
	ml.mu.Lock()
	select {
	case <-ml.stop:
		ml.mu.Unlock()
		_ = conn.Close()
		return errStopped
	default:
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(cfg.NoDelay)
	}
	conn = rawsock.Wrap(conn) // reads and writes without waking sysmon (internal/rawsock)
	if cfg.TLS != nil {
		conn = tls.Client(conn, cfg.TLS)
	}
	ml.conn = conn
	ml.state = "handshake"
	ml.mu.Unlock()
	defer conn.Close()
	if tc, ok := conn.(*tls.Conn); ok {
		_ = tc.SetDeadline(time.Now().Add(timeout))
		if err := tc.Handshake(); err != nil {
			return fmt.Errorf("TLS handshake with the master: %w", err)
		}
	}
	rd := resp.NewStreamReader(conn, resp.StreamLimits{MaxBulkLen: cfg.MaxBulkLen})
	ask := func(argv ...string) (string, error) {
		_ = conn.SetDeadline(time.Now().Add(timeout))
		if _, err := conn.Write(resp.AppendCommand(nil, argv...)); err != nil {
			return "", err
		}
		return rd.ReadLine()
	}
	reply, err := ask("PING")
	if err != nil {
		return err
	}
	if reply[0] == '-' && !strings.HasPrefix(reply, "-NOAUTH") && !strings.HasPrefix(reply, "-NOPERM") &&
		!strings.HasPrefix(reply, "-ERR operation not permitted") {
		return fmt.Errorf("error reply to PING from master: %s", reply)
	}
	if pass := cfg.AuthPass; pass != "" {
		argv := []string{"AUTH", pass}
		if user := cfg.AuthUser; user != "" {
			argv = []string{"AUTH", user, pass}
		}
		if reply, err = ask(argv...); err != nil {
			return err
		}
		if reply[0] == '-' {
			r.log.Warn("Unable to AUTH to MASTER: " + reply) // Redis's line (masterauth/masteruser refused)
			return fmt.Errorf("unable to AUTH to MASTER: %s", reply)
		}
	}
	if _, err = ask("REPLCONF", "listening-port", strconv.FormatInt(cfg.ListeningPort, 10)); err != nil {
		return err
	}
	if ip := cfg.AnnounceIP; ip != "" {
		if _, err = ask("REPLCONF", "ip-address", ip); err != nil {
			return err
		}
	}
	// eof: an RDB streamed with an end mark (diskless) can be read;
	// psync2: +CONTINUE names the ID.
	if _, err = ask("REPLCONF", "capa", "eof", "capa", "psync2"); err != nil {
		return err
	}
	id, off := r.m.IDs()
	psync := []string{"PSYNC", id, strconv.FormatInt(off+1, 10)}
	if ml.failoverDone != nil {
		psync = append(psync, "FAILOVER")
	}
	reply, err = ask(psync...)
	// A master preparing the RDB sends newlines to keep the link alive.
	for err == nil && reply == "" {
		_ = conn.SetDeadline(time.Now().Add(timeout))
		reply, err = rd.ReadLine()
	}
	if err != nil {
		return err
	}
	if done := ml.failoverDone; done != nil {
		ml.failoverDone = nil
		done(strings.HasPrefix(reply, "+FULLRESYNC") || strings.HasPrefix(reply, "+CONTINUE"))
	}
	_ = conn.SetDeadline(time.Time{})
	switch {
	case strings.HasPrefix(reply, "+FULLRESYNC"):
		if err := r.fullResync(ml, conn, rd, reply, timeout); err != nil {
			return err
		}
	case strings.HasPrefix(reply, "+CONTINUE"):
		newID := strings.TrimSpace(strings.TrimPrefix(reply, "+CONTINUE"))
		r.m.ContinueWith(newID)
		r.log.Info("Successful partial resynchronization with master")
	default:
		return fmt.Errorf("unexpected reply to PSYNC from master: %s", reply)
	}
	if ml.nodeID != "" {
		r.syncedFrom.Store(&ml.nodeID)
	}
	return r.stream(ml, conn, rd, timeout)
}

// fullResync reads and loads a full sync's RDB after the master's
// "+FULLRESYNC <replid> <offset>" and takes the master's ID and offset,
// as Redis's replica with repl-diskless-load disabled: the file is read
// whole first (a transfer that fails leaves the data as it was), then the
// sub-replicas are dropped (they must sync again: the history changed),
// the data flushed and the file loaded.
func (r *Replica) fullResync(ml *masterLink, conn net.Conn, rd *resp.StreamReader, reply string, timeout time.Duration) error {
	f := strings.Fields(reply)
	if len(f) != 3 {
		return fmt.Errorf("bad FULLRESYNC reply: %q", reply)
	}
	newOff, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return fmt.Errorf("bad FULLRESYNC reply: %q", reply)
	}
	r.log.Info("Full resync from master", zap.String("replid", f[1]), zap.Int64("offset", newOff))
	r.syncing.Store(true)
	ml.setState("sync")
	var payload bytes.Buffer
	_ = conn.SetReadDeadline(time.Now().Add(timeout))
	_, err = rd.ReadPayload(func(p []byte) error {
		r.receiving.Store(true)
		_ = conn.SetReadDeadline(time.Now().Add(timeout))
		r.bytesIn.Add(int64(len(p)))
		payload.Write(p)
		return nil
	})
	r.receiving.Store(false)
	if err != nil {
		return err
	}
	if r.refuseEmptyHistory(ml, f[1], newOff, payload.Bytes()) {
		return fmt.Errorf("%w (replid %s offset %d)", ErrEmptyHistoryRefused, f[1], newOff)
	}
	r.log.Info("MASTER <-> REPLICA sync: Flushing old data", zap.Int("rdb_bytes", payload.Len()))
	r.log.Info("MASTER <-> REPLICA sync: Loading DB in memory")
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	r.m.DropAll()
	streamDB := 0
	var auxID, auxOff string
	keys, libs, err := r.fsm.LoadPayload(payload.Bytes(), func(name, value []byte) {
		switch string(name) {
		case "repl-stream-db":
			if n, ok := strconvx.ParseInt(value); ok && n >= 0 && n < int64(r.fsm.NumDBs()) {
				streamDB = int(n)
			}
		case "repl-id":
			auxID = string(value)
		case "repl-offset":
			auxOff = string(value)
		}
	}, ml.stop)
	if errors.Is(err, ErrLinkStopped) {
		return err
	}
	if err != nil {
		r.log.Warn("Failed trying to load the MASTER synchronization DB", zap.Error(err))
		return fmt.Errorf("loading the master's RDB: %w", err)
	}
	if auxID != "" && (auxID != f[1] || auxOff != f[2]) {
		// The stream position is +FULLRESYNC's (Redis's replica uses it
		// too); a file that names another one is worth a word.
		r.log.Warn("The master's RDB names another replication position than +FULLRESYNC",
			zap.String("repl_id", auxID), zap.String("repl_offset", auxOff))
	}
	r.log.Info("MASTER <-> REPLICA sync: Finished with success", zap.Int("keys", keys),
		zap.Int("functions", libs), zap.Int("repl_stream_db", streamDB))
	r.m.ResetTo(f[1], newOff, streamDB)
	r.syncing.Store(false)
	return nil
}

// ErrEmptyHistoryRefused: a full sync from a master that restarted without
// its data was refused (EmptyHistoryGuard).
// ErrLinkStopped ends a link whose command or load was dropped because the
// link stopped while it waited to run (Stream.Apply, FSM.LoadPayload).
var ErrLinkStopped = errors.New("the link to the master was stopped")

var ErrEmptyHistoryRefused = errors.New("refused a full sync from a master that restarted without its data")

// refuseEmptyHistory asks the FSM's EmptyHistoryGuard, if it has one,
// about a full sync (+FULLRESYNC replid offset, then payload) from the
// master this replica last synced from, when it starts a new history
// behind ours and brings no key at all: a master restarted with its data
// (an RDB file) brings its keys and is followed as usual.
func (r *Replica) refuseEmptyHistory(ml *masterLink, replid string, offset int64, payload []byte) bool {
	g, ok := r.fsm.(EmptyHistoryGuard)
	if !ok || ml.nodeID == "" {
		return false
	}
	if from := r.syncedFrom.Load(); from == nil || *from != ml.nodeID {
		return false
	}
	id, mine := r.m.IDs()
	if mine <= 0 || offset >= mine || replid == id || payloadKeys(payload) != 0 {
		return false
	}
	return g.RefuseEmptyHistory(ml.nodeID)
}

// payloadKeys counts the keys a full sync's RDB brings; -1 when unknown (a
// payload that does not parse: loading it fails anyway).
func payloadKeys(payload []byte) int64 {
	var n int64
	err := rdb.LoadFileWith(payload, rdb.DefaultLimits(), rdb.FileHandlers{
		Key: func(*rdb.LoadedKey) error { n++; return nil },
	})
	if err != nil {
		return -1
	}
	return n
}

// stream applies the master's stream until the link fails or stops.
func (r *Replica) stream(ml *masterLink, conn net.Conn, rd *resp.StreamReader, timeout time.Duration) error {
	// The stream goes on in the database it was in at our offset (Redis
	// keeps it in its cached master client, or reads repl-stream-db from
	// the full sync's RDB): a master does not repeat SELECT after a partial
	// resync.
	st := r.fsm.OpenStream(conn, r.m.StreamDB(), ml.stop)
	defer st.Close()
	ml.setState("connected")
	r.up.Store(true)
	r.lastIO.Store(time.Now().Unix())
	r.SendAck()
	st.BeginBatch()
	defer st.EndBatch()
	var args [][]byte
	var txRaw []byte // the stream bytes of an open transaction, from its MULTI
	for {
		waited := rd.Buffered() == 0
		if waited {
			st.EndBatch()
			// About to wait for the socket: only then is the deadline
			// (repl-timeout) and the last-I/O time worth a clock read.
			now := time.Now()
			r.lastIO.Store(now.Unix())
			_ = conn.SetReadDeadline(now.Add(timeout))
		}
		var raw []byte
		var err error
		args, raw, err = rd.ReadCommand(args)
		if err != nil {
			return err
		}
		if waited {
			st.BeginBatch() // what one socket read brought is one batch
		}
		r.bytesIn.Add(int64(len(raw)))
		if len(args) >= 2 && argIs(args[0], "replconf") && argIs(args[1], "getack") {
			r.SendAck()
			r.m.FeedRaw(raw, st.DB())
			continue
		}
		r.applyMu.Lock()
		if !st.Apply(args) {
			r.applyMu.Unlock()
			return ErrLinkStopped
		}
		r.feedPending.Store(true)
		// A transaction enters this node's stream (its offset, its
		// backlog, its sub-replicas) once it ran, as one unit, as in
		// Redis: a link lost half-way through it must resume before its
		// MULTI, since the queued commands are discarded with the link.
		switch {
		case st.InTransaction():
			txRaw = append(txRaw, raw...)
		case len(txRaw) > 0:
			txRaw = append(txRaw, raw...)
			r.m.FeedRaw(txRaw, st.DB())
			txRaw = txRaw[:0]
		default:
			r.m.FeedRaw(raw, st.DB())
		}
		r.feedPending.Store(false)
		r.applyMu.Unlock()
	}
}

// SendAck sends REPLCONF ACK <offset> to the master (every second, and on
// GETACK).
func (r *Replica) SendAck() {
	r.linkMu.Lock()
	ml := r.link
	r.linkMu.Unlock()
	if ml == nil || !r.up.Load() {
		return
	}
	off := r.m.Offset()
	ml.mu.Lock()
	defer ml.mu.Unlock()
	if ml.conn == nil {
		return
	}
	_ = ml.conn.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = ml.conn.Write(resp.AppendCommand(nil, "REPLCONF", "ACK", strconv.FormatInt(off, 10)))
}

// argIs compares a stream argument with a lower-case keyword as Redis's
// strcasecmp on the argument's C string does (a NUL byte ends it).
func argIs(b []byte, kw string) bool {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return strings.EqualFold(string(b), kw)
}

// SetSyncing marks a full sync in progress or over, as the link does when
// +FULLRESYNC arrives and when its RDB is loaded (tests hold a replica in
// the loading state with it).
func (r *Replica) SetSyncing(on bool) { r.syncing.Store(on) }
