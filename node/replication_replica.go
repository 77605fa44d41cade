package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/resp"

	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/rdb"
	"github.com/shoal-db/shoal/replication"
	"github.com/shoal-db/shoal/slots"
	"github.com/shoal-db/shoal/store"
	"go.uber.org/zap"
)

// The replica side: one goroutine per followed master connects, hands
// shakes (PING, AUTH, REPLCONF, PSYNC with the cached ID and offset), and
// applies the stream through the command table as the master-link client,
// reconnecting with a partial resync after a drop. Its own sub-replicas get
// the master's bytes unchanged (chained replication).

// masterLink is one followed master.
type masterLink struct {
	host   string
	port   int
	nodeID string // cluster mode: the master's node ID (its address may change)

	stop chan struct{}
	done chan struct{}

	mu     sync.Mutex // guards conn and writes to it
	conn   net.Conn
	client *Client
	state  string // connect, connecting, handshake, sync, connected
}

// master returns the followed master's address ("" when a master).
func (r *replState) master() (string, int) {
	r.linkMu.Lock()
	defer r.linkMu.Unlock()
	if r.link == nil {
		return "", 0
	}
	return r.link.host, r.link.port
}

// linkStateName is ROLE's replication state of a replica.
func (r *replState) linkStateName() string {
	r.linkMu.Lock()
	defer r.linkMu.Unlock()
	if r.link == nil {
		return "none"
	}
	r.link.mu.Lock()
	defer r.link.mu.Unlock()
	return r.link.state
}

// follow makes this node a replica of host:port (REPLICAOF, or the cluster
// view naming our master). The data stays until the master's full sync
// replaces it; a partial resync keeps it. caller is the client whose
// command asks for it (nil for the cluster bus and start-up).
func (r *replState) follow(host string, port int, nodeID string, caller *Client) {
	r.roleMu.Lock()
	defer r.roleMu.Unlock()
	r.stopLink()
	// Sub-replicas reconnect to learn of the change (they may continue).
	r.m.DropAll()
	// The role changes with every other client stopped (Redis's single
	// thread): no write admitted as a master's runs once this node is a
	// replica, and no client blocked as a master's stays blocked. (The
	// link is stopped first: its goroutine may be waiting for the gate.)
	gate := r.s.bindClient(&Client{srv: r.s})
	if caller != nil && caller.tx.exclusive {
		gate = caller // REPLICAOF inside an exclusive EXEC: the gate is ours
	}
	release := gate.closeGate()
	r.s.ks.SetReplicaMode(true)
	r.proxy.Store(true)
	r.updateGuards()
	r.roleGen.Add(1) // commands that passed the guards before this judge again
	if n := r.s.blocking().unblockAllRoleChanged(); n > 0 {
		r.s.log.Info("Unblocked blocked clients: this node became a replica", zap.Int("clients", n))
	}
	release()
	r.up.Store(false)
	r.downAt.Store(0)
	ml := &masterLink{host: host, port: port, nodeID: nodeID, stop: make(chan struct{}), done: make(chan struct{}), state: "connect"}
	r.linkMu.Lock()
	r.link = ml
	r.linkMu.Unlock()
	r.s.log.Info("Connecting to MASTER", zap.String("addr", net.JoinHostPort(host, strconv.Itoa(port))))
	go r.runLink(ml)
}

// unfollow makes this node a master again: the data stays, the replication
// ID shifts to ID2 (PSYNC2), so former siblings can continue from here.
func (r *replState) unfollow() {
	r.roleMu.Lock()
	defer r.roleMu.Unlock()
	r.stopLink()
	r.linkMu.Lock()
	r.link = nil
	r.linkMu.Unlock()
	// The feed is registered and the ID shifted before writes are
	// accepted (proxy off): the backlog continues with this node's own
	// writes at once, and former siblings continue from it (+CONTINUE).
	r.ensureFeed()
	r.m.ShiftID()
	r.up.Store(false)
	r.sync.Store(false)
	r.s.ks.SetReplicaMode(false)
	r.proxy.Store(false)
	r.updateGuards()
}

