package replication

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-db/shoal/resp"
)

// Master is a node's replication state and the fan-out of its stream: the
// replication ID and ID2, the offset, the backlog and the connected
// replicas (links). A replica node has one too: it proxies its master's
// stream to its own sub-replicas with the same IDs and offsets (chained
// replication), through FeedRaw.
//
// Concurrency contract: every method is safe for concurrent use. Writers
// call Propagate/FeedRaw on their own goroutines (with their slot locks
// held); these only encode and copy bytes under mu and never wait for a
// socket: each link has a writer goroutine that drains its pending bytes,
// and a link whose pending bytes pass the output limit is dropped.
type Master struct {
	cfg Config

	mu           sync.Mutex
	replID       string
	replID2      string
	offset       int64 // master_repl_offset
	secondOffset int64 // second_repl_offset (-1 when replID2 is unset)
	backlog      *Backlog
	// selDB is the database selected at the end of the stream, -1 = none
	// yet: SELECTs this node emitted, or, when it proxies its master's
	// stream, the database its master link is in after those bytes. A
	// replica that continues (or starts, after a full sync) at the end of
	// the stream is in this database.
	selDB int
	// forceSelect makes the next effect start with SELECT even in selDB
	// (after a full sync or a change of master, as Redis's slaveseldb = -1).
	forceSelect  bool
	links        []*Link
	enc          []byte
	noLinksSince time.Time // when the last link went away (repl-backlog-ttl)

	active atomic.Bool // the backlog exists: Propagate has work to do
	// owed: PropagateLater queued stream bytes whose writers were not
	// woken; FlushOwed writes them (links' owed under mu).
	owed      atomic.Bool
	flushList []*Link // FlushOwed's links to write, reused (under flushMu)
	flushMu   sync.Mutex

	encPool sync.Pool // *[]byte: effects are encoded into these before taking mu

	// The output limit in force (guarded by mu): reading the configuration
	// on every write would cost more than the copy.
	hardLimit, softLimit uint64
	softSeconds          int64

	ackMu   sync.Mutex
	ackWake chan struct{} // closed and replaced when a link acknowledges

	bytesOut atomic.Int64 // written to replicas (INFO total_net_repl_output_bytes)
}

// Config is what Master reads from the node's configuration, as functions
// so CONFIG SET applies at once.
type Config struct {
	// BacklogSize is repl-backlog-size.
	BacklogSize func() int
	// OutputLimit is client-output-buffer-limit for the replica class. It
	// is read when a replica attaches and on RefreshLimits (not per write).
	OutputLimit func() (hard, soft uint64, softSeconds int64)
	// OnDrop is told (without mu held) why a link was dropped.
	OnDrop func(l *Link, reason string)
}

// NewMaster returns the state of a node that has never replicated: a
// fresh replication ID, offset 0, no backlog.
func NewMaster(cfg Config) *Master {
	if cfg.BacklogSize == nil {
		cfg.BacklogSize = func() int { return 1 << 20 }
	}
	if cfg.OutputLimit == nil {
		cfg.OutputLimit = func() (uint64, uint64, int64) { return 256 << 20, 64 << 20, 60 }
	}
	return &Master{cfg: cfg, replID: NewReplID(), replID2: zeroID, secondOffset: -1, selDB: -1, forceSelect: true,
		ackWake: make(chan struct{}), noLinksSince: time.Now()}
}

const zeroID = "0000000000000000000000000000000000000000"

// NewReplID returns a random 40-hex replication ID.
func NewReplID() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Info is a snapshot of the state INFO replication reports.
type Info struct {
	ReplID, ReplID2      string
	Offset, SecondOffset int64
	BacklogActive        bool
	BacklogSize          int
	BacklogFirst         int64
	BacklogHistlen       int
	Links                []LinkInfo
}

// LinkInfo is one replica's line in INFO replication.
type LinkInfo struct {
	IP       string
	Port     int
	State    string
	Offset   int64
	LagSec   int64
	ID       int64
	Online   bool
	Priority int
}

