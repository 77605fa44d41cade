package node

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/shoal-db/shoal/config"
)

// Persistence bookkeeping: Redis's server.dirty (how many changes the
// dataset has seen since the last save), the save points that the cron
// turns into a background save, and the shutdown sequence that saves a
// final snapshot (server.c serverCron, prepareForShutdown, finishShutdown).

// bgsaveRetryDelay is CONFIG_BGSAVE_RETRY_DELAY: after a failed background
// save, a save point fires again only this many seconds after the attempt.
const bgsaveRetryDelay = 5

// dirtyCounter is server.dirty as a monotonic total, striped like the
// command counters so that writers on two cores do not share a cache line.
// "Changes since the last save" is the total minus the total a successful
// save started at (rdbSaveState.dirtyAtSave), which is Redis's
// dirty - dirty_before_bgsave without a reset that could race a writer.
type dirtyCounter struct {
	shards [statShards]struct {
		n atomic.Int64
		_ [56]byte
	}
}

func (d *dirtyCounter) add(shard int64, n int64) {
	if n != 0 {
		d.shards[uint64(shard)%statShards].n.Add(n) // internal clients may have ids <= 0
	}
}

func (d *dirtyCounter) total() int64 {
	var t int64
	for i := range d.shards {
		t += d.shards[i].n.Load()
	}
	return t
}

// changesSinceSave is rdb_changes_since_last_save.
func (s *Server) changesSinceSave() int64 {
	return max(0, s.dirty.total()-s.rdbSave.dirtyAtSave.Load())
}

// backgroundSave starts a save on its own goroutine (rdbSaveBackground);
// false when one is already running.
func (s *Server) backgroundSave() bool {
	st := &s.rdbSave
	if !st.bgRunning.CompareAndSwap(false, true) {
		return false
	}
	now := time.Now().Unix()
	st.statSaves.Add(1)
	st.lastBgsaveTry.Store(now)
	st.bgStart.Store(now)
	s.log.Info("Background saving started", zap.Int("pid", s.pid))
	s.wg.Add(1)
	s.childCores.begin()
	go func() {
		defer s.wg.Done()
		defer s.childCores.end()
		err := s.saveRDB(nil)
		switch {
		case err == nil:
			s.log.Info("Background saving terminated with success")
		case errors.Is(err, errSaveCancelled):
			// Redis kills the child with SIGUSR1: not an error.
			s.log.Warn("Background saving terminated by signal 10")
		default:
			s.log.Warn("Background saving error")
			st.lastFailed.Store(true)
		}
		st.lastBgDuration.Store(time.Now().Unix() - st.bgStart.Load())
		st.bgStart.Store(0)
		st.bgRunning.Store(false)
	}()
	return true
}

// saveCron fires the save points (serverCron): a background save when a
// point's changes and seconds are both reached, and the last background
// save succeeded or was tried more than bgsaveRetryDelay seconds ago.
func (s *Server) saveCron(now time.Time) {
	st := &s.rdbSave
	if st.bgRunning.Load() || s.aof.rewriting.Load() {
		return // one "child" at a time, as serverCron
	}
	unix := now.Unix()
	dirty := s.changesSinceSave()
	if st.scheduled.Load() && (unix-st.lastBgsaveTry.Load() > bgsaveRetryDelay || !st.lastFailed.Load()) {
		if s.backgroundSave() {
			st.scheduled.Store(false)
		}
		return
	}
	for _, sp := range s.cfg.SaveParams() {
		if dirty >= sp.Changes && unix-s.lastSaveTime() > sp.Seconds &&
			(unix-st.lastBgsaveTry.Load() > bgsaveRetryDelay || !st.lastFailed.Load()) {
			s.log.Info(fmt.Sprintf("%d changes in %d seconds. Saving...", sp.Changes, sp.Seconds))
			s.backgroundSave()
			return
		}
	}
}

