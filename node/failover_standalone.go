package node

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-db/shoal/command"
)

// Standalone FAILOVER (Redis 7.0's coordinated failover, replication.c):
// the master pauses writes, waits until a replica (the named one, or any)
// has acknowledged its whole stream, then becomes that replica's replica
// with a PSYNC that carries FAILOVER; the target, seeing its own
// replication ID, turns master first and answers +CONTINUE. With TIMEOUT
// the wait ends: FORCE fails over anyway, else the failover is aborted.
// FAILOVER ABORT, a rejected PSYNC or a timeout make this node a master
// again. INFO replication's master_failover_state shows the state.

type failoverState int32

const (
	failoverNone       failoverState = iota // no-failover
	failoverWaitSync                        // waiting-for-sync
	failoverInProgress                      // failover-in-progress
)

func (st failoverState) String() string {
	switch st {
	case failoverWaitSync:
		return "waiting-for-sync"
	case failoverInProgress:
		return "failover-in-progress"
	}
	return "no-failover"
}

// standaloneFailover is the failover's state; the FAILOVER command and the
// cron change it under mu.
type standaloneFailover struct {
	mu    sync.Mutex
	state atomic.Int32 // failoverState; read without mu by INFO, PSYNC and REPLICAOF
	end   time.Time    // the TIMEOUT's end (zero: none)
	force bool
	host  string // the target ("" until chosen when none was named)
	port  int
	// psync is the target's answer to the PSYNC FAILOVER, from the link's
	// goroutine: 0 none yet, 1 accepted, 2 rejected.
	psync atomic.Int32
}

func (f *standaloneFailover) current() failoverState { return failoverState(f.state.Load()) }

// failoverPauseFor holds writes until the failover ends (Redis pauses
// them for LLONG_MAX ms and unpauses when the failover ends).
const failoverPauseFor = 100 * 365 * 24 * time.Hour