// Snapshot returns the state for INFO / ROLE.
func (m *Master) Snapshot() Info {
	m.mu.Lock()
	defer m.mu.Unlock()
	in := Info{ReplID: m.replID, ReplID2: m.replID2, Offset: m.offset, SecondOffset: m.secondOffset}
	if m.backlog != nil {
		in.BacklogActive = true
		in.BacklogSize = m.backlog.Size()
		in.BacklogFirst = m.backlog.First()
		in.BacklogHistlen = m.backlog.Histlen()
	} else {
		in.BacklogSize = m.cfg.BacklogSize()
	}
	now := time.Now().Unix()
	for _, l := range m.links {
		in.Links = append(in.Links, LinkInfo{IP: l.ip, Port: l.port, State: l.state, Offset: l.ackOff.Load(),
			LagSec: now - l.ackTime.Load(), ID: l.id, Online: l.state == "online"})
	}
	return in
}

// BacklogBytes is the memory the backlog holds (0 before the first replica
// created it): part of used_memory.
func (m *Master) BacklogBytes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.backlog == nil {
		return 0
	}
	return m.backlog.Size()
}

// LinksPending is what the replica links hold: the stream bytes queued for
// each replica and being written (INFO's mem_clients_slaves; Redis counts
// its replicas' share of the replication buffer there).
func (m *Master) LinksPending() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for _, l := range m.links {
		n += int64(len(l.pending) + l.inFlight)
	}
	return n
}

// BytesOut is the number of bytes written to replicas so far.
func (m *Master) BytesOut() int64 { return m.bytesOut.Load() }

// Offset returns master_repl_offset.
func (m *Master) Offset() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.offset
}

// IDs returns the replication ID and the offset.
func (m *Master) IDs() (string, int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.replID, m.offset
}

// Active reports whether the backlog exists (the stream is being recorded).
func (m *Master) Active() bool { return m.active.Load() }

// Propagate appends one command's effects, against database db, to the
// stream: a SELECT first when the stream's database changes, as Redis
// does. It returns at once when there is no backlog.
func (m *Master) Propagate(db int, cmds [][][]byte) { m.propagate(db, cmds, true) }

// PropagateLater is Propagate without waking the replicas' writers: the
// caller (an event loop, which runs many clients' commands one after
// another) calls FlushOwed once it has run them, which writes the stream
// to each replica itself, one write for all of them, where Propagate wakes
// each replica's writer goroutine for every command.
func (m *Master) PropagateLater(db int, cmds [][][]byte) { m.propagate(db, cmds, false) }

func (m *Master) propagate(db int, cmds [][][]byte, wake bool) {
	if !m.active.Load() {
		return
	}
	// Encode outside the lock: writers of other slots only wait for the
	// copies into the backlog and the links.
	bp, _ := m.encPool.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	enc := (*bp)[:0]
	for _, argv := range cmds {
		enc = resp.AppendCommand(enc, argv...)
	}
	m.mu.Lock()
	if m.backlog != nil {
		if db != m.selDB || m.forceSelect {
			m.enc = resp.AppendCommand(m.enc[:0], "SELECT", strconv.Itoa(db))
			m.selDB = db
			m.forceSelect = false
			m.appendWakeLocked(m.enc, wake)
		}
		m.appendWakeLocked(enc, wake)
		m.selDB = resp.SelectedAfter(db, cmds)
	}
	m.mu.Unlock()
	if cap(enc) <= 64<<10 {
		*bp = enc
		m.encPool.Put(bp)
	}
}

// FeedCommand appends a command that does not depend on the database
// (PING, REPLCONF GETACK) to the stream.
func (m *Master) FeedCommand(argv ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.backlog == nil {
		return
	}
	m.appendLocked(resp.AppendCommand(nil, argv...))
}

// FeedArgs appends one command as given to the stream, in the stream's
// current database (DEBUG REPLICATE).
func (m *Master) FeedArgs(argv [][]byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.backlog == nil {
		return
	}
	m.appendLocked(resp.AppendCommand(nil, argv...))
}

// FeedRaw appends bytes received from this node's own master to the stream
// (a replica proxies them to its sub-replicas and backlog unchanged); db is
// the database the master link is in once they are applied.
func (m *Master) FeedRaw(p []byte, db int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.selDB = db
	if m.backlog == nil {
		m.offset += int64(len(p))
		return
	}
	m.appendLocked(p)
}

func (m *Master) appendLocked(p []byte) { m.appendWakeLocked(p, true) }

