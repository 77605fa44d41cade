package node

import (
	"encoding/binary"
	"errors"
	"io"
	"math"
	"sync"
	"time"

	"github.com/shoal-db/shoal/rdb"
	"github.com/shoal-db/shoal/store"
)

// snapshotRDB writes to w an RDB file of the whole dataset as it was at one
// instant S, without forking and without stopping writers for longer than
// it takes to mark S (store.Snapshot: a slot is serialised the first time
// anything locks it after S, so the file is the dataset at S even though
// writes go on while it is written). atStart (nil: none) runs at S with
// the execution gate closed and the master link's apply held — nothing
// changes the dataset while it runs — to register what must start exactly
// at S (a replica's stream, the AOF's new incr file); the aux fields it
// returns are added to aux in the file's header. The function libraries
// are those at S. cancelled (nil: never) is polled between slots; true
// abandons the file with errSnapshotCancelled. rdb-key-save-delay paces
// the walk. One snapshot runs at a time: a second caller waits. It
// returns the number of keys written. owner is the client on whose behalf
// it runs (nil: none), which closing the gate must not wait for.
func (s *Server) snapshotRDB(owner *Client, w io.Writer, aux [][2]string, atStart func() [][2]string, cancelled func() bool) (int, error) {
	return s.snapshotRDBHolding(owner, nil, w, aux, atStart, cancelled)
}

// snapshotRDBHolding is snapshotRDB that also takes held (nil: none) at S,
// in the same closing of the gate, and leaves it locked for the caller.
//
// Lock order: the gate, then snapshotMu and held. Whoever holds either
// lock never waits for the gate (a walk needs only slot locks), so a
// gate owner may wait for them; the reverse — holding one while waiting
// for the gate — would deadlock against a command that holds the gate
// (DEBUG RELOAD, SHUTDOWN, an exclusive EXEC) and wants a save. So both
// are taken with TryLock while the gate is closed, and when either is
// busy the gate opens again and the attempt is retried.
func (s *Server) snapshotRDBHolding(owner *Client, held *sync.Mutex, w io.Writer, aux [][2]string, atStart func() [][2]string, cancelled func() bool) (int, error) {
	if owner == nil {
		owner = s.bindClient(&Client{srv: s})
	}
	// With atStart, the master link's apply is held too, so that no
	// command of a replica's stream is applied but not yet forwarded at S
	// (a sub-replica's stream, or the repl-offset a save records, would
	// count it twice). A caller that holds the gate already may go on
	// without it when the master link is not between the two
	// (tryLockSnapshot).
	holdApply := atStart != nil && !owner.isMasterLink()
	release, applyLocked := s.closeGateForInstant(owner, held, holdApply)
	defer s.snapshotMu.Unlock()

	sink := &rdbSnapshotSink{enc: s.rdbEncoder()}
	libs := s.tx.functions.sortedLibs()
	dbStats, _, _ := s.ks.Stats()
	sn, err := s.ks.BeginSnapshot(sink)
	if err == nil && atStart != nil {
		aux = append(aux[:len(aux):len(aux)], atStart()...)
	}
	if applyLocked {
		s.repl.rep.UnlockApply()
	}
	release()
	if err != nil {
		return 0, err
	}
	defer sink.close() // after End: no capture starts
	defer sn.End()

	fw := rdb.NewFileWriter(w, sink.enc, aux...)
	for _, l := range libs {
		fw.Function(l.code)
	}
	// The head leaves at S: a diskless full sync's replicas get
	// +FULLRESYNC and the start of the file then, as Redis sends them
	// when its child starts, not after the first 64 KB of keys.
	if err := fw.Flush(); err != nil {
		return 0, err
	}
	// RESIZEDB hints are the sizes at S (nothing changed while they were
	// read); a database's later runs of keys select it again without one.
	hint := map[int][2]uint64{}
	for _, d := range dbStats {
		hint[d.ID] = [2]uint64{uint64(d.Keys), uint64(d.Expires)}
	}
	selected, started := -1, map[int]bool{}
	keys := 0
	drain := func() {
		for _, c := range sink.take() {
			if c.db != selected {
				if started[c.db] {
					fw.SelectDBAgain(c.db)
				} else {
					h := hint[c.db]
					fw.SelectDB(c.db, h[0], h[1])
					started[c.db] = true
				}
				selected = c.db
			}
			writeChunk(fw, c)
			keys += c.keys
			sink.recycle(c)
		}
	}
	delay := s.cfg.Int("rdb-key-save-delay")
	complete := sn.Walk(func(n int64) bool {
		drain()
		if delay != 0 {
			saveKeyDelay(delay, int(n)) // outside every slot lock
		}
		return cancelled == nil || !cancelled()
	})
	if !complete {
		return keys, errSnapshotCancelled
	}
	sn.End() // every slot is captured: later locks need not look
	drain()
	return keys, fw.Finish()
}