// cancelBackgroundSave makes a running background save discard its file
// (Redis's killRDBChild: FLUSHALL, the final save at shutdown).
func (s *Server) cancelBackgroundSave() {
	if s.rdbSave.bgRunning.Load() {
		s.rdbSave.cancelGen.Add(1)
	}
}

// saveAfterFlushAll is what FLUSHALL does after emptying the keyspace
// (flushAllDataAndResetRDB): a background save in progress is discarded,
// and with save points configured an (empty) snapshot replaces the file at
// once, so a restart does not bring the flushed keys back.
func (s *Server) saveAfterFlushAll(owner *Client) {
	s.cancelBackgroundSave()
	if len(s.cfg.SaveParams()) == 0 {
		return
	}
	_ = s.saveRDB(owner) // a failure is logged; FLUSHALL still answers OK
}

// msgBgsaveError is Redis's shared.bgsaveerr.
const msgBgsaveError = "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error."

// rdbErrorDeniesWrites is writeCommandsDeniedByDiskError for RDB: the last
// background save failed, save points exist and
// stop-writes-on-bgsave-error is set. Writes are refused until a save
// succeeds.
func (s *Server) rdbErrorDeniesWrites() bool {
	return s.rdbSave.lastFailed.Load() && s.cfg.Bool("stop-writes-on-bgsave-error") && len(s.cfg.SaveParams()) > 0
}

// ---------------------------------------------------------------- shutdown

// shutdownState is the one shutdown that may be under way (Redis's
// shutdown_mstime and shutdown_flags).
type shutdownState struct {
	mu sync.Mutex
	// A signal asked for a shutdown that the cron has not started yet
	// (Redis's shutdown_asap), with the flags of shutdown-on-sig*.
	asap      bool
	asapFlags int
	running   bool
	// waitUntil is when a shutdown waiting for its replicas stops waiting
	// (Redis's shutdown_mstime; zero when none waits).
	waitUntil time.Time
	abort     chan struct{} // closed by SHUTDOWN ABORT
	done      chan struct{} // closed when the attempt ends; err is its result
	err       error
}

var (
	// errShutdownFailed is a shutdown that could not save (the server keeps
	// running).
	errShutdownFailed = errors.New("ERR Errors trying to SHUTDOWN. Check logs.")
	// errShutdownRunning is a second request while one is under way.
	errShutdownRunning = errors.New("shutdown already in progress")
)

// SignalShutdown records a SIGTERM (sigint false) or SIGINT; the cron
// starts the shutdown at its next tick with the flags of
// shutdown-on-sigterm / shutdown-on-sigint, as serverCron does. If it
// succeeds the server stops as after SHUTDOWN (the OnShutdown hook); if
// the final save fails the server keeps running.
func (s *Server) SignalShutdown(sigint bool) {
	name := "shutdown-on-sigterm"
	if sigint {
		name = "shutdown-on-sigint"
	}
	sh := &s.shutdown
	sh.mu.Lock()
	sh.asap, sh.asapFlags = true, int(s.cfg.Int(name))
	sh.mu.Unlock()
}

// ShutdownPending reports whether a signalled shutdown waits for the cron
// or a shutdown is under way (a second SIGINT then exits at once).
func (s *Server) ShutdownPending() bool {
	sh := &s.shutdown
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.asap || sh.running
}

// shutdownCron starts the shutdown a signal asked for (serverCron).
func (s *Server) shutdownCron() {
	sh := &s.shutdown
	sh.mu.Lock()
	if !sh.asap || sh.running {
		sh.mu.Unlock()
		return
	}
	sh.asap = false
	flags := sh.asapFlags
	sh.mu.Unlock()
	go func() {
		if s.prepareShutdown(flags, nil) == nil {
			s.shutdownFromCommand()
		}
	}()
}

