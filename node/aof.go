package node

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-db/shoal/aof"
	"github.com/shoal-db/shoal/config"
)

// The append-only file (Redis 7.0's multi-part AOF; package aof holds the
// files' formats and the appender). The appender is one more consumer of
// the write-effect feed; a client waits, before its replies leave, until
// the AOF holds what it saw (node/conn.go calls aofBeforeReplies): written
// for appendfsync everysec and no, fsynced for always. A rewrite is a
// snapshot at one instant S: at S the appender moves to a new incr file,
// and the snapshot is the new base.

// AOF states (Redis's aof_state).
const (
	aofOff = iota
	aofOn
	aofWaitRewrite // turned on at run time: on once the first rewrite is done
)

// aofState is the server's AOF: its state, manifest and appender, and
// the rewrite's figures for INFO.
type aofState struct {
	s *Server
	// mu serialises state changes: turning on and off, the rewrite's start
	// and end, the manifest.
	mu       sync.Mutex
	state    atomic.Int32
	manifest *aof.Manifest
	app      atomic.Pointer[aof.Appender]
	fsync    atomic.Int64 // appendfsync (config.AppendFsync*)

	rewriting atomic.Bool
	scheduled atomic.Bool
	// restartRewrite: CONFIG SET appendonly yes cancelled the running
	// rewrite; its goroutine starts the new one as it ends, so that
	// aof_rewrite_in_progress never reads 0 in between (Redis kills the
	// child and forks the new one in the same call).
	restartRewrite atomic.Bool
	cancelGen      atomic.Int64 // bumped to make the running rewrite discard its work
	rewriteStart   atomic.Int64 // unix seconds
	lastRewrite    atomic.Int64 // aof_last_rewrite_time_sec, -1 before any
	lastFailed     atomic.Bool  // aof_last_bgrewrite_status err
	rewrites       atomic.Int64
	failures       atomic.Int64 // aof_rewrites_consecutive_failures

	// aof_current_size is sizeBase plus what the appender wrote;
	// aof_base_size is the size after the last rewrite (or the base's at
	// load).
	sizeBase atomic.Int64
	baseSize atomic.Int64

	lastErrLog atomic.Int64 // unix ns of the last write error logged
	// fsyncErr is aof_bio_fsync_status: the last background fsync's error
	// (everysec), nil once one succeeds.
	fsyncErr   atomic.Pointer[error]
	flushSleep atomic.Int64 // DEBUG AOF-FLUSH-SLEEP, µs
	// The automatic rewrite's back-off after failures (cron only).
	nextDelay, nextTry int64
}

func newAOFState(s *Server) *aofState {
	a := &aofState{s: s, manifest: &aof.Manifest{}}
	a.lastRewrite.Store(-1)
	a.fsync.Store(s.cfg.Int("appendfsync"))
	s.cfg.OnChange("appendfsync", func(string) error {
		a.fsync.Store(s.cfg.Int("appendfsync"))
		return nil
	})
	s.cfg.OnChange("aof-timestamp-enabled", func(string) error {
		if app := a.app.Load(); app != nil {
			app.SetTimestamps(s.cfg.Bool("aof-timestamp-enabled"))
		}
		return nil
	})
	s.cfg.OnChange("appendonly", func(v string) error {
		if v == "yes" {
			return a.start()
		}
		a.stop()
		return nil
	})
	return a
}

// dir is the AOF directory: appenddirname inside dir.
func (a *aofState) dir() string {
	return filepath.Join(a.s.cfg.String("dir"), a.s.cfg.String("appenddirname"))
}

func (a *aofState) filename() string { return a.s.cfg.String("appendfilename") }

func (a *aofState) path(name string) string { return filepath.Join(a.dir(), name) }

// ---------------------------------------------------------------- the client side

