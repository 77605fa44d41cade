package node

import (
	"crypto/tls"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-db/shoal/acl"
	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/internal/rawsock"
	"github.com/shoal-db/shoal/migrate"
	"github.com/shoal-db/shoal/resp"
	"github.com/shoal-db/shoal/slots"
	"github.com/shoal-db/shoal/store"
)

// Client is one connection's session state.
//
// Concurrency contract: the connection's goroutine (serveClient,
// node/conn.go) owns the Client and is the only one running its commands and
// writing c.out. Other goroutines (CLIENT LIST/KILL, INFO, SHUTDOWN) read
// only the atomic fields and the fields guarded by infoMu, and stop a client
// with kill().
type Client struct {
	// Ctx is what handlers see: the reply writer (Out, Proto), the locked
	// database, the effect API (package command).
	command.Ctx

	srv   *Server
	guard *resp.RequestReader
	id    int64

	// Session state owned by the connection goroutine.
	authenticated bool
	replyMode     replyMode
	closeAfter    bool          // QUIT: close once the reply is flushed
	batchAt       time.Time     // wall clock at the start of the current read batch (startBatch)
	batchStart    time.Duration // the same instant, as monotonic time since the server started
	cmdStart      time.Duration // monotonic start of the running command (since the server started)
	stats         cmdStatAcc    // statistics not yet added to the shared counters (node/dispatch_stats.go)
	connDone      bool          // the socket is closed: the serving loop stops
	wbuf          []byte        // the batch's small replies not yet written, after wblocks (node/output.go)
	wblocks       [][]byte      // the batch's earlier output: large replies as built, and the wbuf before each
	wblockBytes   int           // bytes in wblocks
	obufCheckAt   int           // batch output size at which the output limits are looked at (node/output.go)
	obufClosing   bool          // closed for passing its output buffer limit: nothing more is written
	argsKept      bool          // a command of the current batch keeps its arguments (keepArgs, node/conn.go)
	batchBytes    int           // size of the read batch being run (CLIENT LIST qbuf of the client itself)
	batch         batchState    // the read batch being run (node/conn.go)
	spareArgs     [][]byte      // the last batch's argument array, given back for the next one
	release       func()        // called once the connection has ended and c is unregistered
	loopConn      *rawsock.Conn // the connection while the event loop serves it (node/evloop.go)
	loopQueued    bool          // in the event loop's queue of connections with input left
	loopAnswering bool          // its batch has run; its replies wait for the loop's write phase (l.mu)
	// offLoopBatches: batches its goroutine served since the last command
	// the event loop does not run (loopReturn)
	offLoopBatches int
	// holdsScriptSlots: a script command of c's counts in
	// srv.scriptSlotHolds (enterExecution to leaveExecution)
	holdsScriptSlots bool
	keyBuf           []int
	measureBuf       []int       // remeasureWritten's key positions (node/effects.go)
	trackKeyBuf      []int       // trackingRemember's key positions (node/tracking.go)
	recentSpecs      recentSpecs // the last top-level commands looked up, by their names as sent (lookupCommand)
	errored          bool        // the current command replied with an error
	oomAtStart       bool        // maxmemory could not be met when the command started (node/maxmemory.go)
	// executing is set while the connection's goroutine runs a batch's
	// commands; evictAfterReplies asks it to close once their replies are
	// written (node/client_evict.go evictLater).
	executing         atomic.Bool
	evictAfterReplies atomic.Bool
	multi             *multiState     // open transaction (MULTI ... EXEC), nil if none
	multiBuf          multiState      // what multi points to: its queue's array is reused
	execStats         cmdStatAcc      // the statistics of the commands EXEC runs (execStatsFor)
	txSlotBuf         []uint16        // EXEC's slots, reused (transactionSlots)
	inExec            bool            // EXEC is running the queued commands
	readonly          bool            // READONLY: reads of the master's slots are served on this replica
	asking            bool            // ASKING: the next command may use an importing slot
	askingJustSet     bool            // the command running now is ASKING (node/cluster_route.go)
	routeRecheck      bool            // routing must be decided again under the slot lock (open slot)
	routeKeys         [][]byte        // routing's key buffer
	routeTable        *slots.Table    // the slot table the running command was routed with
	importing         *migrate.Import // the atomic slot migration this connection streams, if any
	slotBuf           []uint16
	bs                clientBlocking // blocking commands' state (node/blocking.go)
	// verbatimEffect holds a command's own argv as its effect (node/effects.go).
	verbatimEffect [1][][]byte
	repl           *clientRepl  // replica link or master link (node/replication.go); nil for others
	replKind       atomic.Int32 // clientNormal, clientReplica or clientMaster, for other goroutines
	tx             clientTx     // WATCH, the execution gate, scripts (node/multi.go)

	// user is the ACL user the connection is authenticated as (nil for
	// internal clients: the master link, the AOF loader, which may run
	// anything); read by CLIENT LIST and ACL changes (node/acl.go).
	user atomic.Pointer[acl.User]
	// aclKeys is the ACL key check's buffer (node/acl.go).
	aclKeys aclKeySource

	// Pub/Sub subscriptions and the push queue (node/pubsub.go).
	ps clientSubscriptions
	// respShown is resp for CLIENT LIST on other goroutines (0: never
	// changed, 2); written by setResp.
	respShown atomic.Int32

	// Read by other goroutines.
	dbIndex         atomic.Int32
	lastInteraction atomic.Int64 // unix ms
	lastCmd         atomic.Pointer[command.Spec]
	blocked         atomic.Bool
	noEvict         atomic.Bool
	monitoring      atomic.Bool    // a MONITOR client (node/monitor.go)
	trk             clientTracking // CLIENT TRACKING (node/tracking.go)
	scriptCaller    *Client        // the script client: the client it runs a script for
	scriptKeys      [][]byte       // ... and the keys that script declared
	killed          atomic.Bool
	multiLen        atomic.Int32 // commands queued in MULTI (-1 = not in MULTI)
	outBytes        atomic.Int64 // total reply bytes written
	cmdsProcessed   atomic.Int64
	obuf            outputState    // output held and not yet written (node/output.go)
	mem             clientMemState // memory accounting and client eviction (node/client_evict.go)

	infoMu  sync.Mutex // guards the fields below
	name    string
	libName string
	libVer  string
	created time.Time
	addr    string
	laddr   string
}

