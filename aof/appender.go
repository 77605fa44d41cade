package aof

import (
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-db/shoal/resp"
)

// Appender writes the write-effect feed to the current incr file.
//
// Propagate (the feed consumer, called by writers under their slot locks)
// only encodes into a buffer. The buffer reaches the file in one of two
// ways: a client about to send its replies calls WaitWritten or WaitSynced
// with the offset it must see on disk, and whichever client gets the file
// first writes everything buffered so far (and, for appendfsync always,
// fsyncs it), so one write and one fsync cover every client waiting (group
// commit); or the background loop (Run) writes what nobody waited for and
// does appendfsync everysec's fsync once a second.
//
// Offsets are bytes ever appended since the Appender was made, across
// files: appended ≥ written ≥ synced.
type Appender struct {
	mu         sync.Mutex // buf, selDB, lastTS; appended is stored under it
	buf        []byte
	selDB      int
	timestamps atomic.Bool
	lastTS     int64
	appended   atomic.Int64

	writes group // the rounds of WaitWritten
	syncs  group // the rounds of WaitSynced

	syncMu sync.Mutex // one fsync at a time; taken before wmu
	wmu    sync.Mutex // the file and its writes
	f      *os.File
	spare  []byte
	// fileSize is the current incr file's size (aof_last_incr_size).
	fileSize atomic.Int64
	written  atomic.Int64
	synced   atomic.Int64
	// writeFailed is aof_last_write_status err: a write failed and its
	// bytes wait in the buffer for the next try.
	writeFailed atomic.Bool
	lastErr     atomic.Pointer[error]
	// fsyncing is aof_pending_bio_fsync: the background fsync runs.
	fsyncing atomic.Bool
	// lastFsync is the unix second of the last fsync (aof_last_fsync).
	lastFsync atomic.Int64
	// flushSleep is DEBUG AOF-FLUSH-SLEEP: microseconds slept before each
	// write of the buffer (a test widens the window between a write and
	// the replies that must wait for it).
	flushSleep atomic.Int64
	// written bytes since the appender started (aof_current_size grows by
	// them).
	bytesWritten atomic.Int64
}

// NewAppender starts appending to f, whose current size is size. The
// first command written is preceded by a SELECT.
func NewAppender(f *os.File, size int64) *Appender {
	a := &Appender{f: f, selDB: -1}
	a.writes.progress = a.appended.Load
	a.syncs.progress = a.appended.Load
	a.syncs.pollFor = networkPoll
	a.fileSize.Store(size)
	a.lastFsync.Store(time.Now().Unix())
	return a
}

// SetFlushSleep is DEBUG AOF-FLUSH-SLEEP <microseconds>.
func (a *Appender) SetFlushSleep(us int64) { a.flushSleep.Store(us) }

// SetTimestamps turns the "#TS:<unix>" annotations on or off
// (aof-timestamp-enabled).
func (a *Appender) SetTimestamps(on bool) { a.timestamps.Store(on) }

// Propagate is the effect-feed consumer: the commands, preceded by a
// SELECT when the database changes and, with timestamps, by "#TS:<unix>"
// when the second changed, are appended to the buffer. It never blocks on
// I/O.
func (a *Appender) Propagate(db int, cmds [][][]byte) {
	a.mu.Lock()
	start := len(a.buf)
	if a.timestamps.Load() {
		if now := time.Now().Unix(); now > a.lastTS {
			a.lastTS = now
			a.buf = append(a.buf, "#TS:"...)
			a.buf = strconv.AppendInt(a.buf, now, 10)
			a.buf = append(a.buf, "\r\n"...)
		}
	}
	if db != a.selDB {
		a.buf = resp.AppendCommand(a.buf, "SELECT", strconv.Itoa(db))
		a.selDB = db
	}
	for _, argv := range cmds {
		a.buf = resp.AppendCommand(a.buf, argv...)
	}
	a.selDB = resp.SelectedAfter(db, cmds)
	a.appended.Add(int64(len(a.buf) - start))
	a.mu.Unlock()
}

// AppendRaw appends bytes as they are (a timestamp annotation written at
// the start of a file).
func (a *Appender) AppendRaw(p []byte) {
	a.mu.Lock()
	a.buf = append(a.buf, p...)
	a.appended.Add(int64(len(p)))
	a.mu.Unlock()
}

// Appended is the offset of everything Propagate was given so far.
func (a *Appender) Appended() int64 { return a.appended.Load() }

// Written is the offset written to the file (write(2) done).
func (a *Appender) Written() int64 { return a.written.Load() }

// Synced is the offset an fsync covered.
func (a *Appender) Synced() int64 { return a.synced.Load() }

// Buffered is aof_buffer_length: bytes appended not yet written.
func (a *Appender) Buffered() int64 { return a.appended.Load() - a.written.Load() }

// FileSize is the current incr file's size.
func (a *Appender) FileSize() int64 { return a.fileSize.Load() }

// BytesWritten is what the appender wrote to its files so far.
func (a *Appender) BytesWritten() int64 { return a.bytesWritten.Load() }

