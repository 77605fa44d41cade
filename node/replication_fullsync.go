package node

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-db/shoal/rdb"
	"github.com/shoal-db/shoal/replication"
	"go.uber.org/zap"
)

// The master side of a full sync, as Redis's syncCommand and
// startBgsaveForReplication: a replica that cannot continue waits
// (wait_bgsave) until the fullSyncer takes a snapshot for it and the other
// replicas waiting then (snapshotRDB, fork-less, one instant S for the
// whole file). At S, with the execution gate closed and the master-link
// apply held, the replicas join the stream (replication.Master.
// StartStreamAt: their output starts exactly at S, held back while the RDB
// goes first), and the file's header gets repl-stream-db, repl-id and
// repl-offset. Then +FULLRESYNC <replid> S and the RDB:
//
//   - "$EOF:<40 random characters>" ... mark ("replicas sockets", Redis's
//     diskless sync) when repl-diskless-sync is yes and every replica of the
//     batch announced REPLCONF capa eof; the snapshot is written to their
//     sockets as it is produced, and the stream starts at the replica's first
//     REPLCONF ACK (nothing may follow the mark before the replica found it);
//   - "$<len>" and the file (disk-based sync) otherwise: the snapshot goes
//     to a private temporary file in dir (temp-repl-<pid>-<n>.rdb, removed
//     once sent; Redis writes dbfilename instead — shoal's sync file is not
//     a save: dump.rdb, LASTSAVE and the change count stay as they were),
//     then each replica gets it (send_bulk) and its stream at once.
//
// repl-diskless-sync-delay and -max-replicas act as in Redis: a diskless
// sync waits up to the delay for more replicas to share its snapshot, unless
// the batch reaches max-replicas. A replica that asks while a snapshot runs
// waits for the next one (Redis can attach a replica to a running disk-based
// BGSAVE; shoal takes another snapshot, one at a time). Replicas waiting
// for their RDB get a newline a second, as Redis's replicationCron sends.
// REPLCONF rdb-only 1 (redis-cli --rdb) gets the RDB and is closed;
// REPLCONF rdb-filter-only (redis-cli --replica, --functions-rdb) gets a
// file without keys (and without functions unless asked), over the socket.

// syncFilter is REPLCONF rdb-filter-only: what the RDB leaves out.
type syncFilter uint8

const (
	filterExcludeData      syncFilter = 1
	filterExcludeFunctions syncFilter = 2
)

// syncRequest is one replica waiting for a full sync.
type syncRequest struct {
	link    *replication.Link
	name    string // ip:port, for the log
	eof     bool   // REPLCONF capa eof
	oldSync bool   // SYNC: no +FULLRESYNC line
	filter  syncFilter
	since   time.Time // when it asked (repl-diskless-sync-delay)
}

// fullSyncer serves the replicas waiting for a full sync, one snapshot at a
// time, on its own goroutine (run).
type fullSyncer struct {
	r    *replState
	wake chan struct{} // cap 1: a replica asked

	mu      sync.Mutex
	waiting []*syncRequest
	// presync are the links owed keep-alive newlines: waiting, or in a
	// disk-based sync whose file is being written.
	presync map[*replication.Link]struct{}

	tmpSeq atomic.Int64 // numbers the temporary sync files
	// running is set while a sync's snapshot is produced (INFO's
	// rdb_bgsave_in_progress, as Redis's replication BGSAVE child).
	running atomic.Bool
}

func newFullSyncer(r *replState) *fullSyncer {
	return &fullSyncer{r: r, wake: make(chan struct{}, 1), presync: map[*replication.Link]struct{}{}}
}

