// Package node is one shoal-server process: listeners, client sessions, the
// command table and dispatcher, and the server-level commands (INFO, CONFIG,
// CLIENT, DEBUG, ...). It wires the keyspace (store) and, later, the cluster
// subsystems together.
package node

import (
	"cmp"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-db/shoal/acl"
	"github.com/shoal-db/shoal/internal/rawsock"

	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/gossip"
	"github.com/shoal-db/shoal/migrate"
	"github.com/shoal-db/shoal/resp"
	"github.com/shoal-db/shoal/store"
	"go.uber.org/zap"
)

// Version is the Redis version shoal answers to (HELLO, INFO redis_version).
const Version = "7.0.15"

// Server is one node.
//
// Concurrency: commands run on their connection's goroutine; the keyspace
// is guarded per slot (see store). Server-wide mutable state is either
// atomic or guarded by mu.
type Server struct {
	cfg   *config.Config
	log   *zap.Logger
	ks    *store.Keyspace
	table *commandTable
	acl   *acl.Registry // users, rules and the ACL log (node/acl.go)
	runID string
	logID *logIdentity // the node_id/current_epoch of every log line
	start time.Time
	pid   int

	limits       serverLimits
	cevict       clientEviction    // client memory totals and maxmemory-clients (node/client_evict.go)
	feeds        effectFeeds       // consumers of the write-effect feed (node/effects.go)
	repl         *replState        // replication, both sides (node/replication*.go)
	aof          *aofState         // the append-only file (node/aof*.go)
	tx           serverTx          // WATCH registry, execution gate, scripts (node/multi.go)
	migrations   *migrate.Manager  // atomic slot migration, nil unless cluster-enabled (node/cmd_cluster_migrate.go)
	migrateConns migrate.ConnCache // MIGRATE's cached target connections
	rdbSave      rdbSaveState      // SAVE / BGSAVE / start-up load (node/cmd_dump_save.go)
	snapshotMu   sync.Mutex        // one point-in-time snapshot at a time (node/snapshot.go)
	loading      loadingState      // a dataset is being loaded (node/loading.go)
	monitors     monitorRegistry   // MONITOR clients (node/monitor.go)
	tracking     trackingTable     // CLIENT TRACKING (node/tracking.go)
	oomScore     oomScoreState     // oom-score-adj (node/oomscore.go)
	dirty        dirtyCounter      // changes to the dataset, Redis's server.dirty (node/persistence.go)
	shutdown     shutdownState     // the SHUTDOWN / signal sequence (node/persistence.go)
	// dataLost: this cluster master restarted without its data and waits
	// for a replica holding it to take over (node/datalost.go).
	dataLost atomic.Bool

	mu        sync.Mutex
	clients   map[int64]*Client
	listeners []net.Listener
	// bound, serving and startupLoading belong to the goroutine that
	// calls LoadData then Listen: Bind opened the listeners, their accept
	// loops run (from LoadData when Bind came first), and the loading
	// state that ends when Listen is done.
	bound          bool
	serving        bool
	startupLoading func()
	unixLn         net.Listener // unixsocket, nil without one (CONFIG SET port/bind leave it alone)
	closing        bool
	tls            tlsState // tls-port's listeners and the TLS configuration (node/tls.go)

	nextClientID atomic.Int64
	loops        []*eventLoop  // the event loops serving plain TCP clients (node/evloop.go)
	nextLoop     atomic.Uint32 // round robin over loops for new connections
	// scriptSlotHolds counts the script commands holding (or about to
	// take) their keys' slot locks, which they may hold for long
	scriptSlotHolds atomic.Int32
	stats           serverStats
	activeExpire    atomic.Bool
	cronHz          atomic.Int64 // the cron's current frequency (INFO hz), see cronFrequency
	cronPaused      atomic.Bool  // DEBUG PAUSE-CRON
	replyBufKeep    atomic.Bool  // DEBUG REPLYBUFFER RESIZING 0: a reply buffer keeps its size after a burst
	pause           clientPause
	slowlog         slowlog
	latency         *latencyMonitor    // latency-monitor-threshold's spikes (node/latency.go)
	failover        standaloneFailover // FAILOVER (node/failover_standalone.go)
	auxState        *serverAux
	mem             memoryState // used_memory's parts, maxmemory and eviction (node/maxmemory.go)
	// manageGoMemLimit: GOMEMLIMIT follows maxmemory (Options).
	manageGoMemLimit bool
	// trimHeap: the cron gives idle memory back (Options.ManageGoMemoryLimit).
	trimHeap   bool
	childCores childCores  // a core for a background save or rewrite (node/childcore.go)
	cluster    *gossip.Bus // nil unless cluster-enabled
	slotStats  *slotStats  // per-slot counters, nil unless cluster-enabled (node/cmd_slotstats.go)
	blockReg   *blockRegistry
	pubsub     *pubsubRegistry // node/pubsub.go
	notify     keyspaceNotify  // notify-keyspace-events (node/notify.go)
	// outputPeak holds, per second (unix time mod outputPeakSlots), the
	// largest client output buffer seen (node/output.go).
	outputPeak [outputPeakSlots]atomic.Int64
	// cronClients is the cron's reused snapshot of the clients.
	cronClients []*Client
	// streamWatcher serves XREADGROUP clients whose stream was deleted or
	// replaced (see cmd_stream_read.go).
	streamWatcher *streamWatcher
	// slowlogThreshold reads slowlog-log-slower-than without a name lookup
	// (it is consulted after every command).
	slowlogThreshold func() int64

	done     chan struct{} // closed when the server has stopped
	stopOnce sync.Once
	stopCron chan struct{}
	crons    serverCrons
	wg       sync.WaitGroup

	// shutdownHook runs when SHUTDOWN is accepted (the binary exits).
	shutdownHook func()
}

