package node

import (
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/replication"
	"go.uber.org/zap"
)

// The replication commands: PSYNC, SYNC, REPLCONF (master side), REPLICAOF
// and SLAVEOF (replica side), WAIT, ROLE, and INFO replication.

func replicationHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"psync":     cmdPsync,
		"sync":      cmdSync,
		"replconf":  cmdReplconf,
		"replicaof": cmdReplicaof,
		"slaveof":   cmdReplicaof,
		"wait":      cmdWait,
		"role":      cmdRole,
	}
}

// PSYNC replid offset
func cmdPsync(c *Client, args [][]byte) { c.startSync(args, false) }

// SYNC
func cmdSync(c *Client, args [][]byte) { c.startSync(args, true) }

// startSync turns the connection into a replica link (syncCommand).
func (c *Client) startSync(args [][]byte, oldSync bool) {
	if c.repl != nil && c.repl.link != nil {
		return // already a replica: ignored, as Redis does
	}
	r := c.srv.repl
	if !oldSync && len(args) > 3 && command.ArgIs(args[3], "failover") && !c.acceptFailoverRequest(args[1]) {
		return // node/failover_standalone.go
	}
	if c.srv.failover.current() != failoverNone {
		c.Error("NOMASTERLINK Can't SYNC while failing over")
		return
	}
	if r.proxy.Load() && !r.rep.Up() {
		c.Error("NOMASTERLINK Can't SYNC while not connected with my master")
		return
	}
	if c.multi != nil || c.inExec {
		c.Error("ERR Replica can't be used inside MULTI")
		return
	}
	if c.srv.dataLost.Load() {
		c.Error(msgDataLostSync) // node/datalost.go
		return
	}
	if c.repl == nil {
		c.repl = &clientRepl{}
	}
	if c.repl.filter != 0 && !c.repl.eof {
		// A filtered RDB is only sent over the socket (Redis).
		c.Error("ERR Filtered replica requires EOF capability")
		return
	}
	req := replication.PsyncRequest{ReplID: "?", From: -1, Sync: oldSync, Psync2: c.repl.psync2,
		IP: c.repl.ip, Port: c.repl.port, ID: c.id, RDBOnly: c.repl.rdbOnly}
	if req.IP == "" {
		if ta, ok := c.guard.Conn.RemoteAddr().(*net.TCPAddr); ok {
			req.IP = ta.IP.String()
		}
	}
	name := replicaName(req.IP, req.Port)
	c.srv.log.Info("Replica " + name + " asks for synchronization")
	if !oldSync {
		off, ok := command.ParseInt64(args[2])
		if !ok {
			c.srv.log.Warn("Replica " + name + " asks for synchronization but with a wrong offset")
			c.ErrNotInteger()
			return
		}
		req.ReplID, req.From = string(args[1]), off
	}
	// Replies to earlier pipelined commands go first; from now on the link
	// owns the socket's writes and nothing else is sent to a replica.
	_ = c.flushReplies()
	c.replyMode = replyOff
	r.ensureFeed()
	link, full := r.m.Attach(c.guard, req)
	c.repl.link = link
	c.replKind.Store(int32(clientReplica))
	if !full {
		r.syncPartialOK.Add(1)
		c.srv.log.Info("Partial resynchronization request accepted", zap.String("replica", name))
		return
	}
	r.syncFull.Add(1)
	if req.ReplID != "?" && !oldSync {
		r.syncPartialErr.Add(1)
	}
	r.syncer.enqueue(&syncRequest{link: link, name: name, eof: c.repl.eof, oldSync: oldSync,
		filter: c.repl.filter, since: time.Now()})
}

// replicaGeneratedReply drops a replica whose command on the replication
// link produced a reply, as Redis's _addReplyToBufferOrList: the link
// carries no replies (they would land in the replica's stream). An error
// reply is logged first, as afterErrorReply does.
func (c *Client) replicaGeneratedReply() {
	name := "<unknown>"
	if spec := c.lastCmd.Load(); spec != nil {
		name = spec.FullName()
	}
	log := c.srv.log
	if c.Out[0] == '-' {
		msg := strings.TrimRight(string(c.Out[1:min(len(c.Out), 4096)]), "\r\n")
		log.Warn("== CRITICAL == This master is sending an error to its replica: '" + msg +
			"' after processing the command '" + name + "'")
	}
	log.Warn("Replica generated a reply to command '" + name + "', disconnecting it: " + c.InfoLine())
	c.Out = c.Out[:0]
	c.closeConn()
}

// detachReplica runs when a replica's connection closes.
func (c *Client) detachReplica() {
	if c.repl != nil && c.repl.link != nil {
		c.srv.repl.m.Detach(c.repl.link)
		// min-replicas-to-write must not count it until the next cron tick
		// (Redis refreshes the good-replica count when a replica leaves).
		c.srv.repl.refreshGoodReplicas()
	}
}