// WriteFailed reports aof_last_write_status err and the error.
func (a *Appender) WriteFailed() (bool, error) {
	if !a.writeFailed.Load() {
		return false, nil
	}
	if p := a.lastErr.Load(); p != nil {
		return true, *p
	}
	return true, nil
}

// FsyncInProgress is aof_pending_bio_fsync.
func (a *Appender) FsyncInProgress() bool { return a.fsyncing.Load() }

// WaitWritten returns once everything up to off is written to the file
// (everysec and no: what a client saw acknowledged survives the process
// being killed). The error is a write error; its bytes stay buffered.
func (a *Appender) WaitWritten(off int64) error {
	return a.writes.wait(func() bool { return a.written.Load() >= off }, a.Flush)
}

// WaitSynced returns once everything up to off is written and fsynced
// (appendfsync always). One caller at a time writes and fsyncs all that
// is buffered; the others wait for that round and return when it covered
// them (group commit), all woken at once.
func (a *Appender) WaitSynced(off int64) error {
	return a.syncs.wait(func() bool { return a.synced.Load() >= off }, a.syncAll)
}

// syncAll writes the buffer and fsyncs the file.
func (a *Appender) syncAll() error {
	a.syncMu.Lock()
	defer a.syncMu.Unlock()
	a.wmu.Lock()
	err := a.flushLocked()
	end, f := a.written.Load(), a.f
	a.wmu.Unlock()
	if err != nil {
		return err
	}
	// The clients of the round wait for this fsync; the others would only
	// run their batches meanwhile to join the next round.
	if err := fdatasyncHolding(f); err != nil {
		return err
	}
	a.synced.Store(end)
	a.lastFsync.Store(time.Now().Unix())
	return nil
}

// group runs one round of work at a time for callers waiting for a
// condition: a caller whose condition does not hold starts a round, or
// waits for the running one and looks again. Waiters sleep on the round's
// channel, so its end wakes them all at once rather than one by one
// through a mutex.
//
// A round's leader first lets the other runnable clients run (collect)
// until they stop appending, so one write (and fsync) covers them all, as
// Redis's one write and fsync per event-loop iteration covers every client
// it served in it. Without it the first client back from a round started
// the next one with its own batch alone: under appendfsync always 4,487
// fsyncs for 300k pipelined SETs (Redis: 571) and under everysec one
// write per batch.
type group struct {
	mu      sync.Mutex
	running *round
	// progress is the appended offset: collect yields while it grows.
	progress func() int64
	// pollFor (appendfsync always's rounds: networkPoll; 0 never): a
	// round with fewer members than the last one waits up to this long,
	// once, for the others to join before its work (collect says why).
	pollFor     time.Duration
	lastMembers int         // the last round's members (its leader sets it)
	pollTimer   *time.Timer // awaitMembers's, used by one leader at a time
}

// collectYields bounds the leader's yields: each lets every client that
// was runnable run its batch.
const collectYields = 8

// networkPoll bounds how long a leader waits for the network: the
// runtime checks the network while the leader sleeps, and wakes it at the
// first poll after this time (it waits for the network with millisecond
// granularity, so up to a millisecond when no data arrives).
const networkPoll = 20 * time.Microsecond

// collect yields the processor until a yield sees no new append (or
// collectYields times): the clients that were runnable have appended and
// wait for this round.
//
// A yield does not look at the network (the runtime polls it only when
// nothing is runnable), so the clients whose next batch is on its way,
// having just read the last round's replies, would miss this round, and
// the clients split into groups that take turns at the disk: SET -P 16
// with 50 clients made 28 batches per fsync (Redis 33). So a round with
// fewer members than the last one waits, once, until as many have joined
// (the last to join wakes the leader) or pollFor passes: ~40 batches
// per fsync. A steady load and a lone client never wait; a client that
// left costs one wait.
func (g *group) collect(r *round) {
	last := g.progress()
	polled := g.pollFor == 0
	for range collectYields {
		runtime.Gosched()
		if n := g.progress(); n != last {
			last = n
			continue
		}
		if polled {
			break
		}
		polled = true
		if !g.awaitMembers(r) {
			break
		}
	}
	g.mu.Lock()
	r.sealed = true
	g.lastMembers = r.members
	g.mu.Unlock()
}

// awaitMembers waits until r has as many members as the last round or
// pollFor passes; false when it already had them.
func (g *group) awaitMembers(r *round) bool {
	g.mu.Lock()
	if r.members >= g.lastMembers {
		g.mu.Unlock()
		return false
	}
	r.target = g.lastMembers
	r.full = make(chan struct{})
	g.mu.Unlock()
	if g.pollTimer == nil {
		g.pollTimer = time.NewTimer(g.pollFor)
	} else {
		g.pollTimer.Reset(g.pollFor)
	}
	select {
	case <-r.full:
		g.pollTimer.Stop()
	case <-g.pollTimer.C:
	}
	return true
}

type round struct {
	done chan struct{}
	err  error
	// members counts the callers the round is for: its leader and those
	// that joined while it collected (until sealed). full is closed when
	// members reach target (awaitMembers). Under group.mu.
	members int
	target  int
	full    chan struct{}
	sealed  bool
}