// serverStats are the counters INFO stats reports.
type serverStats struct {
	// readBatches counts socket reads that brought commands (one atomic
	// add per read, not per command): the heap trimmer's sign of activity.
	readBatches         atomic.Int64
	connectionsReceived atomic.Int64
	rejectedConns       atomic.Int64
	// Commands and network bytes are counted per client (no cache line
	// shared between cores on the hot path); these hold the totals of
	// clients that have disconnected, and the baseline RESETSTAT set.
	closedCommands, closedIn, closedOut atomic.Int64
	baseCommands, baseIn, baseOut       atomic.Int64
	panics                              atomic.Int64
	totalErrorReplies                   atomic.Int64
	errors                              sync.Map // error code → *atomic.Int64
	errorCodes                          atomic.Int64
	unexpectedErrors                    atomic.Int64
}

// Options are the parts of a node that are not configuration directives.
type Options struct {
	Logger *zap.Logger
	// OnShutdown is called (once) when a SHUTDOWN command stops the server.
	OnShutdown func()
	// LoadLater: New neither loads the data set (dir/dbfilename) nor
	// creates the cluster bus; the caller calls LoadData after its own
	// start-up log lines, as redis-server logs its PID and "Server
	// initialized" before it loads (and possibly rejects) the RDB file.
	LoadLater bool
	// ManageGoMemoryLimit: the process's Go memory limit (GOMEMLIMIT)
	// follows maxmemory, unless GOMEMLIMIT is set in the environment, and
	// the node gives free heap memory back to the OS when it goes idle
	// (node/heaptrim.go). Both are process-wide: the binary sets this,
	// tests that run many nodes in one process do not (each node's
	// trimmer would collect the whole process's heap, every node's
	// garbage, whenever its own clients went quiet).
	ManageGoMemoryLimit bool
	// ManageParallelism: a background save or AOF rewrite runs with one
	// more core (GOMAXPROCS) than the node serves clients with, as
	// redis-server's fork child does (node/childcore.go). Process-wide
	// like ManageGoMemoryLimit: the binary sets it, tests do not.
	ManageParallelism bool
}