func (m *Master) appendWakeLocked(p []byte, wake bool) {
	m.backlog.Write(p)
	m.offset = m.backlog.End()
	var drop []*Link
	for _, l := range m.links {
		if l.attached && !l.queueLocked(p, wake) {
			drop = append(drop, l)
		}
	}
	for _, l := range drop {
		m.dropLocked(l, "output buffer limit")
	}
}

// SaveInfo is what an RDB file records of the stream (Redis's
// rdbPopulateSaveInfo): the replication ID, the offset and the database the
// stream is in; ok is false without a backlog (no replication chain).
func (m *Master) SaveInfo() (replID string, offset int64, streamDB int, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.backlog == nil {
		return "", 0, 0, false
	}
	return m.replID, m.offset, max(m.selDB, 0), true
}

// StreamDB is the database selected at the end of the stream (0 when none
// was): where a replica continuing from this node's offset starts.
func (m *Master) StreamDB() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return max(m.selDB, 0)
}

// ensureBacklogLocked creates the backlog. A node that had none (it never
// had replicas, or freed the backlog after repl-backlog-ttl) takes a new
// replication ID, as Redis does: replicas with data from before cannot
// continue.
func (m *Master) ensureBacklogLocked(freshID bool) {
	if m.backlog != nil {
		return
	}
	if freshID {
		m.replID = NewReplID()
		m.replID2 = zeroID
		m.secondOffset = -1
	}
	m.backlog = NewBacklog(m.cfg.BacklogSize(), m.offset)
	m.active.Store(true)
}

// PsyncRequest is what a replica asked for.
type PsyncRequest struct {
	ReplID string // "?" for a full sync
	From   int64  // the first byte it wants (its offset + 1); -1 with "?"
	Psync2 bool   // REPLCONF capa psync2: +CONTINUE names the replication ID
	Sync   bool   // the old SYNC command: no +FULLRESYNC line
	IP     string
	Port   int
	ID     int64 // the client id (INFO, CLIENT LIST)
	// RDBOnly is REPLCONF rdb-only 1 (redis-cli --rdb): the replica wants
	// the RDB file and no stream.
	RDBOnly bool
}

// Attach registers a replica connection. conn is only written by the
// link's writer goroutine once its stream starts. It returns the link and
// whether a full sync follows. A partial resync's reply (+CONTINUE and the
// missing bytes) is the first thing the writer sends. A full sync's link
// waits (state wait_bgsave, no stream queued) until the node's snapshot
// starts it at the snapshot's instant (StartStreamAt); the node writes
// +FULLRESYNC and the RDB to it (WritePre) before the writer may send
// the stream (StartStream, StartStreamOnAck).
func (m *Master) Attach(conn net.Conn, req PsyncRequest) (*Link, bool) {
	hard, soft, softSec := m.cfg.OutputLimit()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hardLimit, m.softLimit, m.softSeconds = hard, soft, softSec
	l := &Link{m: m, conn: conn, ip: req.IP, port: req.Port, id: req.ID, rdbOnly: req.RDBOnly,
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	under := conn
	if rr, ok := conn.(*resp.RequestReader); ok {
		under = rr.Conn
	}
	if w, ok := under.(interface{ WriteNow([]byte) (int, error) }); ok {
		l.writeNow = w.WriteNow
	}
	l.ackTime.Store(time.Now().Unix())
	partial := false
	if m.backlog != nil && !req.Sync && req.ReplID != "?" && !req.RDBOnly {
		idOK := req.ReplID == m.replID || (req.ReplID == m.replID2 && req.From <= m.secondOffset)
		partial = idOK && m.backlog.Contains(req.From)
	}
	if partial {
		if req.Psync2 {
			l.pending = append(l.pending, "+CONTINUE "+m.replID+"\r\n"...)
		} else {
			l.pending = append(l.pending, "+CONTINUE\r\n"...)
		}
		l.pending = m.backlog.AppendFrom(l.pending, req.From)
		l.state = "online"
		l.attached = true
		l.ackOff.Store(req.From - 1)
		l.wake <- struct{}{}
	} else {
		// Redis creates the backlog when the first replica asks, with a
		// new ID if there was none.
		m.ensureBacklogLocked(len(m.links) == 0)
		l.state = "wait_bgsave"
		l.held = true
	}
	m.links = append(m.links, l)
	go l.writeLoop()
	return l, !partial
}

// StartStreamAt is the instant S of a full sync's snapshot (the node calls
// it with its execution gate closed and its master-link apply held, so
// nothing changes the data or the stream meanwhile): from now on the
// stream is queued to links (rdb-only links get none), and it returns the
// replication ID, the offset S and the database the stream is in at S
// (Redis's repl-stream-db, 0 when none was selected yet).
func (m *Master) StartStreamAt(links []*Link) (replID string, offset int64, streamDB int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, l := range links {
		if !l.closed && !l.rdbOnly {
			l.attached = true
		}
	}
	if len(links) > 0 {
		// The stream after S starts with a SELECT, as Redis's slaveseldb
		// = -1 after a full sync's BGSAVE (the RDB names the database too).
		m.forceSelect = true
	}
	return m.replID, m.offset, max(m.selDB, 0)
}

// Detach removes a link whose connection closed.
func (m *Master) Detach(l *Link) {
	m.mu.Lock()
	m.dropLocked(l, "")
	m.mu.Unlock()
}

func (m *Master) dropLocked(l *Link, reason string) {
	for i, x := range m.links {
		if x == l {
			m.links = append(m.links[:i], m.links[i+1:]...)
			break
		}
	}
	if l.closed {
		return
	}
	l.closed = true
	close(l.done)
	_ = l.conn.Close()
	if len(m.links) == 0 {
		m.noLinksSince = time.Now()
	}
	if reason != "" && m.cfg.OnDrop != nil {
		go m.cfg.OnDrop(l, reason)
	}
}

// DropAll disconnects every replica (they reconnect and PSYNC: after a
// replication ID change, or when this node starts following a new master).
func (m *Master) DropAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for len(m.links) > 0 {
		m.dropLocked(m.links[0], "")
	}
}