// stopLink ends the link goroutine, if any, and waits for it.
func (r *replState) stopLink() {
	r.linkMu.Lock()
	ml := r.link
	r.linkMu.Unlock()
	if ml == nil {
		return
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
	<-ml.done
}

// runLink connects and replicates until stopped, retrying every second.
func (r *replState) runLink(ml *masterLink) {
	defer close(ml.done)
	for {
		err := r.replicateOnce(ml)
		if r.up.Swap(false) {
			r.downAt.Store(time.Now().Unix())
		}
		r.sync.Store(false)
		ml.mu.Lock()
		ml.state = "connect"
		ml.mu.Unlock()
		select {
		case <-ml.stop:
			return
		default:
		}
		if err != nil {
			r.s.log.Info("Replication link to MASTER lost or failed", zap.Error(err))
		}
		select {
		case <-ml.stop:
			return
		case <-time.After(time.Second):
		}
	}
}

// masterAddr is where to connect: in cluster mode the master's current
// address from the bus.
func (r *replState) masterAddr(ml *masterLink) string {
	if ml.nodeID != "" && r.s.cluster != nil {
		if n, ok := r.s.cluster.Node(ml.nodeID); ok && n.IP != "" && n.Port > 0 {
			return net.JoinHostPort(n.IP, strconv.Itoa(n.Port))
		}
	}
	return net.JoinHostPort(ml.host, strconv.Itoa(ml.port))
}

var errStopped = errors.New("replication link stopped")

// replicateOnce is one connection's life: handshake, sync, stream.
func (r *replState) replicateOnce(ml *masterLink) error {
	cfg := r.s.cfg
	timeout := time.Duration(cfg.Int("repl-timeout")) * time.Second
	ml.mu.Lock()
	ml.state = "connecting"
	ml.mu.Unlock()
	// The dial ends early when the link is stopped (REPLICAOF, shutdown).
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	go func() {
		select {
		case <-ml.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", r.masterAddr(ml))
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
	ml.conn = conn
	ml.state = "handshake"
	ml.mu.Unlock()
	defer conn.Close()
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(!cfg.Bool("repl-disable-tcp-nodelay"))
	}
	rd := replication.NewStreamReader(conn, replication.Limits{MaxBulkLen: cfg.Int("proto-max-bulk-len")})
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
	if pass := cfg.String("masterauth"); pass != "" {
		argv := []string{"AUTH", pass}
		if user := cfg.String("masteruser"); user != "" {
			argv = []string{"AUTH", user, pass}
		}
		if reply, err = ask(argv...); err != nil {
			return err
		}
		if reply[0] == '-' {
			return fmt.Errorf("unable to AUTH to MASTER: %s", reply)
		}
	}
	port := cfg.Int("port")
	if p := cfg.Int("replica-announce-port"); p > 0 {
		port = p
	}
	if _, err = ask("REPLCONF", "listening-port", strconv.FormatInt(port, 10)); err != nil {
		return err
	}
	if ip := cfg.String("replica-announce-ip"); ip != "" {
		if _, err = ask("REPLCONF", "ip-address", ip); err != nil {
			return err
		}
	}
	if _, err = ask("REPLCONF", "capa", "psync2"); err != nil {
		return err
	}
	id, off := r.m.IDs()
	reply, err = ask("PSYNC", id, strconv.FormatInt(off+1, 10))
	if err != nil {
		return err
	}
	_ = conn.SetDeadline(time.Time{})
	switch {
	case strings.HasPrefix(reply, "+FULLRESYNC"):
		f := strings.Fields(reply)
		if len(f) != 3 {
			return fmt.Errorf("bad FULLRESYNC reply: %q", reply)
		}
		newOff, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return fmt.Errorf("bad FULLRESYNC reply: %q", reply)
		}
		r.s.log.Info("Full resync from master", zap.String("replid", f[1]), zap.Int64("offset", newOff))
		r.sync.Store(true)
		ml.mu.Lock()
		ml.state = "sync"
		ml.mu.Unlock()
		// A shoal master sends an empty RDB (the data follows as slot
		// images); a redis-server master sends its dataset, loaded here.
		var payload bytes.Buffer
		_ = conn.SetReadDeadline(time.Now().Add(timeout))
		if _, err := rd.ReadPayload(func(p []byte) error {
			_ = conn.SetReadDeadline(time.Now().Add(timeout))
			r.bytesIn.Add(int64(len(p)))
			payload.Write(p)
			return nil
		}); err != nil {
			return err
		}
		r.s.ks.FlushAll()
		pl, err := r.loadSyncPayload(payload.Bytes())
		if err != nil {
			return fmt.Errorf("loading the master's RDB payload: %w", err)
		}
		r.s.log.Info("MASTER <-> REPLICA sync: loaded the RDB payload", zap.Int("keys", pl.keys),
			zap.Int("functions", pl.libs), zap.Int("repl_stream_db", pl.streamDB))
		if !pl.images {
			r.sync.Store(false) // a redis-server master: the payload was the data
		}
		r.m.ResetTo(f[1], newOff, pl.streamDB)
	case strings.HasPrefix(reply, "+CONTINUE"):
		newID := strings.TrimSpace(strings.TrimPrefix(reply, "+CONTINUE"))
		r.m.ContinueWith(newID)
		r.s.log.Info("Successful partial resynchronization with master")
	default:
		return fmt.Errorf("unexpected reply to PSYNC from master: %s", reply)
	}
	return r.streamFromMaster(ml, conn, rd, timeout)
}

// streamFromMaster applies the stream until the link fails or stops.
func (r *replState) streamFromMaster(ml *masterLink, conn net.Conn, rd *replication.StreamReader, timeout time.Duration) error {
	s := r.s
	c := s.bindClient(&Client{srv: s, guard: newRespGuard(conn, &guardLimits{shared: &s.limits}), id: s.nextClientID.Add(1),
		created: time.Now(), addr: redisAddr(conn.RemoteAddr()), laddr: redisAddr(conn.LocalAddr()),
		authenticated: true, repl: &clientRepl{master: true}})
	c.Proto = 2
	c.replKind.Store(int32(clientMaster))
	c.multiLen.Store(-1)
	// The stream goes on in the database it was in at our offset (Redis
	// keeps it in its cached master client, or reads repl-stream-db from
	// the full sync's RDB): a master does not repeat SELECT after a partial
	// resync.
	c.dbIndex.Store(int32(r.m.StreamDB()))
	c.lastInteraction.Store(time.Now().UnixMilli())
	s.mu.Lock()
	s.clients[c.id] = c
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.clients, c.id)
		s.mu.Unlock()
	}()
	ml.mu.Lock()
	ml.client = c
	if !r.sync.Load() {
		ml.state = "connected"
	}
	ml.mu.Unlock()
	r.up.Store(true)
	r.lastIO.Store(time.Now().Unix())
	r.sendAck()
	c.startBatch()
	defer c.flushStats()
	var args [][]byte
	var txRaw []byte // the stream bytes of an open transaction, from its MULTI
	for {
		waited := rd.Buffered() == 0
		if waited {
			c.flushStats() // the batch is over (node/dispatch.go)
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
			c.startBatch() // what one socket read brought is one batch (node/dispatch.go)
		}
		r.bytesIn.Add(int64(len(raw)))
		if command.ArgIs(args[0], imageCommand) {
			if err := r.applyImage(c, args); err != nil {
				return err
			}
			continue
		}
		if len(args) >= 2 && command.ArgIs(args[0], "replconf") && command.ArgIs(args[1], "getack") {
			r.sendAck()
			r.m.FeedRaw(raw, int(c.dbIndex.Load()))
			continue
		}
		r.applyMu.Lock()
		if r.syncs.Load() != nil {
			db := int(c.dbIndex.Load())
			r.m.Locked(func() { r.beforeSyncLocked(db, [][][]byte{args}, true) })
		}
		c.Out = c.Out[:0]
		if c.multi != nil {
			// Queued until EXEC: the reader reuses its buffer for the
			// next command.
			c.run(cloneArgs(args))
		} else {
			c.run(args)
		}
		if len(c.Out) > 0 && c.Out[0] == '-' {
			r.masterCommandFailed(c, args[0])
		}
		c.Out = c.Out[:0]
		// A transaction enters this node's stream (its offset, its
		// backlog, its sub-replicas) once it ran, as one unit, as in
		// Redis: a link lost half-way through it must resume before its
		// MULTI, since the queued commands are discarded with the link.
		switch {
		case c.multi != nil:
			txRaw = append(txRaw, raw...)
		case len(txRaw) > 0:
			txRaw = append(txRaw, raw...)
			r.m.FeedRaw(txRaw, int(c.dbIndex.Load()))
			txRaw = txRaw[:0]
		default:
			r.m.FeedRaw(raw, int(c.dbIndex.Load()))
		}
		r.applyMu.Unlock()
	}
}