// New builds a node from its configuration. It does not listen yet.
func New(cfg *config.Config, opts Options) (*Server, error) {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	var id [20]byte
	_, _ = rand.Read(id[:])
	s := &Server{
		cfg:          cfg,
		runID:        hex.EncodeToString(id[:]),
		start:        time.Now(),
		pid:          os.Getpid(),
		clients:      make(map[int64]*Client),
		done:         make(chan struct{}),
		stopCron:     make(chan struct{}),
		crons:        newServerCrons(),
		shutdownHook: opts.OnShutdown,
	}
	s.logID = &logIdentity{runID: s.runID, cluster: cfg.Bool("cluster-enabled")}
	s.log = withIdentity(log, s.logID) // node/logidentity.go
	s.auxState = newServerAux()
	s.blockReg = newBlockRegistry()
	s.pubsub = newPubsubRegistry()
	s.streamWatcher = newStreamWatcher(s)
	s.slowlogThreshold = cfg.IntFunc("slowlog-log-slower-than")
	s.latency = newLatencyMonitor(cfg.IntFunc("latency-monitor-threshold"))
	ndb := int(cfg.Int("databases"))
	if ndb < 1 {
		ndb = 16
	}
	s.ks = store.New(ndb, keyspaceClock{s}, (*expiryEvents)(s)) // keyspaceClock: node/script.go
	s.activeExpire.Store(true)
	s.cronHz.Store(s.cronFrequency())
	s.rdbSave.lastBgDuration.Store(-1)
	s.table = newCommandTable(cfg.RenamedCommands())
	if err := s.setupACL(); err != nil { // node/acl.go
		return nil, err
	}
	s.applyLimits()
	if err := s.initTLS(); err != nil { // node/tls.go
		return nil, err
	}
	s.migrateConns.Dial = s.dialNode // node/tls.go
	s.registerConfigHooks()
	s.registerNotifyHooks()         // node/notify.go
	s.registerScriptHooks()         // node/script.go
	s.registerTrackingHooks()       // node/tracking.go
	s.registerClientEvictionHooks() // node/client_evict.go
	s.repl = newReplState(s)
	s.aof = newAOFState(s)    // node/aof.go
	s.registerOOMScoreHooks() // node/oomscore.go
	s.manageGoMemLimit = opts.ManageGoMemoryLimit && !goMemLimitFromEnv()
	s.trimHeap = opts.ManageGoMemoryLimit
	s.childCores.enabled = opts.ManageParallelism
	s.applyMaxmemoryConfig()
	s.registerMaxmemoryHooks()
	s.applyGoMemoryLimit()
	if !opts.LoadLater {
		if err := s.LoadData(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// LoadData creates the cluster bus (nodes.conf says whether this node is a
// replica; the bus's first role notification is left to startReplication,
// so no link starts before the data is in place), then loads
// dir/dbfilename: a replica keeps logically expired keys. A file that does
// not load is reported in Redis's words (node/cmd_dump_save.go) and stops
// the server. Call it once, before Listen (New does, unless
// Options.LoadLater).
func (s *Server) LoadData() error {
	bus, err := s.newClusterBus()
	if err != nil {
		return fmt.Errorf("cluster bus: %w", err)
	}
	s.cluster = bus
	if bus != nil {
		s.logID.bus.Store(bus)
	}
	s.slotStats = s.newSlotStats()
	// Bound before (Bind): clients are served from now on, in the loading
	// state until Listen has started everything (node/loading.go), as
	// redis-server serves them during its start-up load.
	s.serveEarly()
	// After nodes.conf: a cluster replica keeps expired keys at load.
	// Whether a data set file exists, before the load may create one
	// (node/datalost.go).
	found := s.dataSetFilesExist()
	// With appendonly yes the AOF is loaded instead of the RDB file, as
	// Redis's loadDataFromDisk (node/aof_load.go).
	if err := s.aof.loadManifest(); err != nil {
		return err
	}
	if s.cfg.Bool("appendonly") {
		err = s.aof.loadAtStartup()
	} else {
		err = s.loadRDBAtStartup() // node/cmd_dump_save.go
	}
	if err != nil {
		return err
	}
	if err := s.aof.openAtStartup(); err != nil {
		return err
	}
	s.checkRestartedWithoutData(found) // node/datalost.go
	s.registerClusterConfigHooks()
	return nil
}

// expiryEvents receives the keyspace's own deletions (under the slot lock)
// and propagates each as DEL, as Redis does.
type expiryEvents Server

func (e *expiryEvents) KeyExpired(db int, key string) {
	s := (*Server)(e)
	s.notifyExpired(db, key) // node/notify.go
	if s.tx.watch.watching() {
		s.tx.watch.touch(db, []byte(key), nil) // deleted: no longer live
	}
	s.trackingInvalidate(nil, []byte(key), true) // node/tracking.go
	if s.feeds.list.Load() == nil {
		return
	}
	s.propagate(db, [][][]byte{{[]byte("DEL"), []byte(key)}})
}

// applyLimits copies the directives the hot path reads into atomics.
func (s *Server) applyLimits() {
	s.limits.ProtoMaxBulkLen.Store(s.cfg.Int("proto-max-bulk-len"))
	s.limits.QueryBufLimit.Store(s.cfg.Int("client-query-buffer-limit"))
	s.limits.IdleTimeout.Store(s.cfg.Int("timeout"))
	if s.limits.IdleTimeout.Load() > 0 {
		s.loopsHandOffAll() // their goroutines' read deadlines enforce it (node/evloop.go)
	}
	s.applyOutputLimits()
}

func (s *Server) registerConfigHooks() {
	for _, name := range []string{"proto-max-bulk-len", "client-query-buffer-limit", "timeout", "client-output-buffer-limit"} {
		s.cfg.OnChange(name, func(string) error { s.applyLimits(); return nil })
	}
}

// Keyspace returns the node's keyspace.
func (s *Server) Keyspace() *store.Keyspace { return s.ks }

// Logger returns the node's logger.
func (s *Server) Logger() *zap.Logger { return s.log }

// Config returns the node's configuration.
func (s *Server) Config() *config.Config { return s.cfg }

// Done is closed once the server has stopped.
func (s *Server) Done() <-chan struct{} { return s.done }

// ErrListen is returned by Listen when a listening socket cannot be created.
var ErrListen = errors.New("listen failed")

// Bind opens the client listeners on every bind address (and the unix
// socket) without serving them yet: redis-server binds before it logs its
// PID and loads the data set, so a harness that connects as soon as it
// sees the PID (Redis's test suite) is queued, not refused, while the data
// loads. Listen serves them; it opens them itself when Bind was not called.
func (s *Server) Bind() error {
	lns, unixLn, err := s.openClientListeners()
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.listeners, s.unixLn, s.bound = lns, unixLn, true
	s.mu.Unlock()
	return nil
}

func (s *Server) openClientListeners() ([]net.Listener, net.Listener, error) {
	port := int(s.cfg.Int("port"))
	// bind "" listens on no TCP address (Redis: only the unix socket, if
	// any; CONFIG SET bind does the same at run time), the TLS port too.
	binds := s.cfg.Strings("bind")
	// Listeners are retirable: CONFIG SET port/bind closes a socket but
	// keeps its serve loop, and so its clients, until the server stops.
	// "port 0" with a tls-port listens on TLS only, as Redis (an empty,
	// non-nil set: Listen must not open them again); port 0 alone is an
	// ephemeral port (tests).
	lns := []net.Listener{}
	if port != 0 || s.cfg.Int("tls-port") == 0 {
		var err error
		if lns, err = openListeners(int64(port), binds, s.stopCron); err != nil {
			s.log.Warn(fmt.Sprintf("Warning: Could not create server TCP listening socket %s:%d: %v", strings.Join(binds, " "), port, err))
			return nil, nil, fmt.Errorf("%w: Failed listening on port %d (TCP), aborting", ErrListen, port)
		}
	}
	closeAll := func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}
	if err := s.openTLSListeners(); err != nil { // node/tls.go
		closeAll()
		return nil, nil, err
	}
	unixLn, err := s.listenUnix()
	if err != nil {
		closeAll()
		s.closeTLSListeners()
		return nil, nil, err
	}
	s.tls.mu.Lock()
	tlsListening := len(s.tls.listeners) > 0
	s.tls.mu.Unlock()
	if len(lns) == 0 && unixLn == nil && !tlsListening {
		return nil, nil, errors.New("Configured to not listen anywhere, exiting.")
	}
	return lns, unixLn, nil
}

// Listen serves the client listeners (opening them first unless Bind did)
// and starts the cron and the other services. It returns once the sockets
// are bound.
func (s *Server) Listen() error {
	s.mu.Lock()
	lns, unixLn, bound := s.listeners, s.unixLn, s.bound
	s.mu.Unlock()
	if !bound { // bind "" binds no TCP address: Bind's unix socket alone
		var err error
		if lns, unixLn, err = s.openClientListeners(); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.listeners = lns
	s.unixLn = unixLn
	s.mu.Unlock()
	if !s.serving {
		s.serveListeners(lns, unixLn)
		s.serveTLSListeners() // node/tls.go
	}
	if s.cluster != nil {
		if err := s.cluster.Start(); err != nil {
			s.Shutdown()
			return fmt.Errorf("cluster bus: %w", err)
		}
	}
	if err := s.startDeployServices(); err != nil { // node/deploy.go
		s.Shutdown()
		return err
	}
	s.wg.Add(2)
	go s.cron()
	go func() {
		defer s.wg.Done()
		s.crons.aof.run(s.stopCron, s.aof.cron) // node/aof.go
	}()
	s.startReplication()
	if s.startupLoading != nil {
		s.startupLoading() // clients served since LoadData go on
		s.startupLoading = nil
	}
	return nil
}

// serveListeners accepts clients on every listener.
func (s *Server) serveListeners(lns []net.Listener, unixLn net.Listener) {
	s.serving = true
	s.startEventLoops() // node/evloop.go
	if unixLn != nil {
		lns = append(lns[:len(lns):len(lns)], unixLn)
	}
	for _, ln := range lns {
		s.goServe(ln)
	}
}

// serveEarly serves the listeners Bind opened from LoadData on, in a
// loading state that Listen ends once everything is started: commands
// without the loading flag wait for the load's points of serving clients
// and get -LOADING, INFO and CONFIG are answered (Redis's start-up load).
// Without Bind it does nothing: Listen serves the listeners.
func (s *Server) serveEarly() {
	s.mu.Lock()
	lns, unixLn, bound := s.listeners, s.unixLn, s.bound
	s.mu.Unlock()
	if !bound || s.serving {
		return
	}
	s.startupLoading = s.startLoading(0)
	s.serveListeners(lns, unixLn)
	s.serveTLSListeners() // node/tls.go
}

// goServe runs ln's accept loop (each accepted socket behind the request
// guard) until the server stops.
func (s *Server) goServe(ln net.Listener) {
	gl := &guardListener{Listener: ln, srv: s}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.serveListener(gl)
	}()
}

// listenUnix opens the unixsocket listener (nil when unixsocket is empty)
// as Redis's initListeners: a stale file at the path is removed first, the
// socket gets unixsocketperm when it is not 0, and a failure stops the
// server with Redis's "Failed opening Unix socket" line. Its clients are
// local (protected mode, CLIENT KILL's "local" checks) and are listed as
// /unixsocket:0, Redis's address for them.
func (s *Server) listenUnix() (net.Listener, error) {
	path := s.cfg.String("unixsocket")
	if path == "" {
		return nil, nil
	}
	_ = os.Remove(path) // Redis: "don't care if this fails"
	ln, err := net.Listen("unix", path)
	if err == nil {
		// The server removes the file itself at shutdown (unlinkUnixSocket
		// logs it), not net's close.
		ln.(*net.UnixListener).SetUnlinkOnClose(false)
		if perm := s.cfg.Int("unixsocketperm"); perm != 0 {
			if cerr := os.Chmod(path, os.FileMode(perm)); cerr != nil {
				_ = ln.Close()
				err = cerr
			}
		}
	}
	if err != nil {
		s.log.Warn(fmt.Sprintf("Failed opening Unix socket: %v", err))
		return nil, fmt.Errorf("%w: Failed opening Unix socket %s", ErrListen, path)
	}
	return ln, nil
}

// unlinkUnixSocket removes the unixsocket file once the server stops
// serving, as Redis's closeListeningSockets.
func (s *Server) unlinkUnixSocket() {
	path := s.cfg.String("unixsocket")
	if path == "" {
		return
	}
	s.log.Info("Removing the unix socket file.")
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.log.Warn(fmt.Sprintf("Error removing the unix socket file: %v", err))
	}
}

// Addr returns the first listener's address (tests use port 0).
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.listeners) == 0 {
		return nil
	}
	return s.listeners[0].Addr()
}