// NumLinks returns the number of connected replicas.
func (m *Master) NumLinks() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.links)
}

// Expire frees the backlog after ttl without replicas (repl-backlog-ttl, a
// master only; 0 means never), and reports whether it did. The next
// replica then gets a new replication ID.
func (m *Master) Expire(ttl time.Duration) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.backlog == nil || len(m.links) > 0 || ttl <= 0 || time.Since(m.noLinksSince) < ttl {
		return false
	}
	m.backlog = nil
	m.active.Store(false)
	m.replID = NewReplID()
	m.replID2 = zeroID
	m.secondOffset = -1
	return true
}

// RefreshLimits reads client-output-buffer-limit again (the node calls it
// once a second).
func (m *Master) RefreshLimits() {
	hard, soft, softSec := m.cfg.OutputLimit()
	m.mu.Lock()
	m.hardLimit, m.softLimit, m.softSeconds = hard, soft, softSec
	m.mu.Unlock()
}

// ResizeBacklog applies CONFIG SET repl-backlog-size.
func (m *Master) ResizeBacklog(size int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.backlog != nil {
		m.backlog.Resize(size)
	}
}

// ChangeID takes a new replication ID and forgets ID2 (DEBUG
// CHANGE-REPL-ID): no replica can continue from this node afterwards.
func (m *Master) ChangeID() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.replID = NewReplID()
	m.replID2 = zeroID
	m.secondOffset = -1
}

// ShiftID is what a replica does when it becomes a master (PSYNC2): the
// current ID becomes ID2, valid up to the current offset, and a new ID
// starts, so former siblings can continue from this node. Sub-replicas are
// dropped to learn the new ID (they continue with +CONTINUE).
func (m *Master) ShiftID() {
	m.mu.Lock()
	m.replID2 = m.replID
	m.secondOffset = m.offset + 1
	m.replID = NewReplID()
	m.forceSelect = true
	for len(m.links) > 0 {
		m.dropLocked(m.links[0], "")
	}
	m.mu.Unlock()
}

// ContinueWith is a replica's +CONTINUE <id>: when the master's ID differs
// from the cached one, the cached ID becomes ID2 up to the current offset.
// Sub-replicas are dropped to learn the new ID.
func (m *Master) ContinueWith(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.backlog == nil {
		// A replica keeps a backlog for its own sub-replicas (and for
		// the day it is promoted), with its master's ID.
		m.backlog = NewBacklog(m.cfg.BacklogSize(), m.offset)
		m.active.Store(true)
	}
	if id == "" || id == m.replID {
		return
	}
	m.replID2 = m.replID
	m.secondOffset = m.offset + 1
	m.replID = id
	for len(m.links) > 0 {
		m.dropLocked(m.links[0], "")
	}
}

