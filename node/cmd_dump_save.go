package node

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/rdb"
	"github.com/shoal-db/shoal/slots"
	"github.com/shoal-db/shoal/store"
)

// SAVE, BGSAVE and LASTSAVE write an RDB file without forking: the
// point-in-time snapshot of node/snapshot.go, so the file is the dataset at
// the instant the save started (as Redis's fork gives) while writes go on.
// At start-up dir/dbfilename is loaded if it exists.

func saveHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"save":     cmdSave,
		"bgsave":   cmdBgsave,
		"lastsave": cmdLastsave,
	}
}

// rdbSaveState is the server's persistence state (Redis's lastsave,
// lastbgsave_status, lastbgsave_try, rdb_save_time_*, stat_rdb_saves).
type rdbSaveState struct {
	mu         sync.Mutex // held while a save runs (SAVE, BGSAVE)
	bgRunning  atomic.Bool
	scheduled  atomic.Bool  // BGSAVE inside EXEC: the cron starts it
	lastSave   atomic.Int64 // unix seconds of the last successful save; 0 = start-up time
	lastFailed atomic.Bool  // the last background save failed
	// statSaves is rdb_saves: SAVE and every background save started.
	statSaves atomic.Int64
	// dirtyAtSave is the change count (Server.dirty) the last successful
	// save started at.
	dirtyAtSave   atomic.Int64
	lastBgsaveTry atomic.Int64 // unix seconds a background save last started
	bgStart       atomic.Int64 // unix seconds the running background save started
	// lastBgDuration is rdb_last_bgsave_time_sec (-1 before any).
	lastBgDuration atomic.Int64
	// cancelGen is bumped to make the running save discard its file.
	cancelGen atomic.Int64
	// The last load's figures (rdb_last_load_keys_loaded / _expired).
	loadedKeys, loadedExpired atomic.Int64
}

// errSaveCancelled is a save discarded by cancelBackgroundSave.
var errSaveCancelled = errors.New("save cancelled")

// lastSaveTime is LASTSAVE's answer: the last successful save, or the
// start-up time before any.
func (s *Server) lastSaveTime() int64 {
	if t := s.rdbSave.lastSave.Load(); t != 0 {
		return t
	}
	return s.start.Unix()
}

// rdbPath is dir/dbfilename.
func (s *Server) rdbPath() string {
	return filepath.Join(s.cfg.String("dir"), s.cfg.String("dbfilename"))
}

// saveRDB writes the whole keyspace to dir/dbfilename through a temporary
// file renamed into place (rdbSave), with Redis's log lines. On success
// the changes counted before it started are no longer "since the last
// save". owner is the client running the save (nil: none), which
// snapshotRDB must not wait for. It takes s.rdbSave.mu at the snapshot's
// instant (see snapshotRDBHolding for why not before), so the temporary
// file is opened only then, on the first write.
func (s *Server) saveRDB(owner *Client) error {
	start := time.Now()
	st := &s.rdbSave
	dirtyAtStart := s.dirty.total()
	gen := st.cancelGen.Load()
	path := s.rdbPath()
	tmpName, tmp := s.tempRDBPath()
	f := &tempFile{path: tmp}
	bw := bufio.NewWriterSize(f, 1<<20)
	// The file is created at the snapshot's instant (st.mu held), as
	// rdbSave creates temp-<pid>.rdb before writing: a save slowed by
	// rdb-key-save-delay shows it at once (the second SIGINT removes it).
	atInstant := func() [][2]string {
		_ = f.create() // an error is reported below (openErr)
		return s.repl.saveInfoAux()
	}
	keys, err := s.snapshotRDBHolding(owner, &st.mu, bw, [][2]string{
		{"redis-ver", Version},
		{"redis-bits", "64"},
		{"ctime", fmt.Sprint(time.Now().Unix())},
		{"aof-base", "0"},
	}, atInstant, func() bool { return st.cancelGen.Load() != gen })
	defer st.mu.Unlock()
	if err == nil {
		err = bw.Flush()
	}
	if f.openErr != nil {
		s.log.Warn(fmt.Sprintf("Failed opening the temp RDB file %s (in server root dir %s) for saving: %s",
			tmpName, serverRootDir(), syscallText(f.openErr)))
		return f.openErr
	}
	if f.f == nil { // nothing written: a save cancelled before its first flush
		return errSaveCancelled
	}
	defer os.Remove(tmp) // a no-op once renamed
	if errors.Is(err, errSnapshotCancelled) {
		_ = f.f.Close()
		return errSaveCancelled
	}
	op := "rdbSaveRio"
	if err == nil {
		op = "fsync"
		err = f.f.Sync()
	}
	if cerr := f.f.Close(); err == nil {
		op, err = "fclose", cerr
	}
	if err != nil {
		s.log.Warn(fmt.Sprintf("Write error saving DB on disk(%s): %s", op, syscallText(err)))
		return err
	}
	if st.cancelGen.Load() != gen {
		return errSaveCancelled
	}
	if err = os.Rename(tmp, path); err != nil {
		s.log.Warn(fmt.Sprintf("Error moving temp DB file %s on the final destination %s (in server root dir %s): %s",
			tmpName, s.cfg.String("dbfilename"), serverRootDir(), syscallText(err)))
		return err
	}
	if d, derr := os.Open(filepath.Dir(path)); derr == nil {
		_ = d.Sync() // fsyncFileDir: the rename survives a crash
		_ = d.Close()
	}
	st.dirtyAtSave.Store(dirtyAtStart)
	st.lastSave.Store(time.Now().Unix())
	st.lastFailed.Store(false)
	s.log.Info("DB saved on disk", zap.String("path", path), zap.Int("keys", keys), zap.Duration("took", time.Since(start)))
	return nil
}