// guardListener wraps every accepted socket in a request guard
// (resp.RequestReader), and first in TLS on a tls-port listener.
type guardListener struct {
	net.Listener
	srv *Server
	tls *tls.Config // nil: plaintext
}

func (l *guardListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
		if ka := l.srv.cfg.Int("tcp-keepalive"); ka > 0 {
			_ = tc.SetKeepAlive(true)
			_ = tc.SetKeepAlivePeriod(time.Duration(ka) * time.Second)
		}
	}
	c = rawsock.Wrap(c) // reads and writes without waking sysmon (internal/rawsock)
	if l.tls != nil {
		// The handshake runs on the client's first read.
		c = tls.Server(&recordGatherer{Conn: c}, l.tls)
	}
	return l.srv.newGuard(c), nil
}

// accept registers a new client, or refuses it (maxclients, shutdown):
// then it returns nil and the caller closes the socket.
func (s *Server) accept(g *resp.RequestReader) *Client {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil
	}
	if int64(len(s.clients)) >= s.cfg.Int("maxclients") {
		s.mu.Unlock()
		s.stats.rejectedConns.Add(1)
		_, _ = g.Conn.Write([]byte("-ERR max number of clients reached\r\n"))
		return nil
	}
	if s.protectedModeRefuses(g.Conn) {
		s.mu.Unlock()
		s.stats.rejectedConns.Add(1)
		_, _ = g.Conn.Write([]byte(protectedModeMsg))
		return nil
	}
	// Like Redis's stat_numconnections, refused connections are not
	// counted as received.
	s.stats.connectionsReceived.Add(1)
	c := s.bindClient(&Client{
		srv:     s,
		guard:   g,
		id:      s.nextClientID.Add(1),
		created: time.Now(),
		addr:    redisAddr(g.Conn.RemoteAddr()),
		laddr:   redisAddr(g.Conn.LocalAddr()),
	})
	c.Proto = 2
	c.multiLen.Store(-1)
	c.lastInteraction.Store(time.Now().UnixMilli())
	c.user.Store(s.acl.Default())
	c.authenticated = s.defaultAuthenticated() // node/acl.go
	s.clients[c.id] = c
	s.mu.Unlock()
	// accept runs before the connection's goroutine starts, so the guard
	// has not read anything yet.
	g.SetLimits(c.limitsView())
	return c
}