// ResetTo is a replica's +FULLRESYNC id offset: the stream restarts at
// offset with the master's ID, in database db (the payload's
// repl-stream-db), the backlog restarts empty and sub-replicas must sync
// again.
func (m *Master) ResetTo(id string, offset int64, db int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.replID = id
	m.replID2 = zeroID
	m.secondOffset = -1
	m.offset = offset
	m.backlog = NewBacklog(m.cfg.BacklogSize(), offset)
	m.active.Store(true)
	m.selDB = db
	for len(m.links) > 0 {
		m.dropLocked(m.links[0], "")
	}
}

// StartLoadFeed creates the backlog before a master's start-up load of an
// RDB file, as Redis's loadDataFromDisk: the load feeds a DEL for each key
// it drops as expired (Propagate), so that replicas continuing from the
// file's offset (RebaseOnFile) drop them too. The ID stays this run's.
func (m *Master) StartLoadFeed() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ensureBacklogLocked(false)
}

// RebaseOnFile ends a start-up load whose file named the replication ID id
// and offset: that history becomes ID2, valid up to offset (a replica that
// was in sync when the file was written continues with +CONTINUE), and
// the stream fed during the load (StartLoadFeed) is moved to follow it, so
// master_repl_offset is offset plus the bytes fed.
func (m *Master) RebaseOnFile(id string, offset int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ensureBacklogLocked(false)
	m.replID2 = id
	m.secondOffset = offset + 1
	m.offset += offset
	m.backlog.Rebase(offset)
	m.noLinksSince = time.Now()
}

// DropLoadFeed frees the backlog of a start-up load whose file had no
// replication fields (or no file): no replica can continue from it, so
// the memory is not kept (the next replica gets a new ID). The offset
// keeps the bytes fed, as in Redis.
func (m *Master) DropLoadFeed() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.backlog = nil
	m.active.Store(false)
}

// GoodLinks counts online replicas whose last ACK is at most maxLag old
// (min-replicas-max-lag).
func (m *Master) GoodLinks(maxLag time.Duration) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now().Unix()
	n := 0
	for _, l := range m.links {
		if l.state == "online" && time.Duration(now-l.ackTime.Load())*time.Second <= maxLag {
			n++
		}
	}
	return n
}

// Acked counts the online replicas that acknowledged offset off.
func (m *Master) Acked(off int64) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, l := range m.links {
		if l.state == "online" && l.ackOff.Load() >= off {
			n++
		}
	}
	return n
}

// AckChanged returns a channel closed at the next acknowledgement.
func (m *Master) AckChanged() <-chan struct{} {
	m.ackMu.Lock()
	defer m.ackMu.Unlock()
	return m.ackWake
}

func (m *Master) noteAck() {
	m.ackMu.Lock()
	close(m.ackWake)
	m.ackWake = make(chan struct{})
	m.ackMu.Unlock()
}

// Link is one connected replica.
type Link struct {
	m       *Master
	conn    net.Conn
	ip      string
	port    int
	id      int64
	rdbOnly bool // REPLCONF rdb-only 1: no stream, closed after the RDB

	// Guarded by m.mu.
	state      string // wait_bgsave, send_bulk, online (INFO's names)
	attached   bool   // the stream is queued to it (from the sync's offset on)
	held       bool   // the writer leaves pending alone: the RDB goes first
	startOnAck bool   // the stream starts at the replica's first ACK
	pending    []byte
	spare      []byte
	inFlight   int  // bytes being written now, by the writer or FlushOwed; the other leaves pending alone
	owed       bool // pending got bytes whose writer was not woken (PropagateLater)
	closed     bool
	softSince  time.Time // when pending first passed the soft limit

	// preMu serialises what is written to conn before the stream starts
	// (keep-alive newlines, +FULLRESYNC, the RDB); bulkStarted (under it)
	// stops the newlines once the RDB's first byte went.
	preMu       sync.Mutex
	bulkStarted bool

	wake chan struct{} // cap 1: pending has bytes
	// writeNow writes what the socket takes now, without waiting (nil when
	// the connection cannot: TLS). FlushOwed's write.
	writeNow func([]byte) (int, error)
	flushBuf []byte        // FlushOwed's buffer taken from pending (under flushMu)
	done     chan struct{} // closed when the link is dropped

	ackOff  atomic.Int64
	ackTime atomic.Int64 // unix seconds of the last ACK
}