// REPLCONF option value [option value ...]
func cmdReplconf(c *Client, args [][]byte) {
	if len(args)%2 == 0 {
		c.ErrSyntax()
		return
	}
	if c.repl == nil {
		c.repl = &clientRepl{}
	}
	for j := 1; j < len(args); j += 2 {
		val := args[j+1]
		switch lowerASCII(args[j]) {
		case "listening-port":
			p, ok := command.ParseInt64(val)
			if !ok {
				c.ErrNotInteger()
				return
			}
			c.repl.port = int(p)
			if c.repl.link != nil {
				c.repl.link.SetAddr("", int(p))
			}
		case "ip-address":
			if len(val) >= 46 {
				c.Error("ERR REPLCONF ip-address provided by replica instance is too long: " + strconv.Itoa(len(val)) + " bytes")
				return
			}
			c.repl.ip = string(val)
		case "capa":
			// Capabilities this master does not know are ignored.
			if command.ArgIs(val, "psync2") {
				c.repl.psync2 = true
			} else if command.ArgIs(val, "eof") {
				c.repl.eof = true
			}
		case "ack":
			// Only a replica acknowledges, and it gets no reply.
			if c.repl.link != nil {
				if off, ok := command.ParseInt64(val); ok {
					c.repl.link.Ack(off)
				}
			}
			return
		case "getack":
			// This node's master asks; the link answers it
			// (replication_replica.go). No reply.
			return
		case "rdb-only":
			n, ok := command.ParseInt64(val)
			if !ok {
				c.ErrNotInteger()
				return
			}
			if n < 0 || n > 1 {
				c.Error("ERR value is out of range, value must between 0 and 1")
				return
			}
			c.repl.rdbOnly = n == 1
		case "rdb-filter-only":
			words, ok := config.SplitArgs(string(val))
			if !ok {
				c.Error("ERR Missing rdb-filter-only values")
				return
			}
			// Everything is left out but what the filters name.
			filter := filterExcludeData | filterExcludeFunctions
			for _, w := range words {
				if !strings.EqualFold(w, "functions") {
					c.Error("ERR Unsupported rdb-filter-only option: " + w)
					return
				}
				filter &^= filterExcludeFunctions
			}
			c.repl.filter = filter
		default:
			c.Error("ERR Unrecognized REPLCONF option: " + string(args[j]))
			return
		}
	}
	c.OK()
}

// REPLICAOF host port | NO ONE
func cmdReplicaof(c *Client, args [][]byte) {
	if c.srv.cluster != nil {
		c.Error("ERR REPLICAOF not allowed in cluster mode.")
		return
	}
	r := c.srv.repl
	if c.srv.failover.current() != failoverNone {
		c.Error("ERR REPLICAOF not allowed while failing over.")
		return
	}
	if command.ArgIs(args[1], "no") && command.ArgIs(args[2], "one") {
		if host, _ := r.rep.Master(); host != "" {
			r.unfollowBy(c)
			c.srv.cfg.RecordReplicaOf("", 0)
			c.srv.log.Info("MASTER MODE enabled (user request)")
		}
		c.OK()
		return
	}
	if c.repl != nil && c.repl.link != nil {
		c.Error("ERR Command is not valid when client is a replica.")
		return
	}
	port, ok := command.ParseInt64(args[2])
	if !ok || port < 0 || port > 65535 {
		c.Error("ERR Invalid master port")
		return
	}
	host := string(args[1])
	if h, p := r.rep.Master(); h == host && p == int(port) {
		c.Status("OK Already connected to specified master")
		return
	}
	if !c.tx.exclusive {
		// follow closes the execution gate after waiting for another role
		// change: this command, which holds no slot lock, must not count
		// as running meanwhile, or two REPLICAOFs would wait for each other.
		c.leaveRun()
		defer c.enterRunWaiting()
	}
	r.follow(host, int(port), "", c)
	c.srv.cfg.RecordReplicaOf(host, int(port))
	c.OK()
}

// WAIT numreplicas timeout
func cmdWait(c *Client, args [][]byte) {
	r := c.srv.repl
	if r.proxy.Load() {
		c.Error("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.")
		return
	}
	n, ok := command.ParseInt64(args[1])
	if !ok {
		c.ErrNotInteger()
		return
	}
	ms, ok := c.ParseMillisTimeout(args[2])
	if !ok {
		return
	}
	target := r.m.Offset()
	acked := r.m.Acked(target)
	if int64(acked) >= n || c.inExec {
		c.Int(int64(acked))
		return
	}
	r.m.FeedCommand("REPLCONF", "GETACK", "*")
	// The client blocks like BLPOP (node/blocking.go): parked outside the
	// execution gate, unblocked by CLIENT UNBLOCK, forgotten when it
	// disconnects; a timeout or an unblock answers the acks counted then.
	onTimeout := func(c *command.Ctx) { c.Int(int64(r.m.Acked(target))) }
	c.blockOn(blockSpec{Timeout: time.Duration(ms) * time.Millisecond, OnTimeout: onTimeout})
	if w := c.bs.pending; w != nil {
		go r.awaitAcks(w, target, n)
	}
}

