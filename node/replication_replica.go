package node

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/rdb"
	"github.com/shoal-db/shoal/replication"
	"go.uber.org/zap"
)

// The replica side. replication.Replica owns the link to the master (the
// handshake, the full sync's payload, the stream, the offsets and the
// forwarding to this node's sub-replicas); this file is the node's half:
// the role change (follow, unfollow) and replicaFSM, which applies what the
// stream carries to the keyspace and runs its commands through the command
// table as the master-link client (routing and READONLY skipped).

// follow makes this node a replica of host:port (REPLICAOF, or the cluster
// view naming our master). The data stays until the master's full sync
// replaces it; a partial resync keeps it. caller is the client whose
// command asks for it (nil for the cluster bus and start-up).
func (r *replState) follow(host string, port int, nodeID string, caller *Client) {
	r.roleMu.Lock()
	defer r.roleMu.Unlock()
	if holdsGate(caller) {
		// REPLICAOF inside an exclusive EXEC or a script: the link's
		// goroutine may be waiting for the gate this command holds, so it
		// is told to stop and not waited for; it runs nothing more.
		r.rep.StopNoWait()
	} else {
		r.rep.Stop()
	}
	// Sub-replicas stay, as in Redis's replicationSetMaster: they are
	// dropped when the history changes (+CONTINUE with another ID, or a
	// full sync's RDB about to load), else they continue with us.
	// The role changes with every other client stopped (Redis's single
	// thread): no write admitted as a master's runs once this node is a
	// replica, and no client blocked as a master's stays blocked. (The
	// link is stopped first: its goroutine may be waiting for the gate.)
	gate := r.s.bindClient(&Client{srv: r.s})
	if holdsGate(caller) {
		gate = caller // REPLICAOF inside an exclusive EXEC: the gate is ours
	}
	release := gate.closeGate()
	r.s.ks.SetReplicaMode(true)
	r.proxy.Store(true)
	r.updateGuards()
	_ = r.s.applyOOMScore() // the replica's oom-score-adj value (node/oomscore.go)
	r.roleGen.Add(1)        // commands that passed the guards before this judge again
	if n := r.s.blocking().unblockAllRoleChanged(); n > 0 {
		r.s.log.Info("Unblocked blocked clients: this node became a replica", zap.Int("clients", n))
	}
	release()
	r.rep.Start(host, port, nodeID)
}

// unfollow makes this node a master again: the data stays, the replication
// ID shifts to ID2 (PSYNC2), so former siblings can continue from here.
func (r *replState) unfollow() { r.unfollowBy(nil) }

// unfollowBy is unfollow asked by caller's command (nil: not a client's).
// A caller holding the execution gate (REPLICAOF NO ONE inside EXEC) does
// not wait for the link's goroutine, which may be waiting for that gate:
// the command it waits with is dropped once the gate opens, as Redis
// discards what its master client had not run yet.
func (r *replState) unfollowBy(caller *Client) {
	r.roleMu.Lock()
	defer r.roleMu.Unlock()
	r.rep.Forget(!holdsGate(caller))
	// The feed is registered and the ID shifted before writes are
	// accepted (proxy off): the backlog continues with this node's own
	// writes at once, and former siblings continue from it (+CONTINUE).
	r.ensureFeed()
	r.m.ShiftID()
	r.s.ks.SetReplicaMode(false)
	r.proxy.Store(false)
	r.updateGuards()
	_ = r.s.applyOOMScore() // the master's oom-score-adj value (node/oomscore.go)
}

// replicaFSM is what the replica applies its master's stream to
// (replication.FSM).
type replicaFSM struct{ r *replState }

// LinkConfig is the configuration a connection to the master uses.
func (f replicaFSM) LinkConfig() replication.LinkConfig {
	cfg := f.r.s.cfg
	port := cfg.Int("port")
	tlsRepl := cfg.Bool("tls-replication")
	if p := cfg.Int("tls-port"); tlsRepl && p > 0 {
		port = p // the master's replica connections arrive on tls-port
	}
	if p := cfg.Int("replica-announce-port"); p > 0 {
		port = p
	}
	var tlsCfg *tls.Config
	if tlsRepl {
		// node/tls.go; configured when tls-replication is yes. Never
		// plaintext instead: an empty config fails the handshake.
		if tlsCfg = f.r.s.TLSClientConfig(); tlsCfg == nil {
			tlsCfg = &tls.Config{}
		}
	}
	return replication.LinkConfig{
		TLS:           tlsCfg,
		Timeout:       time.Duration(cfg.Int("repl-timeout")) * time.Second,
		NoDelay:       !cfg.Bool("repl-disable-tcp-nodelay"),
		MaxBulkLen:    cfg.Int("proto-max-bulk-len"),
		AuthUser:      cfg.String("masteruser"),
		AuthPass:      cfg.String("masterauth"),
		ListeningPort: port,
		AnnounceIP:    cfg.String("replica-announce-ip"),
		SourceAddr:    cfg.String("bind-source-addr"),
	}
}

// MasterAddr is the master's current address from the cluster bus.
func (f replicaFSM) MasterAddr(nodeID string) (string, bool) {
	if c := f.r.s.cluster; c != nil {
		if n, ok := c.Node(nodeID); ok && n.IP != "" && n.Port > 0 {
			return net.JoinHostPort(n.IP, strconv.Itoa(n.Port)), true
		}
	}
	return "", false
}