type replyMode uint8

const (
	replyOn replyMode = iota
	replyOff
	replySkip     // skip the next command's reply
	replySkipThis // internal: the current command's reply is skipped
)

// SelectedDB is the client's selected database (command.Session).
func (c *Client) SelectedDB() *store.DB { return c.srv.ks.DB(int(c.dbIndex.Load())) }

// setResp switches the protocol (HELLO, RESET).
func (c *Client) setResp(v int) {
	c.Proto = v
	c.respShown.Store(int32(v))
}

// Server returns the server the client is connected to.
func (c *Client) Server() *Server { return c.srv }

// RESP returns the protocol version in use (2 or 3).
func (c *Client) RESP() int { return c.Proto }

// ID returns the client's id.
func (c *Client) ID() int64 { return c.id }

// Name returns the client's name.
func (c *Client) Name() string {
	c.infoMu.Lock()
	defer c.infoMu.Unlock()
	return c.name
}

// SetName sets the client's name (CLIENT SETNAME, HELLO SETNAME).
func (c *Client) SetName(n string) {
	c.infoMu.Lock()
	c.name = n
	c.infoMu.Unlock()
}

// SetLib records CLIENT SETINFO LIB-NAME / LIB-VER.
func (c *Client) SetLib(name, ver *string) {
	c.infoMu.Lock()
	if name != nil {
		c.libName = *name
	}
	if ver != nil {
		c.libVer = *ver
	}
	c.infoMu.Unlock()
}

// kill closes the client's socket; its goroutine then ends. Safe from any
// goroutine.
func (c *Client) kill() {
	if c.killed.CompareAndSwap(false, true) {
		conn := c.guard.Conn
		if tc, ok := conn.(*tls.Conn); ok {
			// Not tls.Conn.Close: its close_notify alert may wait 5 s on
			// a client that does not read (an output-limit kill), in the
			// killer's goroutine (the cron, CLIENT KILL).
			conn = tc.NetConn()
		}
		_ = conn.Close()
	}
}

// Close asks the connection to close after the current reply (QUIT).
func (c *Client) CloseAfterReply() { c.closeAfter = true }

// InfoLine returns the client's CLIENT LIST / CLIENT INFO line (without the
// trailing newline), in Redis 7.0's field order.
func (c *Client) InfoLine() string { return c.infoLine(nil) }