// prepareShutdown is Redis's prepareForShutdown + finishShutdown: wait for
// the replicas to catch up (unless NOW, or shutdown-timeout is 0) with
// writes paused, then save if save points exist (and not NOSAVE) or SAVE
// was given. On success the server no longer serves anyone and the caller
// exits; on a failed save (without FORCE) everything resumes. owner is the
// client running SHUTDOWN (nil for a signal): it closes the execution gate
// for the save.
func (s *Server) prepareShutdown(flags int, owner *Client) error {
	sh := &s.shutdown
	sh.mu.Lock()
	if sh.running {
		sh.mu.Unlock()
		return errShutdownRunning
	}
	sh.running = true
	sh.abort = make(chan struct{})
	sh.done = make(chan struct{})
	abort := sh.abort
	sh.mu.Unlock()

	s.log.Warn("User requested shutdown...")
	err := s.runShutdown(flags, abort, owner)
	sh.mu.Lock()
	sh.running = false
	sh.waitUntil = time.Time{}
	sh.err = err
	close(sh.done)
	sh.mu.Unlock()
	return err
}

// waitShutdown waits for the shutdown under way and returns its result
// (a second SHUTDOWN is answered with the first one's outcome).
func (s *Server) waitShutdown() error {
	sh := &s.shutdown
	sh.mu.Lock()
	done := sh.done
	sh.mu.Unlock()
	if done == nil {
		return nil
	}
	<-done
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.err
}

// abortShutdown is SHUTDOWN ABORT: false when no shutdown is under way.
func (s *Server) abortShutdown() bool {
	sh := &s.shutdown
	sh.mu.Lock()
	defer sh.mu.Unlock()
	switch {
	case sh.asap:
		sh.asap = false // signalled, not started yet
	case !sh.running || sh.abort == nil:
		return false
	default:
		select {
		case <-sh.abort:
			return false // already aborted
		default:
		}
		close(sh.abort)
	}
	s.log.Info("Shutdown manually aborted.")
	return true
}

func (s *Server) runShutdown(flags int, abort <-chan struct{}, owner *Client) error {
	paused := false
	if flags&config.ShutdownNow == 0 && s.cfg.Int("shutdown-timeout") != 0 && !s.replicasInSync() {
		// Writes pause while the replicas catch up (reads go on).
		s.pause.Pause(time.Duration(1<<62), false)
		paused = true
		s.repl.m.FeedCommand("REPLCONF", "GETACK", "*")
		s.log.Info("Waiting for replicas before shutting down.")
		timeout := time.Duration(s.cfg.Int("shutdown-timeout")) * time.Second
		s.shutdown.mu.Lock()
		s.shutdown.waitUntil = time.Now().Add(timeout)
		s.shutdown.mu.Unlock()
		if s.awaitReplicasBlocking(owner, timeout, abort) {
			s.pause.Unpause()
			return errShutdownFailed
		}
	}
	err := s.finishShutdown(flags, owner)
	if err != nil {
		s.log.Warn("Errors trying to shut down the server. Check the logs for more information.")
	}
	if paused {
		// Failed: writes resume. Succeeded: the clients are gone, and the
		// writers parked by the pause must return for Shutdown to finish.
		s.pause.Unpause()
	}
	return err
}

// shutdownLeft is INFO's shutdown_in_milliseconds: how long a shutdown
// waiting for its replicas goes on waiting; ok is false when none waits.
func (s *Server) shutdownLeft(now time.Time) (left time.Duration, ok bool) {
	sh := &s.shutdown
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.waitUntil.IsZero() {
		return 0, false
	}
	return max(sh.waitUntil.Sub(now), 0), true
}

// replicasInSync is isReadyToShutdown: every replica acknowledged the
// master's offset.
func (s *Server) replicasInSync() bool {
	in := s.repl.m.Snapshot()
	for _, l := range in.Links {
		if l.Offset != in.Offset {
			return false
		}
	}
	return true
}