// masterCommandFailed acts on an error this replica answered to a command
// of its master's stream (afterErrorReply): the data may have diverged, so
// it is logged as Redis does, counted in unexpected_error_replies, and with
// propagation-error-behavior panic or panic-on-replicas on a read-only
// replica the process stops, as Redis's serverPanic.
func (r *replState) masterCommandFailed(c *Client, name []byte) {
	msg := strings.TrimRight(string(c.Out[1:min(len(c.Out), 4096)]), "\r\n")
	cmd := "<unknown>"
	if spec, _ := r.s.table.lookup([][]byte{name}); spec != nil {
		cmd = spec.fullName
	}
	r.s.log.Warn(fmt.Sprintf("== CRITICAL == This replica is sending an error to its master: '%s' after processing the command '%s'", msg, cmd))
	r.s.stats.unexpectedErrors.Add(1)
	cfg := r.s.cfg
	switch cfg.Int("propagation-error-behavior") {
	case config.PropagationErrPanic, config.PropagationErrPanicOnReplicas:
		if cfg.Bool("replica-read-only") {
			text := fmt.Sprintf("This replica panicked sending an error to its master after processing the command '%s'", cmd)
			r.s.log.Error(text)
			panic(text)
		}
	}
}

// applyImage replaces one slot with its image ("REPLIMAGE db slot payload"),
// or ends the full sync ("REPLIMAGE DONE").
func (r *replState) applyImage(c *Client, args [][]byte) error {
	if len(args) == 2 && command.ArgIs(args[1], "done") {
		r.sync.Store(false)
		r.linkMu.Lock()
		if ml := r.link; ml != nil {
			ml.mu.Lock()
			ml.state = "connected"
			ml.mu.Unlock()
		}
		r.linkMu.Unlock()
		r.s.log.Info("MASTER <-> REPLICA sync: Finished with success")
		return nil
	}
	if len(args) != 4 {
		return replication.ErrProtocol
	}
	dbID, ok1 := command.ParseInt64(args[1])
	slot, ok2 := command.ParseInt64(args[2])
	if !ok1 || !ok2 || dbID < 0 || dbID >= int64(r.s.ks.NumDBs()) || slot < 0 || slot >= store.NumSlots {
		return replication.ErrProtocol
	}
	return r.applySlotImage(int(dbID), uint16(slot), args[3])
}

