package node

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/shoal-db/shoal/aof"
	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/rdb"
	"github.com/shoal-db/shoal/slots"
)

// Loading the AOF (loadAppendOnlyFiles): the base — an RDB image, or
// commands, or an RDB preamble followed by commands (the pre-7.0 single
// file) — then each incr file in order. Commands run through the command
// table as a connection-less client that skips the routing, READONLY,
// memory and MISCONF checks (as the master link does), with MULTI/EXEC
// honoured.

// aofLoadResult is loadSingleAppendOnlyFile's outcome.
type aofLoadResult int

const (
	aofLoadOK aofLoadResult = iota
	aofLoadNotExist
	aofLoadEmpty
	aofLoadOpenErr
	aofLoadFailed
	aofLoadTruncated
)

// loadAtStartup is loadDataFromDisk's AOF branch: the AOF is loaded
// instead of the RDB file whenever appendonly is yes (with no AOF yet the
// dataset starts empty and openAtStartup makes a base of it).
func (a *aofState) loadAtStartup() error {
	start := time.Now()
	switch a.loadFiles(a.s.loadsAsReplica(true)) {
	case aofLoadFailed, aofLoadOpenErr:
		return ErrDataNotLoaded
	case aofLoadNotExist:
	default:
		a.s.log.Info(fmt.Sprintf("DB loaded from append only file: %.3f seconds", time.Since(start).Seconds()))
	}
	return nil
}

// upgradeOldStyle is aofUpgradePrepare: an appendfilename file in dir from
// a Redis before 7.0 becomes the base of a new manifest in the AOF
// directory.
func (a *aofState) upgradeOldStyle() error {
	old := filepath.Join(a.s.cfg.String("dir"), a.filename())
	if _, err := os.Stat(old); err != nil {
		return nil
	}
	m := a.manifest
	_, dirErr := os.Stat(a.dir())
	_, inDirErr := os.Stat(a.path(a.filename()))
	if !(dirErr != nil || m.Empty() ||
		(m.Base != nil && len(m.Incr) == 0 && m.Base.Name == a.filename() && inDirErr != nil)) {
		return nil
	}
	if err := os.MkdirAll(a.dir(), 0o755); err != nil {
		a.s.log.Warn(fmt.Sprintf("Can't open or create append-only dir %s: %s", a.s.cfg.String("appenddirname"), syscallText(err)))
		return err
	}
	m.Base = &aof.Info{Name: a.filename(), Seq: 1, Type: aof.TypeBase}
	m.BaseSeq = 1
	if err := aof.WriteManifest(a.dir(), a.filename(), m); err != nil {
		a.s.log.Warn(err.Error())
		return err
	}
	if err := os.Rename(old, a.path(a.filename())); err != nil {
		a.s.log.Warn(fmt.Sprintf("Error trying to move the old AOF file %s into dir %s: %s",
			a.filename(), a.s.cfg.String("appenddirname"), syscallText(err)))
		return err
	}
	a.s.log.Info(fmt.Sprintf("Successfully migrated an old-style AOF file (%s) into the AOF directory (%s).",
		a.filename(), a.s.cfg.String("appenddirname")))
	return nil
}

// loadFiles loads the files the manifest names, in order. While they
// load, nothing expires (Redis's keyIsExpired is false while loading): a
// PEXPIREAT in the past keeps the key for the commands after it, as the
// replica mode of the keyspace does for a master's stream; asReplica is
// the mode after the load.
func (a *aofState) loadFiles(asReplica bool) aofLoadResult {
	a.s.ks.SetReplicaMode(true)
	defer a.s.ks.SetReplicaMode(asReplica)
	if err := a.upgradeOldStyle(); err != nil {
		return aofLoadFailed
	}
	m := a.manifest
	if m.Empty() {
		return aofLoadNotExist
	}
	files := m.Files()
	var total int64
	for _, f := range files {
		st, err := os.Stat(a.path(f.Name))
		if err != nil {
			a.s.log.Warn(fmt.Sprintf("Unable to obtain the AOF file %s length. stat: %s", f.Name, syscallText(err)))
			return aofLoadFailed // named by the manifest but missing, or unreadable
		}
		total += st.Size()
	}
	if total == 0 {
		return aofLoadEmpty
	}
	// Clients connected meanwhile (DEBUG LOADAOF) get -LOADING, CONFIG SET
	// refuses the deny-loading directives, and INFO shows the progress
	// over all the files (node/loading.go).
	stopLoading := a.s.startLoading(total)
	defer stopLoading()
	var ret aofLoadResult
	var done int64 // bytes of the files already loaded
	for i, f := range files {
		last := i == len(files)-1
		start := time.Now()
		ret = a.loadFile(f.Name, done)
		done += a.fileSize(&f)
		kind := "incr"
		if f.Type == aof.TypeBase {
			kind = "base"
		}
		if ret == aofLoadOK || (ret == aofLoadTruncated && last) {
			a.s.log.Info(fmt.Sprintf("DB loaded from %s file %s: %.3f seconds", kind, f.Name, time.Since(start).Seconds()))
		}
		if ret == aofLoadEmpty && kind == "incr" {
			ret = aofLoadOK
		}
		if ret == aofLoadTruncated && !last {
			a.s.log.Warn("Fatal error: the truncated file is not the last file")
			return aofLoadFailed
		}
		if ret == aofLoadOpenErr || ret == aofLoadFailed {
			return ret
		}
	}
	a.sizeBase.Store(total)
	a.baseSize.Store(a.fileSize(m.Base))
	return ret
}