// rdbEncoder encodes values as rdbcompression says (RDB files, full
// syncs, the AOF's RDB preamble, DUMP and MIGRATE payloads, as Redis's
// rdbSaveRawString reads server.rdb_compression everywhere).
func (s *Server) rdbEncoder() rdb.Encoder {
	return rdb.Encoder{Compress: s.cfg.Bool("rdbcompression")}
}

// errSnapshotCancelled is a snapshot abandoned by its cancelled func.
var errSnapshotCancelled = errors.New("snapshot cancelled")

// rdbSnapshotSink encodes each captured slot into a chunk and hands the
// chunks to the snapshot's goroutine, which writes them in capture order.
// A slot the walk captures is encoded there. A slot a command (expiry,
// eviction) locks first is captured on that client's goroutine, which
// waits for it: there string keys — all of them under a SET load — are
// only copied (expiry, key, value) and encoded, with rdbcompression's LZF
// attempt (half the encoding's cost), by the snapshot's goroutine when it
// writes the chunk, as Redis's fork child encodes while the parent goes
// on serving; the copies live outside the Go heap (snapshotArena). Other
// types are encoded at capture. The encoding runs
// outside the sink's lock: writers that capture different slots at once
// do not queue behind each other, only for taking a buffer and handing
// the chunk over.
type rdbSnapshotSink struct {
	enc    rdb.Encoder // rdbcompression when the snapshot began
	mu     sync.Mutex
	chunks []snapshotChunk
	// free holds written chunks' buffers, and scratches values' encoding
	// buffers, for the next captures: a snapshot's chunks otherwise grow
	// a new buffer per slot, garbage that made the collector run through
	// the rewrite.
	free      [][]byte
	scratches [][]byte
	// bytes and captured are the chunk bytes and chunks captured so far: a
	// new buffer starts at the average chunk's size, not empty (growing
	// one from nothing copied and cleared it ~10 times per slot).
	bytes, captured int
	// arena holds the clients' string copies; copying counts the captures
	// writing into it. Once closed (the snapshot is over), the arena is
	// unmapped as soon as no capture writes into it, and a late capture
	// uses the heap and is dropped.
	arena   snapshotArena
	copying int
	closed  bool
}

// sinkKeepCap bounds the buffers kept for reuse, and sinkKeepCount how many.
const (
	sinkKeepCap   = 64 << 10
	sinkKeepCount = 128
)

// recycle gives back a written chunk's buffers.
func (k *rdbSnapshotSink) recycle(c snapshotChunk) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if c.block != nil {
		if !k.closed {
			k.arena.release(c.block)
		}
		c.strings = nil
	}
	for _, b := range [2][]byte{c.data, c.strings} {
		if b != nil && cap(b) <= sinkKeepCap && len(k.free) < sinkKeepCount {
			k.free = append(k.free, b[:0])
		}
	}
}

// A snapshotChunk is one captured slot: data holds keys encoded as the
// file holds them; strings holds string keys still to encode, each as
// its expiry (8 bytes), key and value lengths (4 bytes each), key, value.
type snapshotChunk struct {
	db      int
	keys    int
	data    []byte
	strings []byte
	block   *arenaBlock // where strings lives (nil: the heap)
}

// close ends the sink's use of its arena (after the snapshot's End): its
// memory is unmapped now, or by the last capture still copying.
func (k *rdbSnapshotSink) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closed = true
	if k.copying == 0 {
		k.arena.freeAll()
	}
}

// stringsBuffer returns a buffer of capacity n for a capture's string
// copies, from the arena (block not nil) unless the sink is closed or no
// memory could be mapped.
func (k *rdbSnapshotSink) stringsBuffer(n int) (buf []byte, block *arenaBlock) {
	if n == 0 {
		return nil, nil
	}
	k.mu.Lock()
	if !k.closed {
		if buf, block = k.arena.alloc(n); block != nil {
			k.copying++
		}
	}
	k.mu.Unlock()
	if block == nil {
		buf = make([]byte, 0, n)
	}
	return buf, block
}

// buffers takes a buffer for a chunk's encoded keys (a capture by the
// walk) and a scratch buffer for one capture.
func (k *rdbSnapshotSink) buffers() (buf, scratch []byte) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if n := len(k.free); n > 0 {
		buf, k.free = k.free[n-1], k.free[:n-1]
	} else if k.captured > 0 {
		buf = make([]byte, 0, min(k.bytes/k.captured*5/4, sinkKeepCap))
	}
	if n := len(k.scratches); n > 0 {
		scratch, k.scratches = k.scratches[n-1], k.scratches[:n-1]
	}
	return buf, scratch
}