// infoLine is InfoLine for a client running a command with arguments
// running (CLIENT LIST or INFO listing itself): as in Redis, they count in
// its argv-mem and tot-mem.
func (c *Client) infoLine(running [][]byte) string {
	c.infoMu.Lock()
	name, lib, ver, created, addr, laddr := c.name, c.libName, c.libVer, c.created, c.addr, c.laddr
	c.infoMu.Unlock()
	now := time.Now()
	cmd := "NULL"
	if sp := c.lastCmd.Load(); sp != nil {
		cmd = sp.FullName()
	}
	flags := ""
	switch c.kind() { // replicas and the master link, first as in Redis
	case clientReplica:
		flags += "S"
	case clientNormal:
		if c.monitoring.Load() {
			flags += "O"
		}
	case clientMaster:
		flags += "M"
	}
	// The rest in catClientInfoString's order.
	if c.subscribed() {
		flags += "P"
	}
	if c.multiLen.Load() >= 0 {
		flags += "x"
	}
	if c.blocked.Load() {
		flags += "b"
	}
	trkFlags, redir := c.trackingFlags() // t, R, B
	flags += trkFlags
	if c.tx.watch.dirty.Load() {
		flags += "d" // a watched key was touched: EXEC will fail
	}
	if c.closeAfter {
		flags += "c"
	}
	if addr == unixSocketAddr {
		flags += "U"
	}
	if c.noEvict.Load() {
		flags += "e"
	}
	if flags == "" {
		flags = "N"
	}
	multi := int64(c.multiLen.Load())
	qbuf := c.guard.QueryBuffered()
	if running != nil {
		// As Redis's query buffer, which holds the whole read until
		// every command of it has run.
		qbuf += int64(c.batchBytes)
	}
	var b strings.Builder
	b.Grow(256)
	field := func(k, v string) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(v)
	}
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	field("id", itoa(c.id))
	field("addr", addr)
	field("laddr", laddr)
	field("fd", itoa(c.fd()))
	field("name", name)
	field("age", itoa(int64(now.Sub(created)/time.Second)))
	field("idle", itoa((now.UnixMilli()-c.lastInteraction.Load())/1000))
	field("flags", flags)
	field("db", itoa(int64(c.dbIndex.Load())))
	field("sub", itoa(int64(c.ps.counts[kindChannel].Load())))
	field("psub", itoa(int64(c.ps.counts[kindPattern].Load())))
	field("ssub", itoa(int64(c.ps.counts[kindShard].Load())))
	field("multi", itoa(multi))
	field("qbuf", itoa(qbuf))
	field("qbuf-free", itoa(max(0, c.guard.BufferSize()-qbuf)))
	argvPayload, argvTotal := argvBytes(running) // node/client_evict.go
	field("argv-mem", itoa(c.guard.PartialArgv()+argvPayload))
	field("multi-mem", itoa(c.mem.multiArgv.Load()))
	field("rbs", itoa(c.guard.BufferSize()))
	field("rbp", itoa(c.guard.BufferSize()))
	field("obl", "0")
	field("oll", "0")
	omem := c.obuf.held.Load()
	field("omem", itoa(omem))
	field("tot-mem", itoa(c.clientMemoryUsage()+argvTotal)) // what client eviction counts
	field("events", "r")
	field("cmd", cmd)
	field("user", c.userName())
	field("redir", itoa(redir))
	resp := int64(c.respShown.Load())
	if resp == 0 {
		resp = 2
	}
	field("resp", itoa(resp))
	_ = lib
	_ = ver
	return b.String()
}

// fd returns a stable small number standing in for the socket descriptor.
func (c *Client) fd() int64 {
	conn := c.guard.Conn
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn()
	}
	if g, ok := conn.(*recordGatherer); ok {
		conn = g.Conn
	}
	if tc := rawsock.TCP(conn); tc != nil {
		if f, err := tc.SyscallConn(); err == nil {
			var fd uintptr
			_ = f.Control(func(x uintptr) { fd = x })
			return int64(fd)
		}
	}
	return -1
}

// bindClient ties a new Client's handler context to it and to the server
// (command.Ctx.Init); every Client is made through it.
func (s *Server) bindClient(c *Client) *Client {
	c.Ctx.Init(c, s.ks, s.cfg)
	c.OnError = c.noteError
	return c
}