// tempRDBPath is the temporary file a save writes before the rename:
// temp-<pid>.rdb in the data directory, Redis's name (saves never overlap:
// they hold rdbSave.mu from the first write on).
func (s *Server) tempRDBPath() (name, path string) {
	name = fmt.Sprintf("temp-%d.rdb", os.Getpid())
	return name, filepath.Join(filepath.Dir(s.rdbPath()), name)
}

// tempFile is a save's temporary file, created on the first write.
type tempFile struct {
	path    string
	f       *os.File
	openErr error
}

func (t *tempFile) Write(p []byte) (int, error) {
	if err := t.create(); err != nil {
		return 0, err
	}
	return t.f.Write(p)
}

// create opens the file unless it is open (or failed to open).
func (t *tempFile) create() error {
	if t.f == nil && t.openErr == nil {
		t.f, t.openErr = os.Create(t.path)
	}
	return t.openErr
}

// RemoveTempRDB deletes the temporary file of a save under way (the
// second SIGINT's immediate exit, rdbRemoveTempFile).
func (s *Server) RemoveTempRDB() {
	_, path := s.tempRDBPath()
	_ = os.Remove(path)
}

// saveKeyDelay is rdb-key-save-delay (debugDelay) for n keys: a positive
// value sleeps that many microseconds per key, a negative -N sleeps one
// microsecond with probability 1/N per key.
func saveKeyDelay(delay int64, n int) {
	var us int64
	if delay > 0 {
		us = delay * int64(n)
	} else {
		for range n {
			if rand.Int64N(-delay) == 0 {
				us++
			}
		}
	}
	if us > 0 {
		time.Sleep(time.Duration(us) * time.Microsecond)
	}
}

// serverRootDir is the working directory, for Redis's save error texts.
func serverRootDir() string {
	if wd, err := os.Getwd(); err == nil {
		return wd
	}
	return "unknown"
}

// syscallText is strerror's text for an I/O error ("Permission denied").
func syscallText(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		t := errno.Error()
		return strings.ToUpper(t[:1]) + t[1:]
	}
	return err.Error()
}