// sendAck sends REPLCONF ACK <offset> to the master (every second, and on
// GETACK).
func (r *replState) sendAck() {
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

// cloneArgs copies a command's arguments into one new buffer.
func cloneArgs(args [][]byte) [][]byte {
	n := 0
	for _, a := range args {
		n += len(a)
	}
	buf := make([]byte, 0, n)
	out := make([][]byte, len(args))
	for i, a := range args {
		buf = append(buf, a...)
		out[i] = buf[len(buf)-len(a) : len(buf) : len(buf)]
	}
	return out
}

// syncPayload is what a full sync's RDB payload brought.
type syncPayload struct {
	keys, libs int
	streamDB   int  // repl-stream-db: the database the stream continues in
	images     bool // a shoal master: slot images follow in the stream
}

// loadSyncPayload loads a full sync's RDB payload into the (flushed)
// keyspace, each key under its slot's lock, and replaces the function
// libraries with the payload's (as Redis's replica does). A shoal master's
// payload holds no keys (slot images follow) but its libraries and
// repl-stream-db; a redis-server master's holds the data.
func (r *replState) loadSyncPayload(data []byte) (syncPayload, error) {
	ks := r.s.ks
	var pl syncPayload
	var codes [][]byte
	err := rdb.LoadFileWith(data, rdbLimits(r.s.cfg), rdb.FileHandlers{
		Key: func(k *rdb.LoadedKey) error {
			if k.DB < 0 || k.DB >= ks.NumDBs() {
				return fmt.Errorf("database %d out of range", k.DB)
			}
			db := ks.DB(k.DB)
			slot := slots.KeySlot(k.Key)
			db.Lock(slot)
			e := k.Obj.SetIn(db, k.Key)
			if k.ExpireAt != 0 {
				db.SetExpire(k.Key, e, k.ExpireAt)
			}
			db.Unlock(slot)
			pl.keys++
			return nil
		},
		Function: func(code []byte) error {
			codes = append(codes, code)
			return nil
		},
		Aux: func(name, value []byte) error {
			switch string(name) {
			case "repl-stream-db":
				if n, ok := command.ParseInt64(value); ok && n >= 0 && n < int64(ks.NumDBs()) {
					pl.streamDB = int(n)
				}
			case auxSlotImages:
				pl.images = true
			}
			return nil
		},
	})
	if err != nil {
		return pl, err
	}
	if bytes.Equal(data, replication.EmptyRDB()) {
		pl.images = true // a shoal master from before the preamble carried anything
	}
	pl.libs = len(codes)
	return pl, r.s.replaceFunctions(codes)
}

// replaceFunctions makes codes the function libraries, all or nothing,
// with the execution gate closed (no script runs meanwhile).
func (s *Server) replaceFunctions(codes [][]byte) error {
	fe := &s.tx.functions
	release := s.bindClient(&Client{srv: s}).closeGate()
	defer release()
	libs := make([]*functionLib, 0, len(codes))
	for _, code := range codes {
		lib, errMsg := fe.compileLibrary(s, code)
		if errMsg != "" {
			return errors.New(errMsg)
		}
		libs = append(libs, lib)
	}
	if errMsg := fe.install(libs, false, true); errMsg != "" {
		return errors.New(errMsg)
	}
	return nil
}