// join counts a caller that waits for r; g.mu is held.
func (r *round) join() {
	if r.sealed {
		return
	}
	r.members++
	if r.full != nil && r.members == r.target {
		close(r.full)
	}
}

func (g *group) wait(covered func() bool, work func() error) error {
	for !covered() {
		g.mu.Lock()
		if covered() {
			g.mu.Unlock()
			return nil
		}
		if r := g.running; r != nil {
			r.join()
			g.mu.Unlock()
			<-r.done
			if r.err != nil {
				return r.err
			}
			continue
		}
		r := &round{done: make(chan struct{}), members: 1}
		g.running = r
		g.mu.Unlock()
		g.collect(r)
		r.err = work()
		g.mu.Lock()
		g.running = nil
		g.mu.Unlock()
		close(r.done)
		if r.err != nil {
			return r.err
		}
	}
	return nil
}

// Flush writes what is buffered (flushAppendOnlyFile(1)).
func (a *Appender) Flush() error {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	return a.flushLocked()
}

// flushLocked writes the buffer to the file. A failed write keeps the
// bytes that did not reach the file in the buffer, ahead of what came
// since; a short write is first cut off the file (ftruncate), as Redis
// does, so the file never ends in half a command. The caller holds wmu.
func (a *Appender) flushLocked() error { return a.flushCut(false) }

// flushCut is flushLocked; with newFile the next command appended starts
// with a SELECT, decided in the same critical section that takes the
// buffer, so every byte encoded against the old file's database goes to
// the old file.
func (a *Appender) flushCut(newFile bool) error {
	a.mu.Lock()
	data, end := a.buf, a.appended.Load()
	a.buf = a.spare[:0]
	if newFile {
		a.selDB = -1
	}
	a.mu.Unlock()
	a.spare = nil
	if len(data) == 0 {
		a.spare = data
		return nil
	}
	if us := a.flushSleep.Load(); us > 0 {
		time.Sleep(time.Duration(us) * time.Microsecond)
	}
	n, err := a.f.Write(data)
	if err != nil && n > 0 {
		if terr := a.f.Truncate(a.fileSize.Load()); terr == nil {
			if _, serr := a.f.Seek(a.fileSize.Load(), 0); serr == nil {
				n = 0
			}
		}
	}
	if n > 0 {
		a.fileSize.Add(int64(n))
		a.bytesWritten.Add(int64(n))
	}
	if err != nil {
		// Put the unwritten bytes back in front of what came since.
		a.mu.Lock()
		rest := append(append([]byte(nil), data[n:]...), a.buf...)
		a.buf = rest
		a.mu.Unlock()
		a.written.Store(end - int64(len(data)-n))
		a.lastErr.Store(&err)
		a.writeFailed.Store(true)
		return err
	}
	a.written.Store(end)
	a.writeFailed.Store(false)
	if cap(data) <= 1<<20 {
		a.spare = data[:0]
	}
	return nil
}

// SyncInBackground is appendfsync everysec's fsync: when something was
// written since the last one, fsync the file (without holding up writers).
func (a *Appender) SyncInBackground() error {
	if a.synced.Load() >= a.written.Load() {
		return nil
	}
	a.syncMu.Lock()
	defer a.syncMu.Unlock()
	a.wmu.Lock()
	end, f := a.written.Load(), a.f
	a.wmu.Unlock()
	if a.synced.Load() >= end {
		return nil
	}
	a.fsyncing.Store(true)
	err := fdatasync(f)
	a.fsyncing.Store(false)
	if err != nil {
		return err
	}
	a.synced.Store(end)
	a.lastFsync.Store(time.Now().Unix())
	return nil
}

// LastFsync is the unix second of the last fsync.
func (a *Appender) LastFsync() int64 { return a.lastFsync.Load() }

// Switch makes f (of size size) the file written from now on: what is
// buffered goes to the old file first, the next command starts with a
// SELECT, and the old file is fsynced and closed — before Switch returns
// when syncOld (appendfsync always: the offsets already reported synced
// must stay true), else in the background. Callers make sure no
// Propagate runs concurrently when the cut must fall at one instant.
func (a *Appender) Switch(f *os.File, size int64, syncOld bool) error {
	a.syncMu.Lock()
	defer a.syncMu.Unlock()
	a.wmu.Lock()
	defer a.wmu.Unlock()
	err := a.flushCut(true)
	old := a.f
	a.f = f
	a.fileSize.Store(size)
	if syncOld {
		if serr := fdatasync(old); serr != nil && err == nil {
			err = serr
		}
		a.synced.Store(a.written.Load())
		_ = old.Close()
		return err
	}
	go func() {
		_ = fdatasync(old)
		_ = old.Close()
	}()
	return err
}

// Close writes what is buffered, fsyncs and closes the file
// (stopAppendOnly).
func (a *Appender) Close() error {
	a.syncMu.Lock()
	defer a.syncMu.Unlock()
	a.wmu.Lock()
	defer a.wmu.Unlock()
	err := a.flushLocked()
	if serr := fdatasync(a.f); serr == nil {
		a.synced.Store(a.written.Load())
	} else if err == nil {
		err = serr
	}
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	return err
}