// unixSocketAddr is anetFdToString's name for both ends of a unix socket.
const unixSocketAddr = "/unixsocket:0"

// redisAddr formats an address as Redis does in CLIENT LIST: ip:port with
// no brackets around IPv6 addresses.
func redisAddr(a net.Addr) string {
	switch ta := a.(type) {
	case *net.TCPAddr:
		return ta.IP.String() + ":" + strconv.Itoa(ta.Port)
	case *net.UnixAddr:
		return unixSocketAddr
	}
	return a.String()
}

// closed unregisters a client whose connection ended (err says why; nil
// for an orderly end).
func (s *Server) closed(c *Client, err error) {
	s.mu.Lock()
	delete(s.clients, c.id)
	defer c.detachReplica()
	s.stats.closedCommands.Add(c.cmdsProcessed.Load())
	s.stats.closedIn.Add(c.guard.BytesRead())
	s.stats.closedOut.Add(c.outBytes.Load())
	s.mu.Unlock()
	s.importConnClosed(c)   // node/cmd_cluster_migrate.go
	s.forgetClientMemory(c) // node/client_evict.go
	s.tx.watch.unwatchAll(c)
	c.stopMonitoring() // node/monitor.go
	c.trackingClosed() // node/tracking.go
	c.pubsubClosed()   // node/pubsub.go
	if errors.Is(err, resp.ErrQueryBufLimit) {
		s.log.Warn("Closing client that reached max query buffer length", zap.String("client", c.InfoLine()))
	}
}

