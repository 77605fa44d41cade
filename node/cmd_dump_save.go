package node

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/shoal-db/shoal/rdb"
	"github.com/shoal-db/shoal/slots"
	"github.com/shoal-db/shoal/store"
)

// SAVE, BGSAVE and LASTSAVE write an RDB file (package rdb's FileWriter)
// without forking: the keyspace is walked slot by slot, each slot under its
// own lock, so writes to other slots go on meanwhile. The file is
// therefore consistent per slot, not a single point-in-time snapshot of the
// whole dataset (Redis's fork gives the latter); a multi-key write that
// spans slots may be half in a file. At start-up dir/dbfilename is loaded
// if it exists.

// rdbSaveState is the server's persistence state.
type rdbSaveState struct {
	mu         sync.Mutex // held while a save runs (SAVE, BGSAVE)
	bgRunning  atomic.Bool
	lastSave   atomic.Int64 // unix seconds of the last successful save; 0 = start-up time
	lastFailed atomic.Bool  // the last background save failed
	saves      atomic.Int64 // counts saves, to name temporary files
}

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
// file renamed into place (rdbSave). The caller holds s.rdbSave.mu.
func (s *Server) saveRDB() error {
	start := time.Now()
	path := s.rdbPath()
	tmp := filepath.Join(filepath.Dir(path), fmt.Sprintf("temp-%d-%d.rdb", os.Getpid(), s.rdbSave.saves.Add(1)))
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // a no-op once renamed
	bw := bufio.NewWriterSize(f, 1<<20)
	fw := rdb.NewFileWriter(bw,
		[2]string{"redis-ver", Version},
		[2]string{"redis-bits", "64"},
		[2]string{"ctime", fmt.Sprint(time.Now().Unix())},
		[2]string{"aof-base", "0"},
	)
	for _, l := range s.tx.functions.sortedLibs() {
		fw.Function(l.code)
	}
	dbs, _, _ := s.ks.Stats()
	keys := 0
	for _, st := range dbs {
		db := s.ks.DB(st.ID)
		fw.SelectDB(st.ID, uint64(st.Keys), uint64(st.Expires))
		for slot := 0; slot < store.NumSlots; slot++ {
			db.ScanSlot(uint16(slot), func(e *store.Entry) bool {
				fw.Entry(e)
				keys++
				return true
			})
		}
	}
	err = fw.Finish()
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		s.log.Warn("RDB save failed", zap.String("path", path), zap.Error(err))
		return err
	}
	s.rdbSave.lastSave.Store(time.Now().Unix())
	s.log.Info("DB saved on disk", zap.String("path", path), zap.Int("keys", keys), zap.Duration("took", time.Since(start)))
	return nil
}

// loadRDBAtStartup loads dir/dbfilename if it exists (loadDataFromDisk).
// A file that does not load stops the server, as in Redis.
func (s *Server) loadRDBAtStartup() error {
	if s.loadsAsReplica(true) {
		// Logically expired keys stay until the master's DEL: the store
		// must not expire them before the replication link starts.
		s.ks.SetReplicaMode(true)
	}
	err := s.loadRDB(true, true)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
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
		if k.DB >= s.ks.NumDBs() {
			return fmt.Errorf("key %q is in database %d, the server has %d", k.Key, k.DB, s.ks.NumDBs())
		}
		if k.ExpireAt != 0 && k.ExpireAt <= now {
			expired++
			if dropExpired {
				return nil
			}
		}
		db := s.ks.DB(k.DB)
		slot := slots.KeySlot(k.Key)
		db.Lock(slot)
		defer db.Unlock(slot)
		if !merge && db.Lookup(k.Key, store.LookupNoStats|store.LookupNoTouch) != nil {
			return fmt.Errorf("%w %q", errDuplicateKey, k.Key)
		}
		e := k.Obj.SetIn(db, k.Key)
		if k.ExpireAt != 0 {
			db.SetExpire(k.Key, e, k.ExpireAt)
		}
		if k.IdleSecs >= 0 {
			s.ks.SetIdleMillis(e, k.IdleSecs*1000)
		}
		keys++
		return nil
	}
	err = rdb.LoadFileWith(data, rdbLimits(s.cfg), rdb.FileHandlers{Key: loadKey, Function: loadFunction})
	if err == nil && len(libs) > 0 {
		// Libraries that exist already fail the load unless merging.
		if errMsg := s.tx.functions.install(libs, merge, false); errMsg != "" {
			err = errors.New(errMsg)
		}
	}
	if err != nil {
		return fmt.Errorf("loading %s: %w", path, err)
	}
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
		case argIs(a, "merge"):
			merge = true
		case argIs(a, "noflush"):
			flush = false
		case argIs(a, "nosave"):
			save = false
		default:
			c.Error("ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.")
			return
		}
	}
	s := c.srv
	release := c.closeGate()
	defer release()
	s.rdbSave.mu.Lock()
	defer s.rdbSave.mu.Unlock()
	if save {
		if err := s.saveRDB(); err != nil {
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
	st.mu.Lock()
	err := c.srv.saveRDB()
	st.mu.Unlock()
	if err != nil {
		c.Error("ERR")
		return
	}
	c.OK()
}

// BGSAVE [SCHEDULE]: the save runs on its own goroutine; SHUTDOWN waits
// for it.
func cmdBgsave(c *Client, args [][]byte) {
	if len(args) > 2 || (len(args) == 2 && !argEquals(args[1], "schedule")) {
		c.ErrSyntax()
		return
	}
	s := c.srv
	if !s.rdbSave.bgRunning.CompareAndSwap(false, true) {
		c.Error("ERR Background save already in progress")
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.rdbSave.bgRunning.Store(false)
		s.rdbSave.mu.Lock()
		defer s.rdbSave.mu.Unlock()
		s.rdbSave.lastFailed.Store(s.saveRDB() != nil)
	}()
	c.Status("Background saving started")
}

// LASTSAVE
func cmdLastsave(c *Client, args [][]byte) { c.Int(c.srv.lastSaveTime()) }