// loadRDBAtStartup loads dir/dbfilename if it exists (loadDataFromDisk).
// A file that does not load stops the server, as in Redis, whose words the
// log repeats (the test suites and operators look for them): a file that
// cannot be read is a "Fatal error loading the DB", a checksum mismatch a
// "Wrong RDB checksum" then an "RDB CRC error", a truncated file a "Short
// read"; the error returned is ErrDataNotLoaded, already logged.
func (s *Server) loadRDBAtStartup() error {
	if s.loadsAsReplica(true) {
		// Logically expired keys stay until the master's DEL: the store
		// must not expire them before the replication link starts.
		s.ks.SetReplicaMode(true)
	}
	err := s.loadRDB(true, true)
	if err == nil || errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var crc *rdb.FileChecksumError
	var pathErr *fs.PathError
	switch {
	case errors.As(err, &pathErr):
		msg := pathErr.Err.Error()
		if msg != "" {
			msg = strings.ToUpper(msg[:1]) + msg[1:] // strerror's capital
		}
		s.log.Warn(fmt.Sprintf("Fatal error loading the DB: %s. Exiting.", msg))
	case errors.As(err, &crc):
		s.log.Warn(fmt.Sprintf("Wrong RDB checksum expected: (%x) but got (%x). Aborting now.", crc.Expected, crc.Got))
		s.reportRDBError("RDB CRC error", err)
	case errors.Is(err, rdb.ErrShortRead):
		s.log.Warn("Short read or OOM loading DB. Unrecoverable error, aborting now.")
		s.reportRDBError("Unexpected EOF reading RDB file", err)
	default:
		reason := err
		if inner := errors.Unwrap(err); inner != nil {
			reason = inner
		}
		s.reportRDBError(strings.TrimPrefix(reason.Error(), "rdb: "), err)
	}
	return ErrDataNotLoaded
}

// ErrDataNotLoaded is LoadData's error for a data set that could not be
// loaded; the reason is already in the log.
var ErrDataNotLoaded = errors.New("the data set could not be loaded")

// reportRDBError logs rdbReportError's line and the outcome.
func (s *Server) reportRDBError(reason string, err error) {
	s.log.Warn("Internal error in RDB reading offset 0 -> "+reason, zap.Error(err))
	s.log.Warn("Terminating server after rdb file reading failure.")
}

// putLoadedKey stores one key read from an RDB file, under its slot lock,
// with its expiry and access figures; with failOnDuplicate a key that
// exists already fails (errDuplicateKey), else it is replaced.
func (s *Server) putLoadedKey(k *rdb.LoadedKey, failOnDuplicate bool) error {
	if k.DB < 0 || k.DB >= s.ks.NumDBs() {
		return fmt.Errorf("key %q is in database %d, the server has %d", k.Key, k.DB, s.ks.NumDBs())
	}
	db := s.ks.DB(k.DB)
	slot := slots.KeySlot(k.Key)
	db.Lock(slot)
	defer db.Unlock(slot)
	if failOnDuplicate && db.Lookup(k.Key, store.LookupNoStats|store.LookupNoTouch) != nil {
		return fmt.Errorf("%w %q", errDuplicateKey, k.Key)
	}
	e := k.Obj.SetIn(db, k.Key)
	if k.ExpireAt != 0 {
		db.SetExpire(k.Key, e, k.ExpireAt)
	}
	s.ks.RestoreAccess(e, k.IdleSecs, int64(k.Freq))
	return nil
}

// errDuplicateKey is a loaded key that already exists, without MERGE.
var errDuplicateKey = errors.New("duplicate key")

// loadsAsReplica reports whether this node loads its data as a replica
// (Redis's !iAmMaster() in rdbLoad): at start-up, per the replicaof
// directive or, in cluster mode, per nodes.conf; later, per its role.
func (s *Server) loadsAsReplica(startup bool) bool {
	switch {
	case !startup:
		return s.repl.proxy.Load()
	case s.cluster != nil:
		return s.cluster.Myself().Master != ""
	}
	_, _, ok := s.cfg.ReplicaOf()
	return ok
}