// Done is closed when the link was dropped.
func (l *Link) Done() <-chan struct{} { return l.done }

// Ack records REPLCONF ACK offset. A replica that got its RDB with an EOF
// mark gets the stream from its first ACK on, as Redis does (nothing may
// follow the mark before the replica has found it).
func (l *Link) Ack(off int64) {
	l.ackTime.Store(time.Now().Unix())
	if off > l.ackOff.Load() {
		l.ackOff.Store(off)
	}
	l.m.mu.Lock()
	if l.startOnAck {
		l.startOnAck = false
		l.releaseLocked()
	}
	l.m.mu.Unlock()
	l.m.noteAck()
}

// SetAddr records REPLCONF listening-port / ip-address given after PSYNC's
// bookkeeping started (they normally come first).
func (l *Link) SetAddr(ip string, port int) {
	l.m.mu.Lock()
	if ip != "" {
		l.ip = ip
	}
	if port != 0 {
		l.port = port
	}
	l.m.mu.Unlock()
}

// RDBOnly reports REPLCONF rdb-only 1.
func (l *Link) RDBOnly() bool { return l.rdbOnly }

// SetState sets the state INFO reports (send_bulk while a disk-based
// sync's file is sent).
func (l *Link) SetState(state string) {
	l.m.mu.Lock()
	l.state = state
	l.m.mu.Unlock()
}

// StartStream ends a full sync whose RDB was sent with its length: the
// replica is online and the writer sends the stream queued since the
// sync's offset.
func (l *Link) StartStream() {
	l.m.mu.Lock()
	l.state = "online"
	l.ackTime.Store(time.Now().Unix()) // no false timeout (Redis's replicaPutOnline)
	l.releaseLocked()
	l.m.mu.Unlock()
}

// StartStreamOnAck ends a full sync whose RDB was sent with an EOF mark:
// the replica is online, its stream starts at its first ACK.
func (l *Link) StartStreamOnAck() {
	l.m.mu.Lock()
	l.state = "online"
	l.ackTime.Store(time.Now().Unix())
	l.startOnAck = true
	l.m.mu.Unlock()
}

func (l *Link) releaseLocked() {
	l.held = false
	l.wakeWriter()
}

// takePendingLocked takes the queued stream bytes for one write (the
// writer's or FlushOwed's), leaving the spare buffer to queue into; the
// other leaves pending alone until wroteLocked (inFlight).
func (l *Link) takePendingLocked() []byte {
	buf := l.pending
	l.pending = l.spare[:0]
	l.spare = nil
	l.inFlight = len(buf)
	return buf
}

// wroteLocked ends the write takePendingLocked began: buf, written, is
// kept as the spare buffer unless it grew large.
func (l *Link) wroteLocked(buf []byte) {
	l.inFlight = 0
	if buf != nil && cap(buf) <= 4<<20 {
		l.spare = buf[:0]
	}
}

// wakeWriter tells the writer that pending has bytes.
func (l *Link) wakeWriter() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// FlushOwed writes the stream bytes PropagateLater queued to every replica
// that has some: without waiting, from the caller's goroutine, each link
// whose writer is not writing already and whose connection can (writeNow).
// What a socket does not take now, and the other links, go to the links'
// writers. Any goroutine may call it.
func (m *Master) FlushOwed() {
	if !m.owed.Load() {
		return
	}
	m.flushMu.Lock()
	defer m.flushMu.Unlock()
	m.mu.Lock()
	m.owed.Store(false)
	list := m.flushList[:0]
	for _, l := range m.links {
		if !l.owed {
			continue
		}
		l.owed = false
		if l.held || l.inFlight > 0 || l.writeNow == nil || len(l.pending) == 0 {
			l.wakeWriter() // its writer takes pending when it can
			continue
		}
		l.flushBuf = l.takePendingLocked()
		list = append(list, l)
	}
	m.mu.Unlock()
	for i, l := range list {
		list[i] = nil
		buf := l.flushBuf
		l.flushBuf = nil
		n, err := l.writeNow(buf)
		m.bytesOut.Add(int64(n))
		m.mu.Lock()
		switch {
		case err != nil:
			l.inFlight = 0
			m.dropLocked(l, "")
		case n < len(buf):
			// The rest goes first, before what was queued meanwhile; the
			// buffer queued meanwhile is the one kept for next time.
			k := copy(buf, buf[n:])
			rest := append(buf[:k], l.pending...)
			l.wroteLocked(l.pending)
			l.pending = rest
			l.wakeWriter()
		default:
			l.wroteLocked(buf)
			if len(l.pending) > 0 {
				l.wakeWriter()
			}
		}
		m.mu.Unlock()
	}
	m.flushList = list[:0]
}