func cmdFailover(c *Client, args [][]byte) {
	s := c.srv
	f := &s.failover
	if s.cfg.Bool("cluster-enabled") {
		c.Error("ERR FAILOVER not allowed in cluster mode. Use CLUSTER FAILOVER command instead.")
		return
	}
	if len(args) == 2 && command.ArgEquals(args[1], "abort") {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.current() == failoverNone {
			c.Error("ERR No failover in progress.")
			return
		}
		s.abortFailoverLocked("Failover manually aborted")
		c.OK()
		return
	}
	var timeoutMs int64
	var host string
	var port int64
	hasHost, force := false, false
	for j := 1; j < len(args); j++ {
		switch {
		case command.ArgEquals(args[j], "timeout") && j+1 < len(args) && timeoutMs == 0:
			ms, ok := command.ParseInt64(args[j+1])
			if !ok {
				c.ErrNotInteger()
				return
			}
			if ms <= 0 {
				c.Error("ERR FAILOVER timeout must be greater than 0")
				return
			}
			timeoutMs = ms
			j++
		case command.ArgEquals(args[j], "to") && j+2 < len(args) && !hasHost:
			p, ok := command.ParseInt64(args[j+2])
			if !ok {
				c.ErrNotInteger()
				return
			}
			host, port, hasHost = string(args[j+1]), p, true
			j += 2
		case command.ArgEquals(args[j], "force") && !force:
			force = true
		default:
			c.ErrSyntax()
			return
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	r := s.repl
	in := r.m.Snapshot()
	switch {
	case f.current() != failoverNone:
		c.Error("ERR FAILOVER already in progress.")
		return
	case r.proxy.Load():
		c.Error("ERR FAILOVER is not valid when server is a replica.")
		return
	case len(in.Links) == 0:
		c.Error("ERR FAILOVER requires connected replicas.")
		return
	case force && (timeoutMs == 0 || !hasHost):
		c.Error("ERR FAILOVER with force option requires both a timeout and target HOST and IP.")
		return
	}
	f.host, f.port = "", 0
	if hasHost {
		found, online := false, false
		for _, l := range in.Links {
			if l.IP == host && int64(l.Port) == port {
				found, online = true, l.Online
				break
			}
		}
		if !found {
			c.Error("ERR FAILOVER target HOST and PORT is not a replica.")
			return
		}
		if !online {
			c.Error("ERR FAILOVER target replica is not online.")
			return
		}
		f.host, f.port = host, int(port)
		s.log.Info("FAILOVER requested to " + host + ":" + strconv.FormatInt(port, 10) + ".")
	} else {
		s.log.Info("FAILOVER requested to any replica.")
	}
	f.end = time.Time{}
	if timeoutMs > 0 {
		f.end = time.Now().Add(time.Duration(timeoutMs) * time.Millisecond)
	}
	f.force = force
	f.psync.Store(0)
	f.state.Store(int32(failoverWaitSync))
	s.pause.Pause(failoverPauseFor, false)
	c.OK()
}

// failoverCron advances a failover (Redis's updateFailoverStatus and the
// PSYNC outcome syncWithMaster reacts to); run by the server's cron.
func (s *Server) failoverCron() {
	f := &s.failover
	if f.current() == failoverNone {
		return
	}
	if host, port, ok := s.failoverStep(); ok {
		s.followFailoverTarget(host, port)
	}
}

// failoverStep decides under f.mu; ok: fail over to host:port now (the
// state is failover-in-progress).
func (s *Server) failoverStep() (host string, port int, ok bool) {
	f := &s.failover
	f.mu.Lock()
	defer f.mu.Unlock()
	switch f.current() {
	case failoverInProgress:
		switch f.psync.Load() {
		case 1:
			s.clearFailoverLocked()
		case 2:
			s.abortFailoverLocked("Failover target rejected psync request")
		}
		return "", 0, false
	case failoverWaitSync:
	default:
		return "", 0, false
	}
	if !f.end.IsZero() && !time.Now().Before(f.end) {
		if !f.force {
			s.abortFailoverLocked("Replica never caught up before timeout")
			return "", 0, false
		}
		s.log.Info("FAILOVER to " + f.target() + " time out exceeded, failing over.")
	} else {
		in := s.repl.m.Snapshot()
		synced := false
		for _, l := range in.Links {
			if !l.Online || l.Offset != in.Offset || f.host != "" && (l.IP != f.host || l.Port != f.port) {
				continue
			}
			f.host, f.port, synced = l.IP, l.Port, true
			break
		}
		if !synced {
			return "", 0, false
		}
		s.log.Info("Failover target " + f.target() + " is synced, failing over.")
	}
	f.state.Store(int32(failoverInProgress))
	f.psync.Store(0)
	return f.host, f.port, true
}

func (f *standaloneFailover) target() string { return f.host + ":" + strconv.Itoa(f.port) }

// followFailoverTarget makes this node a replica of the target, whose
// handshake asks it to take over (Redis's replicationSetMaster while
// FAILOVER_IN_PROGRESS). Called without f.mu: following waits for the
// running commands, FAILOVER ABORT among them. An abort that came
// meanwhile makes this node a master again.
func (s *Server) followFailoverTarget(host string, port int) {
	f := &s.failover
	r := s.repl
	r.rep.ArmFailover(func(accepted bool) {
		if accepted {
			f.psync.Store(1)
		} else {
			f.psync.Store(2)
		}
	})
	r.follow(host, port, "", nil)
	s.cfg.RecordReplicaOf(host, port)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.current() != failoverInProgress {
		r.rep.ArmFailover(nil)
		r.unfollow()
		s.cfg.RecordReplicaOf("", 0)
	}
}

// abortFailoverLocked ends the failover: a node that already follows its
// target becomes a master again. f.mu is held.
func (s *Server) abortFailoverLocked(reason string) {
	f := &s.failover
	if f.host != "" {
		s.log.Info("FAILOVER to " + f.target() + " aborted: " + reason)
	} else {
		s.log.Info("FAILOVER to any replica aborted: " + reason)
	}
	if f.current() == failoverInProgress {
		s.repl.rep.ArmFailover(nil)
		s.repl.unfollow()
		s.cfg.RecordReplicaOf("", 0)
		s.log.Info("MASTER MODE enabled (failover aborted)") // the reason is on the line above: Redis logs it once
	}
	s.clearFailoverLocked()
}

// clearFailoverLocked forgets the failover and lets writes run again.
// f.mu is held.
func (s *Server) clearFailoverLocked() {
	f := &s.failover
	f.end, f.force, f.host, f.port = time.Time{}, false, "", 0
	f.state.Store(int32(failoverNone))
	s.pause.Unpause()
}

// acceptFailoverRequest handles PSYNC <replid> <offset> FAILOVER on the
// target (Redis's syncCommand): a replica whose replication ID is the one
// asked for becomes a master, then serves the PSYNC. It reports whether
// the sync may go on (else the error reply is written).
func (c *Client) acceptFailoverRequest(replID []byte) bool {
	s := c.srv
	r := s.repl
	s.log.Warn("Failover request received for replid " + string(replID) + ".")
	if !r.proxy.Load() {
		c.Error("ERR PSYNC FAILOVER can't be sent to a master.")
		return false
	}
	if id, _ := r.m.IDs(); id != string(replID) {
		c.Error("ERR PSYNC FAILOVER replid must match my replid.")
		return false
	}
	r.unfollow()
	s.cfg.RecordReplicaOf("", 0)
	s.log.Info("MASTER MODE enabled (failover request from '" + c.InfoLine() + "')")
	return true
}