// aofBeforeReplies runs after a client's batch, before its replies are
// written: it returns once the AOF holds everything appended so far (so
// every write the client made or observed), written to the file for
// appendfsync everysec and no (a killed process loses nothing the client
// saw), fsynced for always. Whoever finds the file free writes and fsyncs
// for all that wait (group commit).
func (s *Server) aofBeforeReplies() {
	app := s.aof.app.Load()
	if app == nil {
		return
	}
	target := app.Appended()
	if app.Written() >= target && (app.Synced() >= target || s.aof.fsync.Load() != config.AppendFsyncAlways) {
		return
	}
	// The wait is what Redis's beforeSleep write (and fsync) costs every
	// client: the latency monitor's aof-write / aof-fsync-always.
	var start time.Time
	if s.latency.enabled() {
		start = time.Now()
	}
	if s.aof.fsync.Load() == config.AppendFsyncAlways && !s.aof.fsyncPausedForRewrite() {
		if err := app.WaitSynced(target); err != nil {
			s.aof.fatalAlways(err)
		}
		if !start.IsZero() {
			s.latency.observe(latencyEventAOFFsyncAlways, time.Since(start))
		}
		return
	}
	if err := app.WaitWritten(target); err != nil {
		s.aof.noteWriteError(err)
	}
	if !start.IsZero() {
		s.latency.observe(latencyEventAOFWrite, time.Since(start))
	}
}

// fsyncPausedForRewrite is no-appendfsync-on-rewrite while a rewrite runs.
func (a *aofState) fsyncPausedForRewrite() bool {
	return a.rewriting.Load() && a.s.cfg.Bool("no-appendfsync-on-rewrite")
}

// fatalAlways stops the process after a write or fsync error under
// appendfsync always, as Redis does: the replies cannot be taken back.
func (a *aofState) fatalAlways(err error) {
	if errors.Is(err, os.ErrClosed) {
		return // the AOF was turned off meanwhile
	}
	var pe *os.PathError
	if errors.As(err, &pe) && pe.Op == "fdatasync" {
		a.s.log.Warn(fmt.Sprintf("Can't persist AOF for fsync error when the AOF fsync policy is 'always': %s. Exiting...", syscallText(err)))
	} else {
		a.s.log.Warn("Error writing to the AOF file: " + syscallText(err))
		a.s.log.Warn("Can't recover from AOF write error when the AOF fsync policy is 'always'. Exiting...")
	}
	os.Exit(1)
}

// writeErrLogEvery limits the error lines to one per 30 s
// (AOF_WRITE_LOG_ERROR_RATE).
const writeErrLogEvery = 30 * time.Second

func (a *aofState) noteWriteError(err error) {
	if errors.Is(err, os.ErrClosed) {
		return
	}
	now := time.Now().UnixNano()
	if last := a.lastErrLog.Load(); now-last > int64(writeErrLogEvery) && a.lastErrLog.CompareAndSwap(last, now) {
		a.s.log.Warn("Error writing to the AOF file: " + syscallText(err))
	}
}

// ---------------------------------------------------------------- the cron

// aofCronPeriod is how often the AOF's background work runs (cron), on its
// own goroutine following the server cron (Redis's bio thread and the AOF
// part of serverCron).
const aofCronPeriod = 100 * time.Millisecond

// cron writes what no client waited for (the master link's writes,
// expiry), fsyncs once a second under everysec, retries after a write
// error, and starts a scheduled or automatic rewrite.
func (a *aofState) cron() {
	if app := a.app.Load(); app != nil {
		if err := app.Flush(); err != nil {
			a.noteWriteError(err)
			if a.fsync.Load() == config.AppendFsyncAlways {
				a.fatalAlways(err)
			}
		}
		if a.fsync.Load() == config.AppendFsyncEverySec && time.Now().Unix() > app.LastFsync() &&
			!a.fsyncPausedForRewrite() {
			if err := app.SyncInBackground(); err != nil {
				a.noteWriteError(err)
				a.fsyncErr.Store(&err)
			} else {
				a.fsyncErr.Store(nil)
			}
		}
		if a.fsync.Load() == config.AppendFsyncAlways && !a.fsyncPausedForRewrite() && app.Synced() < app.Written() {
			if err := app.WaitSynced(app.Written()); err != nil {
				a.fatalAlways(err)
			}
		}
	}
	if a.rewriting.Load() || a.s.rdbSave.bgRunning.Load() {
		return
	}
	if a.scheduled.Load() {
		_ = a.startRewrite()
		return
	}
	// auto-aof-rewrite-percentage / -min-size, as serverCron.
	perc := a.s.cfg.Int("auto-aof-rewrite-percentage")
	if a.state.Load() != aofOn || perc == 0 {
		return
	}
	cur := a.currentSize()
	if cur <= a.s.cfg.Int("auto-aof-rewrite-min-size") {
		return
	}
	base := max(a.baseSize.Load(), 1)
	if growth := cur*100/base - 100; growth >= perc && !a.rewriteLimited() {
		a.s.log.Info(fmt.Sprintf("Starting automatic rewriting of AOF on %d%% growth", growth))
		_ = a.startRewrite()
	}
}