// Close drops the link (a failed sync, or an rdb-only replica served).
func (l *Link) Close() {
	l.m.mu.Lock()
	l.m.dropLocked(l, "")
	l.m.mu.Unlock()
}

// WritePre writes p to the replica before its stream starts (+FULLRESYNC,
// the RDB transfer), within timeout; bulk says p is part of the RDB
// transfer (no keep-alive newline may follow). An error drops the link.
func (l *Link) WritePre(p []byte, bulk bool, timeout time.Duration) error {
	l.preMu.Lock()
	defer l.preMu.Unlock()
	if bulk {
		l.bulkStarted = true
	}
	_ = l.conn.SetWriteDeadline(time.Now().Add(timeout))
	n, err := l.conn.Write(p)
	l.m.bytesOut.Add(int64(n))
	if err != nil {
		l.Close()
	}
	return err
}

// KeepAlive writes a newline to a replica waiting for its RDB (Redis sends
// one a second, so the replica's repl-timeout does not expire); nothing
// once the RDB transfer started.
func (l *Link) KeepAlive() {
	l.preMu.Lock()
	defer l.preMu.Unlock()
	if l.bulkStarted {
		return
	}
	_ = l.conn.SetWriteDeadline(time.Now().Add(time.Second))
	n, _ := l.conn.Write([]byte{'\n'})
	l.m.bytesOut.Add(int64(n))
}

// Closed reports whether the link was dropped.
func (l *Link) Closed() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// Pending returns the bytes queued and being written.
func (l *Link) Pending() int {
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	return len(l.pending) + l.inFlight
}

// queueLocked appends stream bytes and reports false when the replica is
// over its output limit and must be dropped.
func (l *Link) queueLocked(p []byte, wake bool) bool {
	l.pending = append(l.pending, p...)
	if wake {
		l.wakeWriter()
	} else if !l.owed {
		l.owed = true
		l.m.owed.Store(true)
	}
	size := uint64(len(l.pending) + l.inFlight)
	hard, soft, softSec := l.m.hardLimit, l.m.softLimit, l.m.softSeconds
	if hard > 0 && size > hard {
		return false
	}
	if soft > 0 && size > soft {
		if l.softSince.IsZero() {
			l.softSince = time.Now()
		} else if time.Since(l.softSince) > time.Duration(softSec)*time.Second {
			return false
		}
	} else {
		l.softSince = time.Time{}
	}
	return true
}

// writeLoop drains pending to the socket until the link is dropped.
//
// One write carries what many clients' batches queued, as Redis writes a
// replica's buffer once per event-loop pass: the wake-up comes from the
// first client of a pass, and the runtime runs a goroutine readied by
// another next, so the loop first yields to the clients already runnable
// (the rest of the pass, readied together by the poller) and takes what
// they all queued. Without the yield the master wrote once per client
// batch (1.7x Redis's syscalls, and the replica read as often); yielding
// more than once gains nothing (the poller is asked for more clients only
// once nothing else can run).
func (l *Link) writeLoop() {
	for {
		select {
		case <-l.wake:
		case <-l.done:
			return
		}
		runtime.Gosched()
		l.m.mu.Lock()
		if l.held || l.inFlight > 0 {
			// The RDB goes first (WritePre); the stream waits. Or
			// FlushOwed is writing: it wakes the writer again if it leaves
			// bytes.
			l.m.mu.Unlock()
			continue
		}
		buf := l.takePendingLocked()
		l.m.mu.Unlock()
		if len(buf) == 0 {
			continue
		}
		_ = l.conn.SetWriteDeadline(time.Now().Add(60 * time.Second))
		n, err := l.conn.Write(buf)
		l.m.bytesOut.Add(int64(n))
		l.m.mu.Lock()
		l.wroteLocked(buf)
		if err != nil {
			l.m.dropLocked(l, "")
		}
		l.m.mu.Unlock()
		if err != nil {
			return
		}
	}
}