// protectedModeMsg is clientAcceptHandler's reply, byte for byte (with its
// "Setup a an").
const protectedModeMsg = "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n"

// protectedModeRefuses applies Redis 7.0's protected mode: with
// protected-mode yes and no password for the default user, only local
// clients are served, whatever bind says (Redis 6 also exempted an
// explicit bind; 7.0 does not). Local is Redis's islocalClient: the peer
// is exactly 127.0.0.1 or ::1 (not the rest of 127/8).
func (s *Server) protectedModeRefuses(c net.Conn) bool {
	if !s.cfg.Bool("protected-mode") || !s.acl.Default().State().NoPass() {
		return false
	}
	ta, ok := c.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return false // not TCP (a unix socket is local)
	}
	return !ta.IP.Equal(net.IPv4(127, 0, 0, 1)) && !ta.IP.Equal(net.IPv6loopback)
}

// cron is the server's periodic work, hz times a second (server.c serverCron).
func (s *Server) cron() {
	defer s.wg.Done()
	hz := s.cronFrequency()
	s.cronHz.Store(hz)
	t := time.NewTicker(time.Second / time.Duration(hz))
	defer t.Stop()
	// The heap trimmer looks more often than hz so that memory comes back
	// soon after a burst of writes ends; while idle (once a second) it
	// looks on the cron's own wake-ups instead of its timer's.
	trimTicker := time.NewTicker(trimCheckInterval)
	defer trimTicker.Stop()
	trim := newHeapTrimmer()
	var trimChecked time.Time
	trimOnCron := false
	if !s.trimHeap {
		trimTicker.Stop()
	}
	trimTick := func(now time.Time) {
		trimChecked = now
		if trim.tick(now, uint64(s.stats.readBatches.Load()), s.backgroundWorkPending()) {
			s.log.Debug("idle: returned free heap memory to the OS")
		}
		if next := trim.interval(); next >= trimIdleInterval {
			trimTicker.Stop()
			trimOnCron = true
		} else {
			trimTicker.Reset(next)
			trimOnCron = false
		}
	}
	var busTicked time.Time
	for {
		select {
		case <-s.stopCron:
			return
		case now := <-trimTicker.C:
			trimTick(now)
			continue
		case <-t.C:
		}
		if now := time.Now(); trimOnCron && now.Sub(trimChecked) >= trimIdleInterval-time.Second/time.Duration(2*hz) {
			trimTick(now)
		}
		// The cluster cron runs every 100 ms from here (Redis's
		// run_with_period(100) in serverCron), even while DEBUG
		// PAUSE-CRON holds the rest: one wake-up for both crons. With hz
		// below 10 the bus's own timer fills in between.
		if s.cluster != nil {
			if now := time.Now(); now.Sub(busTicked) >= clusterCronPeriod-time.Second/time.Duration(2*hz) {
				busTicked = now
				s.cluster.CronTick()
			}
		}
		// The AOF's and replication's periodic work, on this wake-up too
		// (node/cron_follower.go), also while the cron is paused.
		s.crons.due(time.Now(), time.Second/time.Duration(hz))
		// hz and dynamic-hz apply from the next tick on, as in Redis.
		if next := s.cronFrequency(); next != hz {
			hz = next
			s.cronHz.Store(hz)
			t.Reset(time.Second / time.Duration(hz))
		}
		if s.cronPaused.Load() {
			continue // DEBUG PAUSE-CRON 1
		}
		for _, l := range s.loops {
			l.checkStuck(time.Now()) // node/evloop.go
		}
		s.ks.Tick()
		s.sampleOps()
		s.outputCron(time.Now())
		s.evictClients(nil)    // beforeSleep's evictClients, after the cron's accounting (node/client_evict.go)
		s.sampleMemoryCron()   // then keys, if still over maxmemory (node/maxmemory.go)
		s.shutdownCron()       // a signal's shutdown (node/persistence.go)
		s.failoverCron()       // FAILOVER (node/failover_standalone.go)
		s.saveCron(time.Now()) // node/persistence.go
		if s.activeExpire.Load() {
			// Redis's slow cycle may use 25% of each cron period.
			start := time.Now()
			s.ks.ActiveExpireCycle(time.Second / time.Duration(hz) / 4)
			s.ks.ExpireReplicaKeys(time.Millisecond) // a writable replica's own keys (store/replica_expire.go)
			s.latency.observe(latencyEventExpireCycle, time.Since(start))
		}
		s.trackingLimit()     // tracking-table-max-keys (node/tracking.go)
		s.trackingBroadcast() // BCAST keys the keyspace changed by itself
	}
}