func (k *rdbSnapshotSink) CaptureSlot(dbID int, db *store.DB, slot uint16, byWalk bool) {
	c := snapshotChunk{db: dbID}
	var scratch []byte
	// Logically expired keys are written too, as Redis's rdbSave does: a
	// master's load drops them (rdb_last_load_keys_expired), a replica's
	// keeps them until its master's DEL.
	if byWalk {
		c.data, scratch = k.buffers()
		db.ScanSlotLocked(slot, func(e *store.Entry) {
			c.data, scratch = k.enc.AppendEntry(c.data, scratch, e)
			c.keys++
		})
	} else {
		// The copies' exact size first (the second pass finds the
		// entries in the cache), so that they fit the arena's buffer.
		size := 0
		db.ScanSlotLocked(slot, func(e *store.Entry) {
			if copied(e) {
				size += copyHeader + len(e.Key()) + len(e.Bytes())
			}
		})
		c.strings, c.block = k.stringsBuffer(size)
		db.ScanSlotLocked(slot, func(e *store.Entry) {
			c.keys++
			if !copied(e) {
				c.data, scratch = k.enc.AppendEntry(c.data, scratch, e)
				return
			}
			key, val := e.Key(), e.Bytes()
			c.strings = binary.LittleEndian.AppendUint64(c.strings, uint64(e.ExpireAt()))
			c.strings = binary.LittleEndian.AppendUint32(c.strings, uint32(len(key)))
			c.strings = binary.LittleEndian.AppendUint32(c.strings, uint32(len(val)))
			c.strings = append(append(c.strings, key...), val...)
		})
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	// A big value's buffer is not kept.
	if scratch != nil && cap(scratch) <= 1<<20 && len(k.scratches) < sinkKeepCount {
		k.scratches = append(k.scratches, scratch[:0])
	}
	if c.block != nil {
		k.copying--
	}
	if k.closed {
		// The snapshot ended (abandoned): nobody takes this chunk.
		if k.copying == 0 {
			k.arena.freeAll()
		}
		return
	}
	k.bytes += len(c.data) + len(c.strings)
	k.captured++
	k.chunks = append(k.chunks, c)
}

// copyHeader is a copied string's expiry and two lengths.
const copyHeader = 16

// copied says whether a client's capture copies e (a string whose lengths
// fit the copy's header) rather than encoding it at once.
func copied(e *store.Entry) bool {
	return e.Type() == store.TypeString && len(e.Key()) <= math.MaxUint32 && len(e.Bytes()) <= math.MaxUint32
}

// writeChunk writes c's keys to fw.
func writeChunk(fw *rdb.FileWriter, c snapshotChunk) {
	fw.Entries(c.data)
	for p := c.strings; len(p) > 0; {
		at := int64(binary.LittleEndian.Uint64(p))
		kl, vl := int(binary.LittleEndian.Uint32(p[8:])), int(binary.LittleEndian.Uint32(p[12:]))
		p = p[copyHeader:]
		fw.StringEntry(at, p[:kl], p[kl:kl+vl])
		p = p[kl+vl:]
	}
}

// take returns the chunks captured since the last call.
func (k *rdbSnapshotSink) take() []snapshotChunk {
	k.mu.Lock()
	defer k.mu.Unlock()
	c := k.chunks
	k.chunks = nil
	return c
}

// closeGateForInstant closes the gate for owner and takes snapshotMu, held
// (if not nil) and, with holdApply, the master link's apply lock, retrying
// while one of them is busy (see snapshotRDBHolding's lock order). It
// returns the gate's release and whether the apply lock was taken (see
// tryLockSnapshot); the locks stay with the caller.
func (s *Server) closeGateForInstant(owner *Client, held *sync.Mutex, holdApply bool) (release func(), applyLocked bool) {
	ownsGate := owner.tx.exclusive
	for {
		release = owner.closeGate() // re-entrant for a client that holds it
		if ok, applyLocked := s.tryLockSnapshot(held, holdApply, ownsGate); ok {
			return release, applyLocked
		}
		release()
		time.Sleep(time.Millisecond) // a walk, a save or an apply is finishing
	}
}

// tryLockSnapshot takes snapshotMu, held (if not nil) and, with
// holdApply, the master link's apply lock: all or none. ownsGate says the
// caller held the gate before (DEBUG RELOAD, SHUTDOWN, an exclusive
// EXEC): the master link may then hold its apply lock while it waits for
// the gate, before applying anything, and would never let go; unless it
// is between applying a command and forwarding it (FeedPending, which
// needs no gate), the data and the stream agree without the lock, so the
// snapshot goes on without it (applyLocked false).
func (s *Server) tryLockSnapshot(held *sync.Mutex, holdApply, ownsGate bool) (ok, applyLocked bool) {
	if !s.snapshotMu.TryLock() {
		return false, false
	}
	if held != nil && !held.TryLock() {
		s.snapshotMu.Unlock()
		return false, false
	}
	if !holdApply {
		return true, false
	}
	if s.repl.rep.TryLockApply() {
		return true, true
	}
	if ownsGate && !s.repl.rep.FeedPending() {
		return true, false
	}
	if held != nil {
		held.Unlock()
	}
	s.snapshotMu.Unlock()
	return false, false
}