// rewriteLimited is aofRewriteLimited: after 3 failures in a row the
// automatic rewrite waits 1, 2, 4 ... 60 minutes between tries.
func (a *aofState) rewriteLimited() bool {
	if a.failures.Load() < 3 {
		a.nextDelay, a.nextTry = 0, 0
		return false
	}
	now := time.Now().Unix()
	if a.nextTry != 0 {
		if now < a.nextTry {
			return true
		}
		a.nextTry = 0
		return false
	}
	a.nextDelay = min(max(a.nextDelay*2, 1), 60)
	a.nextTry = now + a.nextDelay*60
	a.s.log.Warn(fmt.Sprintf("Background AOF rewrite has repeatedly failed and triggered the limit, will retry in %d minutes", a.nextDelay))
	return true
}

func (a *aofState) currentSize() int64 {
	n := a.sizeBase.Load()
	if app := a.app.Load(); app != nil {
		n += app.BytesWritten()
	}
	return n
}

// ---------------------------------------------------------------- start-up

// loadAOFManifest reads the manifest at start-up whatever appendonly says
// (aofLoadManifestFromDisk): a damaged one stops the server with Redis's
// lines.
func (a *aofState) loadManifest() error {
	m, err := aof.ReadManifest(a.dir(), a.filename())
	if errors.Is(err, aof.ErrNoManifest) {
		a.manifest = &aof.Manifest{}
		return nil
	}
	var me *aof.ManifestError
	if errors.As(err, &me) {
		log := a.s.log
		log.Warn("*** FATAL AOF MANIFEST FILE ERROR ***")
		if me.Line > 0 {
			log.Warn(fmt.Sprintf("Reading the manifest file, at line %d", me.Line))
			log.Warn(fmt.Sprintf(">>> '%s'", me.Text))
		}
		log.Warn(me.Message)
		return ErrDataNotLoaded
	}
	if err != nil {
		a.s.log.Warn(fmt.Sprintf("Fatal error: can't open the AOF manifest file %s for reading: %s",
			a.path(aof.ManifestName(a.filename())), syscallText(err)))
		return ErrDataNotLoaded
	}
	a.manifest = m
	return nil
}