func (f replicaFSM) NumDBs() int { return f.r.s.ks.NumDBs() }

// LoadPayload flushes the keyspace and loads a full sync's RDB file, and
// replaces the function libraries with the file's (as Redis's replica
// does), in the loading state: commands without the loading flag are
// refused -LOADING meanwhile (node/loading.go), so no client sees the data
// half loaded. The flush and the libraries' change happen with the
// execution gate closed; a command admitted before the load is judged
// again (roleGen). Keys logically expired are kept: their master's DEL
// follows in the stream. A failed load empties the data again (Redis's
// emptyData after a failed load).
func (f replicaFSM) LoadPayload(data []byte, aux func(name, value []byte), stop <-chan struct{}) (keys, libs int, err error) {
	s := f.r.s
	defer s.quietLoad()() // no "new" events (node/notify.go)
	gate := s.bindClient(&Client{srv: s})
	release := gate.closeGate()
	if closed(stop) {
		// The link stopped while the gate was held (REPLICAOF inside
		// EXEC): this node follows no one, or someone else, now.
		release()
		return 0, 0, replication.ErrLinkStopped
	}
	stopLoading := s.startLoading(int64(len(data)))
	f.r.roleGen.Add(1)
	s.ks.FlushAll()
	release()
	var codes [][]byte
	err = rdb.LoadFileWith(data, command.RDBLimits(s.cfg), rdb.FileHandlers{
		Key: func(k *rdb.LoadedKey) error {
			if err := s.putLoadedKey(k, false); err != nil {
				return err
			}
			keys++
			s.loadedKey(k.Offset)
			return nil
		},
		Function: func(code []byte) error {
			codes = append(codes, code)
			return nil
		},
		Aux: func(name, value []byte) error {
			aux(name, value)
			return nil
		},
	})
	release = gate.closeGate()
	defer func() {
		stopLoading() // with the gate still closed: no -LOADING after the load
		release()
	}()
	if err == nil {
		err = s.installFunctionsGated(codes)
	}
	if err != nil {
		s.ks.FlushAll()
		_ = s.installFunctionsGated(nil)
		return 0, 0, err
	}
	s.aof.restartAfterSync()
	return keys, len(codes), nil
}

// OpenStream registers the master-link client that runs the stream's
// commands, in database db.
func (f replicaFSM) OpenStream(conn net.Conn, db int, stop <-chan struct{}) replication.Stream {
	s := f.r.s
	c := s.bindClient(&Client{srv: s, guard: s.newGuard(conn), id: s.nextClientID.Add(1),
		created: time.Now(), addr: redisAddr(conn.RemoteAddr()), laddr: redisAddr(conn.LocalAddr()),
		authenticated: true, repl: &clientRepl{master: true, linkStop: stop}})
	c.Proto = 2
	c.replKind.Store(int32(clientMaster))
	c.multiLen.Store(-1)
	c.dbIndex.Store(int32(db))
	c.lastInteraction.Store(time.Now().UnixMilli())
	s.mu.Lock()
	s.clients[c.id] = c
	s.mu.Unlock()
	return masterStream{r: f.r, c: c}
}

// masterStream runs the master's commands as the master-link client
// (replication.Stream).
type masterStream struct {
	r *replState
	c *Client
}

// Apply runs one command of the stream (the Replica holds its apply lock);
// false when it was dropped because the link stopped while it waited for
// the execution gate (enterExecution).
func (m masterStream) Apply(args [][]byte) bool {
	r, c := m.r, m.c
	c.Out = c.Out[:0]
	c.repl.dropped = false
	if c.multi != nil {
		// Queued until EXEC: the reader reuses its buffer for the next
		// command.
		c.run(cloneArgs(args))
	} else {
		c.run(args)
	}
	if c.repl.dropped {
		return false
	}
	if len(c.Out) > 0 && c.Out[0] == '-' {
		r.masterCommandFailed(c, args[0])
	}
	c.Out = c.Out[:0]
	return true
}

// holdsGate reports whether c's command holds the execution gate (an
// exclusive EXEC or a script): what waits for the gate cannot be waited for.
func holdsGate(c *Client) bool { return c != nil && c.tx.exclusive }

// closed reports whether ch is closed (nil: never).
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// masterLinkStopped reports, for the master-link client, that its link was
// stopped while its command waited for the gate: the command must not run.
func (c *Client) masterLinkStopped() bool {
	return c.repl != nil && c.repl.linkStop != nil && closed(c.repl.linkStop)
}

func (m masterStream) InTransaction() bool { return m.c.multi != nil }
func (m masterStream) DB() int             { return int(m.c.dbIndex.Load()) }
func (m masterStream) BeginBatch()         { m.c.startBatch() } // node/dispatch_stats.go
func (m masterStream) EndBatch()           { m.c.flushStats() }

// Close unregisters the master-link client.
func (m masterStream) Close() {
	s := m.r.s
	s.mu.Lock()
	delete(s.clients, m.c.id)
	s.mu.Unlock()
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
		cmd = spec.FullName()
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

// installFunctionsGated makes codes the function libraries, all or
// nothing. The caller holds the execution gate (no script runs meanwhile).
func (s *Server) installFunctionsGated(codes [][]byte) error {
	fe := &s.tx.functions
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