// awaitAcks serves a client blocked in WAIT once n replicas acknowledged
// offset target, unless its wait ended otherwise first.
func (r *replState) awaitAcks(w *blockWaiter, target, n int64) {
	reg := w.c.blockReg()
	poll := time.NewTicker(100 * time.Millisecond) // notices a wait ended by timeout or disconnect
	defer poll.Stop()
	for {
		changed := r.m.AckChanged()
		acked := int64(r.m.Acked(target))
		reg.mu.Lock()
		if w.done {
			reg.mu.Unlock()
			return
		}
		if acked >= n {
			w.reply = strconv.AppendInt(append(w.reply[:0], ':'), acked, 10)
			w.reply = append(w.reply, '\r', '\n')
			reg.finishLocked(w, outcomeServed)
			reg.mu.Unlock()
			return
		}
		reg.mu.Unlock()
		select {
		case <-changed:
		case <-poll.C:
		case <-r.s.done:
			return
		}
	}
}

// ROLE
func cmdRole(c *Client, args [][]byte) {
	r := c.srv.repl
	if host, port := r.rep.Master(); host != "" {
		c.Array(5)
		c.BulkString("slave")
		c.BulkString(host)
		c.Int(int64(port))
		c.BulkString(r.rep.StateName())
		off := int64(-1)
		if r.rep.Up() {
			off = r.m.Offset()
		}
		c.Int(off)
		return
	}
	in := r.m.Snapshot()
	c.Array(3)
	c.BulkString("master")
	c.Int(in.Offset)
	n := 0
	for _, l := range in.Links {
		if l.Online {
			n++
		}
	}
	c.Array(n)
	for _, l := range in.Links {
		if !l.Online {
			continue
		}
		c.Array(3)
		c.BulkString(l.IP)
		c.BulkString(strconv.Itoa(l.Port))
		c.BulkString(strconv.FormatInt(l.Offset, 10))
	}
}

// asyncLoading is INFO's async_loading: with repl-diskless-load swapdb,
// Redis's replica loads a full sync into a temporary database while it
// serves the old one, and discards it if the transfer fails. Shoal's
// replica reads the whole transfer before it loads anything (the old data
// is served and kept if the transfer fails, whatever the setting), so the
// transfer is that phase here; the load that follows is short and shows as
// loading.
func (r *replState) asyncLoading() bool {
	return r.rep != nil && r.rep.Receiving() &&
		r.s.cfg.Int("repl-diskless-load") == config.ReplDisklessLoadSwapDB
}

// infoReplication writes INFO's Replication section, field for field as
// Redis 7.0 does.
func (s *Server) infoReplication(w *infoWriter) {
	r := s.repl
	in := r.m.Snapshot()
	w.section("Replication")
	host, port := r.rep.Master()
	if host == "" {
		w.str("role", "master")
	} else {
		w.str("role", "slave")
		w.str("master_host", host)
		w.int("master_port", int64(port))
		up := r.rep.Up()
		if up {
			w.str("master_link_status", "up")
			w.int("master_last_io_seconds_ago", time.Now().Unix()-r.rep.LastIO())
		} else {
			w.str("master_link_status", "down")
			w.int("master_last_io_seconds_ago", -1)
		}
		syncing := int64(0)
		if r.rep.Syncing() {
			syncing = 1
		}
		w.int("master_sync_in_progress", syncing)
		w.int("slave_read_repl_offset", in.Offset)
		w.int("slave_repl_offset", in.Offset)
		if !up {
			since := int64(-1)
			if d := r.rep.DownSince(); d > 0 {
				since = time.Now().Unix() - d
			}
			w.int("master_link_down_since_seconds", since)
		}
		w.int("slave_priority", s.cfg.Int("replica-priority"))
		w.int("slave_read_only", boolInt(s.cfg.Bool("replica-read-only")))
		w.int("replica_announced", boolInt(s.cfg.Bool("replica-announced")))
	}
	w.int("connected_slaves", int64(len(in.Links)))
	if s.cfg.Int("min-replicas-to-write") > 0 && s.cfg.Int("min-replicas-max-lag") > 0 {
		w.int("min_slaves_good_slaves", r.goodReplicas.Load())
	}
	for i, l := range in.Links {
		lag := int64(0)
		if l.Online {
			lag = l.LagSec
		}
		w.str("slave"+strconv.Itoa(i), "ip="+l.IP+",port="+strconv.Itoa(l.Port)+",state="+l.State+
			",offset="+strconv.FormatInt(l.Offset, 10)+",lag="+strconv.FormatInt(lag, 10))
	}
	w.str("master_failover_state", s.failover.current().String())
	w.str("master_replid", in.ReplID)
	w.str("master_replid2", in.ReplID2)
	w.int("master_repl_offset", in.Offset)
	w.int("second_repl_offset", in.SecondOffset)
	w.int("repl_backlog_active", boolInt(in.BacklogActive))
	w.int("repl_backlog_size", int64(in.BacklogSize))
	if in.BacklogActive {
		w.int("repl_backlog_first_byte_offset", in.BacklogFirst)
		w.int("repl_backlog_histlen", int64(in.BacklogHistlen))
	} else {
		w.int("repl_backlog_first_byte_offset", 0)
		w.int("repl_backlog_histlen", 0)
	}
}
