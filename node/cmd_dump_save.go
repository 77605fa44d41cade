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
	path := s.rdbPath()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	start := time.Now()
	now := s.ks.Now()
	keys, expired := 0, 0
	err = rdb.LoadFile(data, rdbLimits(s.cfg), func(k *rdb.LoadedKey) error {
		if k.DB >= s.ks.NumDBs() {
			return fmt.Errorf("key %q is in database %d, the server has %d", k.Key, k.DB, s.ks.NumDBs())
		}
		if k.ExpireAt != 0 && k.ExpireAt <= now {
			expired++ // a master drops keys that expired while it was down
			return nil
		}
		db := s.ks.DB(k.DB)
		slot := slots.KeySlot(k.Key)
		db.Lock(slot)
		var e *store.Entry
		if k.Obj.Type == store.TypeString {
			e = db.SetString(k.Key, k.Obj.Str, false)
		} else {
			e = db.SetValue(k.Key, k.Obj.Value)
		}
		if k.ExpireAt != 0 {
			db.SetExpire(k.Key, e, k.ExpireAt)
		}
		if k.IdleSecs >= 0 {
			s.ks.SetIdleMillis(e, k.IdleSecs*1000)
		}
		db.Unlock(slot)
		keys++
		return nil
	})
	if err != nil {
		return fmt.Errorf("loading %s: %w", path, err)
	}
	s.log.Info("DB loaded from disk", zap.String("path", path), zap.Int("keys", keys),
		zap.Int("expired", expired), zap.Duration("took", time.Since(start)))
	return nil
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