// loadFile is loadSingleAppendOnlyFile; progress is where the file
// starts in the load's total.
func (a *aofState) loadFile(name string, progress int64) aofLoadResult {
	s := a.s
	path := a.path(name)
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			s.log.Warn(fmt.Sprintf("The append log file %s doesn't exist: %s", name, syscallText(err)))
			return aofLoadNotExist
		}
		s.log.Warn(fmt.Sprintf("Fatal error: can't open the append log file %s for reading: %s", name, syscallText(err)))
		return aofLoadOpenErr
	}
	if len(data) == 0 {
		return aofLoadEmpty
	}
	pos := 0
	if bytes.HasPrefix(data, []byte("REDIS")) {
		oldStyle := name == a.filename()
		if oldStyle {
			s.log.Info("Reading RDB preamble from AOF file...")
		} else {
			s.log.Info("Reading RDB base file on AOF loading...")
		}
		n, err := s.loadRDBImage(data, progress)
		if err != nil {
			s.log.Warn("RDB image of the AOF did not load", zap.Error(err))
			if oldStyle {
				s.log.Warn(fmt.Sprintf("Error reading the RDB preamble of the AOF file %s, AOF loading aborted", name))
			} else {
				s.log.Warn(fmt.Sprintf("Error reading the RDB base file %s, AOF loading aborted", name))
			}
			if errors.Is(err, rdb.ErrShortRead) {
				return a.truncated(name, path, -1)
			}
			return aofLoadFailed
		}
		pos = n
		if oldStyle {
			s.log.Info("Reading the remaining AOF tail...")
		}
	}
	c := a.newLoadClient()
	// Where the last whole command ended, and where the open MULTI began
	// (Redis's valid_up_to and valid_before_multi).
	validUpTo, validBeforeMulti := pos, pos
	var unknown string
	valid, err := aof.ReadCommands(data, pos, func(args [][]byte, end int) error {
		spec, _ := s.table.lookup(args)
		if spec == nil {
			unknown = string(args[0])
			return errUnknownAOFCommand
		}
		if spec.FullName() == "multi" {
			validBeforeMulti = validUpTo
		}
		c.Out = c.Out[:0]
		c.startBatch()
		if c.multi != nil {
			c.run(cloneArgs(args)) // queued until EXEC
		} else {
			c.run(args)
		}
		c.Out = c.Out[:0]
		s.loadedAOFCommand(progress + int64(end)) // and key-load-delay, as debugDelay per command
		validUpTo = end
		return nil
	})
	switch {
	case errors.Is(err, errUnknownAOFCommand):
		s.log.Warn(fmt.Sprintf("Unknown command '%s' reading the append only file %s", unknown, name))
		return aofLoadFailed
	case errors.Is(err, aof.ErrFormat):
		s.log.Warn(fmt.Sprintf("Bad file format reading the append only file %s: make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>", name))
		return aofLoadFailed
	case errors.Is(err, aof.ErrTruncated):
		return a.truncated(name, path, valid)
	}
	if c.multi != nil {
		s.log.Warn("Revert incomplete MULTI/EXEC transaction in AOF file " + name)
		c.multi = nil
		return a.truncated(name, path, validBeforeMulti)
	}
	return aofLoadOK
}

var errUnknownAOFCommand = errors.New("unknown command in the AOF")