// openAtStartup is aofOpenIfNeededOnServerStart then aofDelHistoryFiles:
// with appendonly yes, a dataset started without AOF gets a base file
// (the dataset as loaded), the last incr file is opened for appending (a
// new one when there is none), the manifest is persisted, and the history
// files left by an interrupted clean-up are removed.
func (a *aofState) openAtStartup() error {
	if !a.s.cfg.Bool("appendonly") {
		a.delHistory()
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := os.MkdirAll(a.dir(), 0o755); err != nil {
		a.s.log.Warn(fmt.Sprintf("Can't open or create append-only dir %s: %s", a.s.cfg.String("appenddirname"), syscallText(err)))
		return ErrDataNotLoaded
	}
	m := a.manifest
	hadIncr := len(m.Incr) > 0
	if m.Empty() {
		name, err := a.writeBaseNow(m)
		if err != nil {
			return ErrDataNotLoaded
		}
		a.s.log.Info("Creating AOF base file " + name + " on server start")
	}
	name := m.LastIncr(a.filename())
	f, err := os.OpenFile(a.path(name), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		a.s.log.Warn(fmt.Sprintf("Can't open the append-only file %s: %s", name, syscallText(err)))
		return ErrDataNotLoaded
	}
	if err := aof.WriteManifest(a.dir(), a.filename(), m); err != nil {
		a.s.log.Warn(err.Error())
		_ = f.Close()
		return ErrDataNotLoaded
	}
	st, _ := f.Stat()
	size := int64(0)
	if st != nil {
		size = st.Size()
	}
	if hadIncr {
		a.s.log.Info("Opening AOF incr file " + name + " on server start")
	} else {
		a.s.log.Info("Creating AOF incr file " + name + " on server start")
	}
	if a.sizeBase.Load() == 0 {
		a.sizeBase.Store(a.filesSize())
		a.baseSize.Store(a.fileSize(m.Base))
	}
	a.attach(aof.NewAppender(f, size))
	a.state.Store(aofOn)
	a.delHistoryLocked()
	return nil
}

// attach makes app the feed's AOF consumer.
func (a *aofState) attach(app *aof.Appender) {
	app.SetTimestamps(a.s.cfg.Bool("aof-timestamp-enabled"))
	app.SetFlushSleep(a.flushSleep.Load())
	a.app.Store(app)
	a.s.AddEffectFeed(app)
}

// detach stops feeding app and closes it (everything buffered is written
// and fsynced first).
func (a *aofState) detach() {
	app := a.app.Swap(nil)
	if app == nil {
		return
	}
	a.s.RemoveEffectFeed(app)
	if err := app.Close(); err != nil {
		a.s.log.Warn("Fail to fsync the AOF file: " + syscallText(err))
	}
}

// fileSize is the size of one file of the AOF (0 when absent).
func (a *aofState) fileSize(i *aof.Info) int64 {
	if i == nil {
		return 0
	}
	st, err := os.Stat(a.path(i.Name))
	if err != nil {
		return 0
	}
	return st.Size()
}

// filesSize is the size of the base and incr files.
func (a *aofState) filesSize() int64 {
	var n int64
	for _, i := range a.manifest.Files() {
		n += a.fileSize(&i)
	}
	return n
}

// writeBaseNow writes the dataset as the next base file through
// temp-rewriteaof-<pid>.aof (rewriteAppendOnlyFile), at start-up, and
// names it in m.
func (a *aofState) writeBaseNow(m *aof.Manifest) (string, error) {
	tmp := filepath.Join(a.s.cfg.String("dir"), fmt.Sprintf("temp-rewriteaof-%d.aof", os.Getpid()))
	isRDB, err := a.writeBase(tmp, nil, nil)
	if err != nil {
		return "", err
	}
	name := m.NewBase(a.filename(), isRDB)
	if err := os.Rename(tmp, a.path(name)); err != nil {
		a.s.log.Warn("Error moving temp append only file on the final destination: " + syscallText(err))
		_ = os.Remove(tmp)
		return "", err
	}
	return name, nil
}

// writeBase writes the base file at path, the dataset at one instant S
// (snapshotRDB; atStart runs at S): an RDB image with the aof-base aux
// field, or with aof-use-rdb-preamble no that image converted to commands
// (node/aof_rewrite.go). isRDB says which.
func (a *aofState) writeBase(path string, atStart func() [][2]string, cancelled func() bool) (isRDB bool, err error) {
	isRDB = a.s.cfg.Bool("aof-use-rdb-preamble")
	image := path
	if !isRDB {
		image = path + ".rdb"
		defer os.Remove(image)
	}
	f, err := os.Create(image)
	if err != nil {
		a.s.log.Warn("Opening the temp file for AOF rewrite in rewriteAppendOnlyFile(): " + syscallText(err))
		return isRDB, err
	}
	bw := bufio.NewWriterSize(a.incrementalSync(f), 1<<20)
	_, err = a.s.snapshotRDB(nil, bw, [][2]string{
		{"redis-ver", Version},
		{"redis-bits", "64"},
		{"ctime", fmt.Sprint(time.Now().Unix())},
		{"aof-base", "1"},
	}, atStart, cancelled)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil && isRDB {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && !isRDB {
		err = a.rdbToCommands(image, path)
	}
	if err != nil {
		if !errors.Is(err, errSnapshotCancelled) {
			a.s.log.Warn("Write error writing append only file on disk: " + syscallText(err))
		}
		_ = os.Remove(path)
		return isRDB, err
	}
	return isRDB, nil
}

// autosyncBytes is REDIS_AUTOSYNC_BYTES: with
// aof-rewrite-incremental-fsync, the rewrite's file is fsynced every 4 MB
// written, so the kernel never holds much of it to flush at once.
const autosyncBytes = 4 << 20

// incrementalSync wraps the rewrite's file per aof-rewrite-incremental-fsync.
func (a *aofState) incrementalSync(f *os.File) io.Writer {
	if !a.s.cfg.Bool("aof-rewrite-incremental-fsync") {
		return f
	}
	return &autosyncWriter{f: f}
}

// autosyncWriter fsyncs its file every autosyncBytes written (rioSetAutoSync).
type autosyncWriter struct {
	f       *os.File
	pending int
}

func (w *autosyncWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.pending += n
	if err == nil && w.pending >= autosyncBytes {
		w.pending = 0
		err = w.f.Sync()
	}
	return n, err
}

// delHistory is aofDelHistoryFiles.
func (a *aofState) delHistory() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.delHistoryLocked()
}

func (a *aofState) delHistoryLocked() {
	m := a.manifest
	if m == nil || len(m.History) == 0 || a.s.cfg.Bool("aof-disable-auto-gc") {
		return
	}
	for _, h := range m.History {
		a.s.log.Info("Removing the history file " + h.Name + " in the background")
		_ = os.Remove(a.path(h.Name))
	}
	m.History = nil
	if err := aof.WriteManifest(a.dir(), a.filename(), m); err != nil {
		a.s.log.Warn(err.Error())
	}
}

// ---------------------------------------------------------------- on and off

// start is CONFIG SET appendonly yes (startAppendOnly): the AOF waits for
// a rewrite, whose base is the dataset at S and whose incr file gets the
// writes from S on; it is on once the rewrite is done.
func (a *aofState) start() error {
	if a.state.Load() != aofOff {
		return nil
	}
	a.state.Store(aofWaitRewrite)
	if a.s.rdbSave.bgRunning.Load() {
		a.scheduled.Store(true)
		a.s.log.Warn("AOF was enabled but there is already another background operation. An AOF background was scheduled to start when possible.")
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.rewriting.Load() {
		// The running rewrite is discarded; its goroutine starts the new
		// one as it ends.
		a.s.log.Warn("AOF was enabled but there is already an AOF rewriting in background. Stopping background AOF and starting a rewrite now.")
		a.s.log.Info("Killing running AOF rewrite child")
		a.restartRewrite.Store(true)
		a.cancelGen.Add(1)
		return nil
	}
	if err := a.startRewriteLocked(); err != nil {
		a.state.Store(aofOff)
		a.s.log.Warn("Redis needs to enable the AOF but can't trigger a background AOF rewrite operation. Check the above logs for more info about the error.")
		return errors.New("Unable to turn on AOF. Check server logs.")
	}
	a.lastErrLog.Store(0)
	return nil
}

// stop is CONFIG SET appendonly no (stopAppendOnly): what is buffered is
// written and fsynced, the file closed, a running rewrite discarded.
func (a *aofState) stop() {
	a.mu.Lock()
	if a.state.Load() == aofOff {
		a.mu.Unlock()
		return
	}
	a.state.Store(aofOff)
	a.scheduled.Store(false)
	a.restartRewrite.Store(false)
	a.detach()
	a.sizeBase.Store(0)
	a.mu.Unlock()
	a.cancelRewrite()
}

// restartAfterSync is Redis's restartAOFAfterSYNC: a replica that loaded
// its master's data outside the feed rewrites its AOF from the new
// dataset (the rewrite runs in the background; its instant waits for the
// master link's apply, which the caller may hold).
func (a *aofState) restartAfterSync() {
	if !a.s.cfg.Bool("appendonly") {
		return
	}
	a.stop()
	if err := a.start(); err != nil {
		a.s.log.Warn("Failed enabling the AOF after successful master synchronization! Trying it again in one second.")
	}
}

// cancelRewrite makes the running rewrite discard its work
// (killAppendOnlyChild). It does not wait: the rewrite may be waiting to
// mark S, which needs the caller's own command to end.
func (a *aofState) cancelRewrite() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.rewriting.Load() {
		a.s.log.Info("Killing running AOF rewrite child")
		a.cancelGen.Add(1)
	}
}

// shutdown writes and fsyncs what is buffered and stops the rewrite
// (prepareForShutdown).
//
// While the rewrite that turns the AOF on runs (appendonly yes set at run
// time) the AOF holds nothing yet: the shutdown fails unless force, as
// Redis's finishShutdown, or the dataset would be lost.
func (a *aofState) shutdown(force bool) error {
	if a.rewriting.Load() {
		if a.state.Load() == aofWaitRewrite {
			if !force {
				a.s.log.Warn("Writing initial AOF, can't exit.")
				return errShutdownFailed
			}
			a.s.log.Warn("Writing initial AOF. Exit anyway.")
		}
		a.s.log.Warn("There is a child rewriting the AOF. Killing it!")
		a.cancelRewrite()
	}
	if app := a.app.Load(); app != nil {
		a.s.log.Info("Calling fsync() on the AOF file.")
		if err := app.Flush(); err != nil {
			a.noteWriteError(err)
		}
		if err := app.WaitSynced(app.Written()); err != nil {
			a.noteWriteError(err)
		}
	}
	return nil
}

// ---------------------------------------------------------------- rewrite

var errRewriteRunning = errors.New("ERR Background append only file rewriting already in progress")

// startRewrite is rewriteAppendOnlyFileBackground: the rewrite runs on its
// own goroutine.
func (a *aofState) startRewrite() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.rewriting.Load() {
		return errRewriteRunning
	}
	return a.startRewriteLocked()
}