// clusterCronPeriod is how often the cron runs the cluster bus's cron.
const clusterCronPeriod = 100 * time.Millisecond

// maxClientsPerCronTick is Redis's MAX_CLIENTS_PER_CLOCK_TICK; maxCronHz is
// CONFIG_MAX_HZ.
const (
	maxClientsPerCronTick = 200
	maxCronHz             = 500
)

// cronFrequency is what serverCron sets server.hz to on every run: the
// configured hz (already bounded to 1..500), doubled while dynamic-hz is on
// and there are more than 200 clients per tick.
func (s *Server) cronFrequency() int64 {
	clients := int64(0)
	if s.cfg.Bool("dynamic-hz") {
		s.mu.Lock()
		clients = int64(len(s.clients))
		s.mu.Unlock()
	}
	return dynamicHz(s.cfg.Hz(), clients)
}

func dynamicHz(hz, clients int64) int64 {
	hz = max(hz, 1)
	for clients/hz > maxClientsPerCronTick {
		hz *= 2
		if hz > maxCronHz {
			return maxCronHz
		}
	}
	return hz
}

// Shutdown stops listening, disconnects every client and stops the cron. It
// is idempotent.
func (s *Server) Shutdown() {
	s.stopOnce.Do(func() {
		s.stopServing() // node/persistence.go
		close(s.stopCron)
		s.migrateConns.CloseAll()
		s.wg.Wait()
		if s.migrations != nil {
			s.migrations.Close()
		}
		if s.cluster != nil {
			_ = s.cluster.Stop()
		}
		close(s.done)
	})
}

// Clients returns a snapshot of the connected clients, ordered by id.
func (s *Server) Clients() []*Client {
	s.mu.Lock()
	out := make([]*Client, 0, len(s.clients))
	for _, c := range s.clients {
		out = append(out, c)
	}
	s.mu.Unlock()
	sortClients(out)
	return out
}

func sortClients(cs []*Client) {
	slices.SortFunc(cs, func(a, b *Client) int { return cmp.Compare(a.id, b.id) })
}