// enqueue adds a replica that needs a full sync.
func (f *fullSyncer) enqueue(req *syncRequest) {
	f.mu.Lock()
	f.waiting = append(f.waiting, req)
	f.presync[req.link] = struct{}{}
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// run serves waiting replicas until stop is closed.
func (f *fullSyncer) run(stop <-chan struct{}) {
	var timer *time.Timer
	for {
		batch, wait := f.take(time.Now())
		if batch != nil {
			f.sync(batch)
			continue
		}
		var timeout <-chan time.Time
		if wait > 0 {
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			timeout = timer.C
		}
		select {
		case <-stop:
			return
		case <-f.wake:
		case <-timeout:
		}
		if timer != nil && !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// keepAlive writes a newline a second to the replicas waiting for their
// RDB, until stop is closed. Like Redis's replicationCron it does not run
// while the execution gate is closed (DEBUG SLEEP, a busy script): a
// replica then sees its master silent.
func (f *fullSyncer) keepAlive(stop <-chan struct{}) {
	var links []*replication.Link
	f.r.s.crons.keepAlive.run(stop, func() {
		if f.r.s.tx.gate.closed.Load() {
			return
		}
		f.mu.Lock()
		links = links[:0]
		for l := range f.presync {
			links = append(links, l)
		}
		f.mu.Unlock()
		for _, l := range links {
			l.KeepAlive() // a no-op once its RDB transfer started
		}
	})
}

// take returns the next batch to serve, or how long to wait before asking
// again (0: until a replica asks). A batch is the waiting replicas with
// the first one's filter (Redis's slave_req); a diskless batch starts once
// its oldest replica waited repl-diskless-sync-delay or it has
// repl-diskless-sync-max-replicas replicas.
func (f *fullSyncer) take(now time.Time) ([]*syncRequest, time.Duration) {
	cfg := f.r.s.cfg
	f.mu.Lock()
	defer f.mu.Unlock()
	live := f.waiting[:0]
	for _, w := range f.waiting {
		if w.link.Closed() {
			delete(f.presync, w.link)
			continue
		}
		live = append(live, w)
	}
	clear(f.waiting[len(live):])
	f.waiting = live
	if len(live) == 0 {
		return nil, 0
	}
	diskless := cfg.Bool("repl-diskless-sync")
	delay := time.Duration(cfg.Int("repl-diskless-sync-delay")) * time.Second
	maxReplicas := cfg.Int("repl-diskless-sync-max-replicas")
	filter := live[0].filter
	oldest := now
	n, startNow := 0, false
	for _, w := range live {
		if w.filter != filter {
			continue
		}
		n++
		if w.since.Before(oldest) {
			oldest = w.since
		}
		// Redis starts at once a sync that will not be diskless.
		startNow = startNow || !diskless || !w.eof || delay <= 0
	}
	if !startNow && !(maxReplicas > 0 && int64(n) >= maxReplicas) && now.Sub(oldest) < delay {
		return nil, oldest.Add(delay).Sub(now)
	}
	batch := make([]*syncRequest, 0, n)
	rest := live[:0]
	for _, w := range live {
		if w.filter == filter {
			batch = append(batch, w)
		} else {
			rest = append(rest, w)
		}
	}
	clear(f.waiting[len(rest):])
	f.waiting = rest
	return batch, 0
}

// errReplicasGone stops a snapshot no replica is left to receive.
var errReplicasGone = errors.New("every replica of the sync disconnected")

// sync serves one batch: one snapshot, to the sockets or to a file.
func (f *fullSyncer) sync(batch []*syncRequest) {
	s := f.r.s
	socket := batch[0].filter != 0 || s.cfg.Bool("repl-diskless-sync")
	for _, req := range batch {
		socket = socket && req.eof
	}
	target := "disk"
	if socket {
		target = "replicas sockets"
	}
	s.log.Info("Starting BGSAVE for SYNC with target: " + target)
	f.running.Store(true)
	defer f.running.Store(false)
	links := make([]*replication.Link, len(batch))
	for i, req := range batch {
		links[i] = req.link
	}
	cancelled := func() bool {
		for _, l := range links {
			if !l.Closed() {
				return false
			}
		}
		return true
	}
	// atStart runs at the snapshot's instant, with the gate closed and the
	// master-link apply held (on a replica, a command applied but not yet
	// forwarded would be in the data and not before the offset).
	var replID string
	var offset int64
	atStart := func() [][2]string {
		var db int
		replID, offset, db = f.r.m.StartStreamAt(links)
		return [][2]string{{"repl-stream-db", strconv.Itoa(db)}, {"repl-id", replID},
			{"repl-offset", strconv.FormatInt(offset, 10)}, {"aof-base", "0"}}
	}
	// fullResync is the reply each replica gets first, once S is known.
	fullResync := func(req *syncRequest) []byte {
		if req.oldSync {
			return nil
		}
		return []byte("+FULLRESYNC " + replID + " " + strconv.FormatInt(offset, 10) + "\r\n")
	}
	produce := func(w io.Writer) error {
		if batch[0].filter != 0 {
			return f.filteredRDB(w, batch[0].filter, atStart)
		}
		_, err := s.snapshotRDB(nil, w, syncFileAux(), atStart, cancelled)
		return err
	}
	if socket {
		f.syncSockets(batch, produce, fullResync)
	} else {
		f.syncDisk(batch, produce, fullResync)
	}
}

// replTimeout is repl-timeout, the bound of one write to a replica.
func (f *fullSyncer) replTimeout() time.Duration {
	return time.Duration(f.r.s.cfg.Int("repl-timeout")) * time.Second
}

// syncSockets writes the snapshot to every replica's socket as it is
// produced (diskless), with an EOF mark.
func (f *fullSyncer) syncSockets(batch []*syncRequest, produce func(io.Writer) error, fullResync func(*syncRequest) []byte) {
	s := f.r.s
	var m [20]byte
	_, _ = rand.Read(m[:])
	mark := hex.EncodeToString(m[:])
	fan := &syncFanout{batch: batch, timeout: f.replTimeout(), head: func(req *syncRequest) []byte {
		return append(fullResync(req), "$EOF:"+mark+"\r\n"...)
	}}
	err := produce(fan) // newlines stop at each link's first RDB byte
	f.endPresync(batch)
	if err == nil {
		_, err = fan.Write([]byte(mark))
	}
	for _, req := range batch {
		if err != nil || req.link.Closed() {
			req.link.Close()
			continue
		}
		if req.link.RDBOnly() {
			s.log.Info("RDB transfer completed, rdb only replica (" + req.name + ") should be disconnected asap")
			req.link.Close()
			continue
		}
		req.link.StartStreamOnAck()
		s.log.Info("Streamed RDB transfer with replica " + req.name +
			" succeeded (socket). Waiting for REPLCONF ACK from slave to enable streaming")
	}
	if err != nil {
		s.log.Warn("SYNC failed: the snapshot for the replicas failed", zap.Error(err))
	}
}

// syncFanout writes the snapshot to each replica of a diskless batch,
// after its head (+FULLRESYNC and the $EOF line). A replica whose write
// fails is dropped; the snapshot stops when none is left.
type syncFanout struct {
	batch   []*syncRequest
	head    func(*syncRequest) []byte
	timeout time.Duration
	started bool
}

func (w *syncFanout) Write(p []byte) (int, error) {
	alive := 0
	for _, req := range w.batch {
		if req.link.Closed() {
			continue
		}
		if !w.started {
			if req.link.WritePre(w.head(req), true, w.timeout) != nil {
				continue
			}
		}
		if req.link.WritePre(p, true, w.timeout) == nil {
			alive++
		}
	}
	w.started = true
	if alive == 0 {
		return 0, errReplicasGone
	}
	return len(p), nil
}

// syncDisk writes the snapshot to a temporary file in dir, then sends it
// to each replica with its length.
func (f *fullSyncer) syncDisk(batch []*syncRequest, produce func(io.Writer) error, fullResync func(*syncRequest) []byte) {
	s := f.r.s
	timeout := f.replTimeout()
	fail := func(err error) {
		s.log.Warn("SYNC failed: the snapshot for the replicas failed", zap.Error(err))
		f.endPresync(batch)
		for _, req := range batch {
			req.link.Close()
		}
	}
	path := filepath.Join(s.cfg.String("dir"), fmt.Sprintf("temp-repl-%d-%d.rdb", os.Getpid(), f.tmpSeq.Add(1)))
	file, err := os.Create(path)
	if err != nil {
		fail(err)
		return
	}
	w := &firstWriteHook{w: file, first: func() {
		// +FULLRESYNC goes when the snapshot starts, as Redis's
		// replicationSetupSlaveForFullResync; newlines follow until the
		// file is ready.
		for _, req := range batch {
			if line := fullResync(req); line != nil && !req.link.Closed() {
				_ = req.link.WritePre(line, false, timeout)
			}
		}
	}}
	err = produce(w)
	var size int64
	if err == nil {
		size, err = file.Seek(0, io.SeekCurrent)
	}
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		fail(err)
		return
	}
	s.log.Info("Background saving terminated with success", zap.Int64("bytes", size))
	f.endPresync(batch)
	var wg sync.WaitGroup
	for _, req := range batch {
		if req.link.Closed() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.sendFile(req, path, size, timeout)
		}()
	}
	go func() {
		wg.Wait()
		_ = os.Remove(path)
	}()
}

// sendFile sends a disk-based sync's file to one replica (send_bulk), then
// starts its stream (or closes an rdb-only replica).
func (f *fullSyncer) sendFile(req *syncRequest, path string, size int64, timeout time.Duration) {
	s := f.r.s
	l := req.link
	l.SetState("send_bulk")
	file, err := os.Open(path)
	if err != nil {
		s.log.Warn("SYNC failed. Can't open DB after BGSAVE", zap.Error(err))
		l.Close()
		return
	}
	defer file.Close()
	if l.WritePre([]byte("$"+strconv.FormatInt(size, 10)+"\r\n"), true, timeout) != nil {
		return
	}
	buf := make([]byte, 64<<10)
	for sent := int64(0); sent < size; {
		n, err := file.Read(buf)
		if n > 0 {
			if l.WritePre(buf[:n], true, timeout) != nil {
				return
			}
			sent += int64(n)
		}
		if err != nil && sent < size {
			s.log.Warn("Read error sending DB to replica", zap.Error(err))
			l.Close()
			return
		}
	}
	if l.RDBOnly() {
		s.log.Info("RDB transfer completed, rdb only replica (" + req.name + ") should be disconnected asap")
		l.Close()
		return
	}
	l.StartStream()
	s.log.Info("Synchronization with replica " + req.name + " succeeded")
}

// endPresync stops the keep-alive newlines of a batch's replicas.
func (f *fullSyncer) endPresync(batch []*syncRequest) {
	f.mu.Lock()
	for _, req := range batch {
		delete(f.presync, req.link)
	}
	f.mu.Unlock()
}

// firstWriteHook calls first before the first write to w.
type firstWriteHook struct {
	w     io.Writer
	first func()
}

func (h *firstWriteHook) Write(p []byte) (int, error) {
	if h.first != nil {
		h.first()
		h.first = nil
	}
	return h.w.Write(p)
}

// filteredRDB writes the file REPLCONF rdb-filter-only asks for: no keys,
// and the function libraries unless they are filtered out too. The
// instant (atStart) is taken with the execution gate closed, as a
// snapshot's.
func (f *fullSyncer) filteredRDB(w io.Writer, filter syncFilter, atStart func() [][2]string) error {
	s := f.r.s
	// The instant is taken as snapshotRDB takes it: gate closed, the
	// master-link apply held.
	release, applyLocked := s.closeGateForInstant(s.bindClient(&Client{srv: s}), nil, true)
	aux := append(syncFileAux(), atStart()...)
	var codes [][]byte
	if filter&filterExcludeFunctions == 0 {
		for _, l := range s.tx.functions.sortedLibs() {
			codes = append(codes, l.code)
		}
	}
	if applyLocked {
		s.repl.rep.UnlockApply()
	}
	s.snapshotMu.Unlock()
	release()
	fw := rdb.NewFileWriter(w, s.rdbEncoder(), aux...)
	for _, code := range codes {
		fw.Function(code)
	}
	return fw.Finish()
}

// syncFileAux is the head of a sync file's aux fields, as Redis's
// rdbSaveInfoAuxFields writes them before the replication ones.
func syncFileAux() [][2]string {
	return [][2]string{{"redis-ver", Version}, {"redis-bits", "64"}, {"ctime", strconv.FormatInt(time.Now().Unix(), 10)}}
}

// replicaName is how the log names a replica: its announced address.
func replicaName(ip string, port int) string {
	return net.JoinHostPort(ip, strconv.Itoa(port))
}