// startRewriteLocked starts the rewrite goroutine; a.mu is held.
func (a *aofState) startRewriteLocked() error {
	if err := os.MkdirAll(a.dir(), 0o755); err != nil {
		a.s.log.Warn(fmt.Sprintf("Can't open or create append-only dir %s: %s", a.s.cfg.String("appenddirname"), syscallText(err)))
		a.lastFailed.Store(true)
		return err
	}
	a.rewrites.Add(1)
	a.rewriting.Store(true)
	a.scheduled.Store(false)
	a.rewriteStart.Store(time.Now().Unix())
	gen := a.cancelGen.Load()
	a.s.log.Info("Background append only file rewriting started")
	a.s.childCores.begin()
	go func() {
		defer a.s.childCores.end()
		a.rewrite(gen)
	}()
	return nil
}

// rewrite writes the new base as the dataset at S; at S the appender
// moves to a new incr file (openNewIncrAofForAppend). Then the manifest
// names the new base and incr, and the files they replace are removed
// (backgroundRewriteDoneHandler).
func (a *aofState) rewrite(gen int64) {
	tmp := filepath.Join(a.s.cfg.String("dir"), fmt.Sprintf("temp-rewriteaof-bg-%d.aof", os.Getpid()))
	var openErr error
	atStart := func() [][2]string {
		openErr = a.openNewIncr(gen)
		return nil
	}
	cancelled := func() bool { return openErr != nil || a.cancelGen.Load() != gen }
	isRDB, err := a.writeBase(tmp, atStart, cancelled)
	if err == nil && openErr != nil {
		err = openErr
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	defer func() {
		_ = os.Remove(tmp)
		a.lastRewrite.Store(time.Now().Unix() - a.rewriteStart.Load())
		if a.restartRewrite.Swap(false) && a.state.Load() == aofWaitRewrite {
			// CONFIG SET appendonly yes cancelled this rewrite: the new
			// one starts now, and the rewrite stays in progress.
			if a.startRewriteLocked() == nil {
				return
			}
		}
		a.rewriting.Store(false)
	}()
	if a.cancelGen.Load() != gen {
		a.s.log.Warn("Background AOF rewrite terminated by signal 10")
		a.cleanWaitRewrite()
		return
	}
	if err != nil {
		a.lastFailed.Store(true)
		a.failures.Add(1)
		a.s.log.Warn("Background AOF rewrite terminated with error")
		a.cleanWaitRewrite()
		return
	}
	a.s.log.Info("Background AOF rewrite terminated with success")
	if err := a.finishRewrite(tmp, isRDB); err != nil {
		a.lastFailed.Store(true)
		a.failures.Add(1)
		a.cleanWaitRewrite()
		return
	}
	a.lastFailed.Store(false)
	a.failures.Store(0)
	a.s.log.Info("Background AOF rewrite finished successfully")
	if a.state.Load() == aofWaitRewrite {
		a.state.Store(aofOn)
	}
}

// cleanWaitRewrite drops the temporary incr file of a failed first
// rewrite and schedules another (the AOF is still waiting for one).
func (a *aofState) cleanWaitRewrite() {
	if a.state.Load() != aofWaitRewrite {
		return
	}
	a.detach()
	name := aof.TempIncrName(a.filename())
	a.s.log.Info("Removing the temp incr aof file " + name + " in the background")
	_ = os.Remove(a.path(name))
	a.scheduled.Store(true)
}

// openNewIncr runs at S, with no command running: the AOF on, a new incr
// file is added to the manifest (persisted) and the appender moves to it;
// waiting for its first rewrite, the appender starts on the temporary
// incr file; off, nothing.
func (a *aofState) openNewIncr(gen int64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cancelGen.Load() != gen {
		return errSnapshotCancelled
	}
	var name string
	var next *aof.Manifest
	switch a.state.Load() {
	case aofOff:
		return nil
	case aofWaitRewrite:
		name = aof.TempIncrName(a.filename())
	default:
		next = a.manifest.Clone()
		name = next.NewIncr(a.filename())
	}
	f, err := os.OpenFile(a.path(name), os.O_WRONLY|os.O_TRUNC|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		a.s.log.Warn(fmt.Sprintf("Can't open the append-only file %s: %s", name, syscallText(err)))
		return err
	}
	if next != nil {
		if err := aof.WriteManifest(a.dir(), a.filename(), next); err != nil {
			a.s.log.Warn(err.Error())
			_ = f.Close()
			_ = os.Remove(a.path(name))
			return err
		}
	}
	a.s.log.Info("Creating AOF incr file " + name + " on background rewrite")
	if app := a.app.Load(); app != nil {
		if err := app.Switch(f, 0, a.fsync.Load() == config.AppendFsyncAlways); err != nil {
			a.noteWriteError(err)
		}
	} else {
		a.attach(aof.NewAppender(f, 0))
	}
	if next != nil {
		a.manifest = next
	}
	return nil
}

// finishRewrite makes the temporary base the new base and persists the
// manifest; the replaced files become history and are removed. The
// caller holds mu.
func (a *aofState) finishRewrite(tmp string, isRDB bool) error {
	next := a.manifest.Clone()
	base := next.NewBase(a.filename(), isRDB)
	if err := os.Rename(tmp, a.path(base)); err != nil {
		a.s.log.Warn(fmt.Sprintf("Error trying to rename the temporary AOF base file %s into %s: %s",
			filepath.Base(tmp), a.path(base), syscallText(err)))
		return err
	}
	a.s.log.Info(fmt.Sprintf("Successfully renamed the temporary AOF base file %s into %s", filepath.Base(tmp), base))
	var incrPath string
	if a.state.Load() == aofWaitRewrite {
		tmpIncr := aof.TempIncrName(a.filename())
		incr := next.NewIncr(a.filename())
		incrPath = a.path(incr)
		if err := os.Rename(a.path(tmpIncr), incrPath); err != nil {
			a.s.log.Warn(fmt.Sprintf("Error trying to rename the temporary AOF incr file %s into %s: %s",
				a.path(tmpIncr), incrPath, syscallText(err)))
			_ = os.Remove(a.path(base))
			return err
		}
		a.s.log.Info(fmt.Sprintf("Successfully renamed the temporary AOF incr file %s into %s", tmpIncr, incr))
	}
	next.MarkIncrHistory(a.app.Load() != nil)
	if err := aof.WriteManifest(a.dir(), a.filename(), next); err != nil {
		a.s.log.Warn(err.Error())
		_ = os.Remove(a.path(base))
		if incrPath != "" {
			_ = os.Remove(incrPath)
		}
		return err
	}
	a.manifest = next
	if app := a.app.Load(); app != nil {
		cur := a.fileSize(next.Base) + app.FileSize()
		a.sizeBase.Store(cur - app.BytesWritten())
		a.baseSize.Store(cur)
	}
	a.delHistoryLocked()
	return nil
}

// ---------------------------------------------------------------- BGREWRITEAOF

// BGREWRITEAOF
func cmdBgrewriteaof(c *Client, args [][]byte) {
	a := c.srv.aof
	switch {
	case a.rewriting.Load():
		c.Error(errRewriteRunning.Error())
	case c.srv.rdbSave.bgRunning.Load() || c.inExec:
		a.scheduled.Store(true)
		a.failures.Store(0)
		c.Status("Background append only file rewriting scheduled")
	default:
		if err := a.startRewrite(); err != nil {
			if errors.Is(err, errRewriteRunning) {
				c.Error(err.Error())
				return
			}
			c.Error("ERR Can't execute an AOF background rewriting. Please check the server logs for more information.")
			return
		}
		c.Status("Background append only file rewriting started")
	}
}

// ---------------------------------------------------------------- INFO

// infoAOF writes INFO persistence's aof_* fields.
func (s *Server) infoAOF(w *infoWriter) {
	a := s.aof
	w.int("aof_enabled", boolInt(a.state.Load() != aofOff))
	w.int("aof_rewrite_in_progress", boolInt(a.rewriting.Load()))
	w.int("aof_rewrite_scheduled", boolInt(a.scheduled.Load()))
	w.int("aof_last_rewrite_time_sec", a.lastRewrite.Load())
	current := int64(-1)
	if a.rewriting.Load() {
		current = time.Now().Unix() - a.rewriteStart.Load()
	}
	w.int("aof_current_rewrite_time_sec", current)
	w.str("aof_last_bgrewrite_status", okErr(a.lastFailed.Load()))
	w.int("aof_rewrites", a.rewrites.Load())
	w.int("aof_rewrites_consecutive_failures", a.failures.Load())
	failed := false
	if app := a.app.Load(); app != nil {
		failed, _ = app.WriteFailed()
	}
	w.str("aof_last_write_status", okErr(failed))
	w.int("aof_last_cow_size", 0) // no fork, no copy-on-write
	w.int("module_fork_in_progress", 0)
	w.int("module_fork_last_cow_size", 0)
	if !s.cfg.Bool("appendonly") {
		return
	}
	pending := false
	if app := a.app.Load(); app != nil {
		pending = app.FsyncInProgress()
	}
	w.int("aof_current_size", a.currentSize())
	w.int("aof_base_size", a.baseSize.Load())
	w.int("aof_pending_rewrite", boolInt(a.scheduled.Load()))
	w.int("aof_buffer_length", a.bufferLength())
	w.int("aof_pending_bio_fsync", boolInt(pending))
	w.int("aof_delayed_fsync", 0) // writes never wait for a running fsync
}

// bufferLength is aof_buffer_length and mem_aof_buffer: bytes appended,
// not yet written.
func (a *aofState) bufferLength() int64 {
	if app := a.app.Load(); app != nil {
		return app.Buffered()
	}
	return 0
}

func okErr(failed bool) string {
	if failed {
		return "err"
	}
	return "ok"
}

// diskErrorText is writeCommandsDeniedByDiskError's AOF half: while the
// AOF is on and its last write or background fsync failed, the -MISCONF
// error that writes and PING get (Redis's text, with strerror's words);
// "" otherwise. One atomic load while the AOF is off.
func (a *aofState) diskErrorText() string {
	if a.state.Load() == aofOff {
		return ""
	}
	var err error
	if app := a.app.Load(); app != nil {
		if failed, werr := app.WriteFailed(); failed {
			err = werr
		}
	}
	if p := a.fsyncErr.Load(); err == nil && p != nil {
		err = *p
	}
	if err == nil {
		return ""
	}
	return "MISCONF Errors writing to the AOF file: " + syscallText(err)
}