// truncated handles a file that ends inside a command: with
// aof-load-truncated it is cut after its last whole command and the load
// goes on, else the server refuses to start, with Redis's lines.
func (a *aofState) truncated(name, path string, validUpTo int) aofLoadResult {
	log := a.s.log
	if a.s.cfg.Bool("aof-load-truncated") {
		log.Warn(fmt.Sprintf("!!! Warning: short read while loading the AOF file %s!!!", name))
		log.Warn(fmt.Sprintf("!!! Truncating the AOF %s at offset %d !!!", name, validUpTo))
		if validUpTo == -1 {
			log.Warn("Last valid command offset is invalid")
		} else if err := os.Truncate(path, int64(validUpTo)); err != nil {
			log.Warn(fmt.Sprintf("Error truncating the AOF file %s: %s", name, syscallText(err)))
		} else {
			log.Warn(fmt.Sprintf("AOF %s loaded anyway because aof-load-truncated is enabled", name))
			return aofLoadTruncated
		}
	}
	log.Warn(fmt.Sprintf("Unexpected end of file reading the append only file %s. You can: "+
		"1) Make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>. "+
		"2) Alternatively you can set the 'aof-load-truncated' configuration option to yes and restart the server.", name))
	return aofLoadFailed
}

// newLoadClient is createAOFClient: a connection-less client whose
// replies are dropped, that never blocks, and that runs while the owner of
// the execution gate (DEBUG LOADAOF) or nobody (start-up) runs.
func (a *aofState) newLoadClient() *Client {
	s := a.s
	c := s.bindClient(&Client{srv: s, id: math.MaxInt64, created: time.Now(), authenticated: true,
		repl: &clientRepl{master: true}})
	c.Proto = 2
	c.multiLen.Store(-1)
	c.tx.exclusive = true
	c.bs.denyBlocking = true
	return c
}

// loadRDBImage loads the RDB image at the start of data into the
// keyspace (keys that exist are replaced) and returns its length. Keys
// already expired are loaded too, as Redis loads an AOF's RDB preamble:
// they expire once the load is over.
func (s *Server) loadRDBImage(data []byte, progress int64) (int, error) {
	var libs []*functionLib
	h := rdb.FileHandlers{
		Key: func(k *rdb.LoadedKey) error {
			if k.DB >= s.ks.NumDBs() {
				return fmt.Errorf("key %q is in database %d, the server has %d", k.Key, k.DB, s.ks.NumDBs())
			}
			db := s.ks.DB(k.DB)
			slot := slots.KeySlot(k.Key)
			db.Lock(slot)
			defer db.Unlock(slot)
			e := k.Obj.SetIn(db, k.Key)
			if k.ExpireAt != 0 {
				db.SetExpire(k.Key, e, k.ExpireAt)
			}
			s.ks.RestoreAccess(e, k.IdleSecs, int64(k.Freq))
			s.loadedKey(progress + k.Offset)
			return nil
		},
		Function: func(code []byte) error {
			lib, errMsg := s.tx.functions.compileLibrary(s, code)
			if errMsg != "" {
				return errors.New(errMsg)
			}
			libs = append(libs, lib)
			return nil
		},
	}
	n, err := rdb.LoadPrefixWith(data, command.RDBLimits(s.cfg), h)
	if err == nil && len(libs) > 0 {
		if errMsg := s.tx.functions.install(libs, true, false); errMsg != "" {
			err = errors.New(errMsg)
		}
	}
	return n, err
}

// ---------------------------------------------------------------- DEBUG

// debugAOFFlushSleep is DEBUG AOF-FLUSH-SLEEP <microseconds>: each write
// of the AOF buffer sleeps that long first (atoi's value, as Redis).
func debugAOFFlushSleep(c *Client, arg []byte) {
	a := c.srv.aof
	us := atoi(arg)
	a.flushSleep.Store(us)
	if app := a.app.Load(); app != nil {
		app.SetFlushSleep(us)
	}
	c.OK()
}

// debugLoadAOF is DEBUG LOADAOF: write what is buffered, empty the
// dataset, read the manifest again and load the AOF, with the execution
// gate closed. A load that fails stops the server, as in Redis.
func debugLoadAOF(c *Client) {
	s := c.srv
	a := s.aof
	release := c.closeGate()
	defer release()
	// mu keeps a rewrite from ending (and changing the manifest) meanwhile.
	a.mu.Lock()
	defer a.mu.Unlock()
	app := a.app.Load()
	if app != nil {
		if err := app.Flush(); err != nil {
			a.noteWriteError(err)
		}
		// The load's own writes must not reach the AOF it reads.
		s.RemoveEffectFeed(app)
		defer s.AddEffectFeed(app)
	}
	s.ks.FlushAll()
	s.tx.functions.install(nil, true, true)
	if err := a.loadManifest(); err != nil {
		os.Exit(1)
	}
	a.delHistoryLocked()
	if ret := a.loadFiles(s.loadsAsReplica(false)); ret != aofLoadOK && ret != aofLoadEmpty {
		s.log.Warn("DEBUG LOADAOF failed: exiting")
		os.Exit(1)
	}
	s.log.Warn("Append Only File loaded by DEBUG LOADAOF")
	c.OK()
}