// loadRDB adds the keys of dir/dbfilename to the keyspace, each under its
// slot lock. A key that exists already is replaced when merge is set and
// fails the load otherwise. A master drops keys that expired while the
// file lay on disk; a replica keeps them until its master's DEL, as Redis
// does (they are logically expired to its readers meanwhile).
func (s *Server) loadRDB(merge, startup bool) error {
	path := s.rdbPath()
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	start := time.Now()
	now := s.ks.Now()
	dropExpired := !s.loadsAsReplica(startup)
	// A master starting up from the file feeds a DEL for each key it
	// drops into a new backlog, which restoreSaveInfo places after the
	// file's offset, so replicas continuing from the file drop them too.
	feedExpired := startup && dropExpired
	if feedExpired {
		s.repl.m.StartLoadFeed()
	}
	keys, expired := 0, 0
	var libs []*functionLib
	loadFunction := func(code []byte) error {
		lib, errMsg := s.tx.functions.compileLibrary(s, code)
		if errMsg != "" {
			return errors.New(errMsg)
		}
		libs = append(libs, lib)
		return nil
	}
	loadKey := func(k *rdb.LoadedKey) error {
		if k.ExpireAt != 0 && k.ExpireAt <= now {
			expired++
			if dropExpired {
				if feedExpired {
					s.repl.m.Propagate(k.DB, [][][]byte{{[]byte("DEL"), k.Key}})
				}
				return nil
			}
		}
		if err := s.putLoadedKey(k, !merge); err != nil {
			return err
		}
		keys++
		s.loadedKey(k.Offset)
		return nil
	}
	var rsi replSaveInfo
	stopLoading := s.startLoading(int64(len(data)))
	loaded := s.quietLoad() // no "new" events (node/notify.go)
	err = rdb.LoadFileWith(data, command.RDBLimits(s.cfg), rdb.FileHandlers{Key: loadKey, Function: loadFunction, Aux: rsi.aux})
	loaded()
	stopLoading()
	if err == nil && len(libs) > 0 {
		// Libraries that exist already fail the load unless merging.
		if errMsg := s.tx.functions.install(libs, merge, false); errMsg != "" {
			err = errors.New(errMsg)
		}
	}
	if err != nil {
		return fmt.Errorf("loading %s: %w", path, err)
	}
	if startup {
		s.repl.restoreSaveInfo(rsi, !dropExpired)
	}
	s.rdbSave.loadedKeys.Store(int64(keys))
	s.rdbSave.loadedExpired.Store(int64(expired))
	s.log.Info("DB loaded from disk", zap.String("path", path), zap.Int("keys", keys),
		zap.Int("expired", expired), zap.Duration("took", time.Since(start)))
	return nil
}

// debugReload is DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]: save, empty the
// keyspace and the function libraries, load the file back. It runs with the
// execution gate closed, so no other client's command interleaves (Redis is
// single-threaded).
func debugReload(c *Client, args [][]byte) {
	flush, save, merge := true, true, false
	for _, a := range args[2:] {
		switch {
		case command.ArgIs(a, "merge"):
			merge = true
		case command.ArgIs(a, "noflush"):
			flush = false
		case command.ArgIs(a, "nosave"):
			save = false
		default:
			c.Error("ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.")
			return
		}
	}
	s := c.srv
	release := c.closeGate()
	defer release()
	if save {
		if err := s.saveRDB(c); err != nil {
			c.Error("ERR")
			return
		}
	}
	if flush {
		s.ks.FlushAll()
		s.tx.functions.install(nil, true, true) // emptyData clears functions too
	}
	if err := s.loadRDB(merge || flush, false); err != nil {
		s.log.Warn("DEBUG RELOAD failed", zap.Error(err))
		c.Error("ERR Error trying to load the RDB dump")
		return
	}
	s.log.Warn("DB reloaded by DEBUG RELOAD")
	c.OK()
}

// SAVE
func cmdSave(c *Client, args [][]byte) {
	if c.srv.rdbSave.bgRunning.Load() {
		c.Error("ERR Background save already in progress")
		return
	}
	st := &c.srv.rdbSave
	st.statSaves.Add(1)
	err := c.srv.saveRDB(c)
	if err != nil {
		c.Error("ERR")
		return
	}
	c.OK()
}

// BGSAVE [SCHEDULE]: the save runs on its own goroutine; SHUTDOWN waits
// for it. Inside EXEC it is scheduled for the cron, as Redis does.
func cmdBgsave(c *Client, args [][]byte) {
	if len(args) > 2 || (len(args) == 2 && !command.ArgEquals(args[1], "schedule")) {
		c.ErrSyntax()
		return
	}
	s := c.srv
	switch {
	case s.rdbSave.bgRunning.Load():
		c.Error("ERR Background save already in progress")
	case c.inExec || (len(args) == 2 && s.aof.rewriting.Load()):
		s.rdbSave.scheduled.Store(true)
		c.Status("Background saving scheduled")
	case s.aof.rewriting.Load(): // Redis's AOF child (node/aof.go)
		c.Error("ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.")
	case s.backgroundSave(): // node/persistence.go
		c.Status("Background saving started")
	default:
		c.Error("ERR Background save already in progress")
	}
}

// LASTSAVE
func cmdLastsave(c *Client, args [][]byte) { c.Int(c.srv.lastSaveTime()) }