// awaitReplicasBlocking is awaitReplicas with the client running SHUTDOWN
// (nil for a signal) blocked meanwhile, as Redis blocks it
// (BLOCKED_SHUTDOWN; Client.parkedWhile).
func (s *Server) awaitReplicasBlocking(owner *Client, timeout time.Duration, abort <-chan struct{}) (aborted bool) {
	if owner == nil {
		return s.awaitReplicas(timeout, abort)
	}
	owner.parkedWhile(func() { aborted = s.awaitReplicas(timeout, abort) })
	return aborted
}

// awaitReplicas waits until the replicas are in sync, the timeout passes,
// or the shutdown is aborted (true).
func (s *Server) awaitReplicas(timeout time.Duration, abort <-chan struct{}) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	for !s.replicasInSync() {
		select {
		case <-abort:
			return true
		case <-deadline.C:
			return false
		case <-s.repl.m.AckChanged():
		case <-poll.C:
		}
	}
	return false
}

// finishShutdown logs the replicas' state, then saves the final snapshot
// when asked to. The save runs with the execution gate closed, so no other
// client's command runs during it; once it succeeded the node stops
// listening and drops its clients before the gate opens, so no write is
// acknowledged that the file does not hold.
func (s *Server) finishShutdown(flags int, owner *Client) error {
	in := s.repl.m.Snapshot()
	lagging := 0
	for _, l := range in.Links {
		if l.Offset != in.Offset {
			lagging++
			lag := int64(0)
			if l.Online {
				lag = l.LagSec
			}
			s.log.Warn(fmt.Sprintf("Lagging replica %s:%d reported offset %d behind master, lag=%d, state=%s.",
				l.IP, l.Port, in.Offset-l.Offset, lag, l.State))
		}
	}
	if len(in.Links) > 0 {
		s.log.Info(fmt.Sprintf("%d of %d replicas are in sync when shutting down.", len(in.Links)-lagging, len(in.Links)))
	}
	// A background save would race the final one (or outlive a NOSAVE
	// exit): it is discarded, as Redis kills its child.
	if s.rdbSave.bgRunning.Load() {
		s.log.Warn("There is a child saving an .rdb. Killing it!")
		s.cancelBackgroundSave()
	}
	if err := s.aof.shutdown(flags&config.ShutdownForce != 0); err != nil { // node/aof.go
		return err
	}
	save := flags&config.ShutdownSave != 0 || (flags&config.ShutdownNoSave == 0 && len(s.cfg.SaveParams()) > 0)
	if !save {
		s.stopServing()
		return nil
	}
	if owner == nil {
		owner = s.bindClient(&Client{srv: s, id: -1}) // a signal: no client runs the shutdown
	}
	release := owner.closeGate()
	defer release()
	s.log.Info("Saving the final RDB snapshot before exiting.")
	err := s.saveRDB(owner)
	if err != nil {
		if flags&config.ShutdownForce == 0 {
			s.log.Warn("Error trying to save the DB, can't exit.")
			return errShutdownFailed
		}
		s.log.Warn("Error trying to save the DB. Exit anyway.")
	}
	s.stopServing()
	return nil
}

// stopServing closes the listeners and every client connection, the point
// after which Redis exits: commands still arriving are never answered.
// Shutdown finishes the rest.
func (s *Server) stopServing() {
	s.mu.Lock()
	s.closing = true
	lns := s.listeners
	unixLn := s.unixLn
	s.unixLn = nil // closed and unlinked once (SHUTDOWN, then Shutdown)
	if unixLn != nil {
		lns = append(lns[:len(lns):len(lns)], unixLn)
	}
	clients := make([]*Client, 0, len(s.clients))
	for _, c := range s.clients {
		clients = append(clients, c)
	}
	s.mu.Unlock()
	for _, ln := range lns {
		_ = ln.Close()
	}
	s.closeTLSListeners() // node/tls.go
	if unixLn != nil {
		s.unlinkUnixSocket()
	}
	for _, c := range clients {
		c.kill()
	}
}
