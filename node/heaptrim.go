package node

import (
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// heapTrimmer gives memory back to the OS when the server goes idle after a
// burst of writes. Go's collector lets the heap grow to twice the live data
// before collecting, and after a load (redis-cli --pipe, a restore) nothing
// triggers the next collection: the process would keep up to twice its data
// in RSS indefinitely, where Redis (jemalloc) returns pages as it frees them.
// When the allocation rate drops to almost nothing and the heap holds more
// than the live data by enough (trimMinBytes, more on a large heap), the trimmer runs
// one collection and returns the free pages: after a burst, or every
// trimDecay on a node whose own periodic work (gossip) leaves garbage.
// While the server is busy it never runs, so it costs nothing on the hot
// path.
//
// Idle means quiet for trimQuietFor, not for one check: clients that wait
// for a stalled AOF write (the disk busy with an fsync) neither read nor
// allocate, and a collection of the whole heap then (up to a second of
// CPU on a large dataset) ran in the middle of a write load. A check that
// finds background work under way (AOF bytes not yet written, a rewrite
// or a save running) is not quiet either. Owned by the cron goroutine.
type heapTrimmer struct {
	samples     []metrics.Sample
	lastAlloc   uint64
	lastBatches uint64
	lastTrim    time.Time
	lastCheck   time.Time
	// quietSince is when the current run of quiet checks began (zero:
	// the last check was busy).
	quietSince time.Time
	// next is when the cron should call tick again: trimCheckInterval
	// while the server is busy or holds memory to give back, else
	// trimIdleInterval (an idle node does not wake 20 times a second for
	// nothing: it was a third of an idle cluster node's wake-ups).
	next time.Duration
}

const (
	metricAllocs   = "/gc/heap/allocs:bytes"              // cumulative bytes allocated
	metricLive     = "/gc/heap/live:bytes"                // live heap after the last GC
	metricHeapObjs = "/memory/classes/heap/objects:bytes" // live + not yet swept
	metricHeapFree = "/memory/classes/heap/free:bytes"    // free, not yet returned

	// trimCheckInterval is how often the trimmer samples the allocator
	// while the server is busy or its heap holds memory to give back;
	// trimIdleInterval when neither (the first check of a burst comes at
	// most that late, and its end is still seen within
	// trimCheckInterval).
	trimCheckInterval = 50 * time.Millisecond
	trimIdleInterval  = time.Second
	// idleAllocPerTick: below this many bytes allocated per check the
	// server counts as idle (a few hundred small commands), if it also
	// served at most idleBatchesPerTick socket reads: a busy pipeline that
	// reuses its buffers allocates next to nothing, and a collection per
	// trimInterval under load would cost more than it returns.
	idleAllocPerTick   = 128 << 10
	idleBatchesPerTick = 50
	// trimSlack, trimSlackFrom and trimMinBytes: trim only when the heap
	// holds at least trimMinBytes more than the live data, and, beyond
	// trimSlackFrom of live data, a tenth of what is beyond it (a large
	// heap's collection costs its size in CPU; a small one's is cheap).
	// The floor is low on purpose: garbage takes fresh pages until the next
	// collection, so an idle node's resident memory rises by the excess it
	// is allowed between trims, up to twice its live data without a trim
	// (5 to 9 MB of RSS in a minute, where Redis stays at 3.4). With its bus
	// making some 5 KB of garbage a second, an idle cluster node trims
	// every 20-30 s; at 512 KB, and with the slack counted on a live heap
	// that includes the untouched 3 MB slot array, its memory rose by
	// half a megabyte between trims.
	trimSlack     = 0.10
	trimSlackFrom = 8 << 20
	trimMinBytes  = 128 << 10
	// trimInterval is the least time between two trims of a large excess
	// (trimLargeBytes or more: a burst of writes); trimDecay between two
	// trims of a small one, which is only idle garbage: as jemalloc's
	// dirty_decay_ms (10 s) returns freed pages, at most one collection
	// every ten seconds on a quiet node.
	trimInterval   = 2 * time.Second
	trimDecay      = 10 * time.Second
	trimLargeBytes = 16 << 20
	// trimQuietFor is how long the server must have stayed quiet before
	// a trim: longer than a disk stall under load usually lasts.
	trimQuietFor = time.Second
)

func newHeapTrimmer() *heapTrimmer {
	return &heapTrimmer{samples: []metrics.Sample{
		{Name: metricAllocs}, {Name: metricLive}, {Name: metricHeapObjs}, {Name: metricHeapFree},
	}, next: trimCheckInterval}
}

// interval is how long the cron waits before the next tick.
func (h *heapTrimmer) interval() time.Duration { return h.next }

// tick is called from the cron with the server's count of read batches so
// far and whether background work is under way; it returns true if it
// trimmed. The idle thresholds are per trimCheckInterval, scaled to the
// time since the last check.
func (h *heapTrimmer) tick(now time.Time, batches uint64, working bool) bool {
	metrics.Read(h.samples)
	allocs := h.samples[0].Value.Uint64()
	live := h.samples[1].Value.Uint64()
	held := h.samples[2].Value.Uint64() + h.samples[3].Value.Uint64()
	if !h.decide(now, heapSample{allocs: allocs, live: live, held: held, batches: batches, working: working}) {
		return false
	}
	debug.FreeOSMemory() // collects first: one collection, not two
	// The collection itself allocated nothing worth counting.
	metrics.Read(h.samples[:1])
	h.lastAlloc = h.samples[0].Value.Uint64()
	return true
}

// heapSample is what one check sees: bytes ever allocated, the live heap,
// the heap held (live, unswept and free), read batches served so far and
// whether background work is under way.
type heapSample struct {
	allocs, live, held, batches uint64
	working                     bool
}

// decide takes one check's sample and says whether to trim now; it sets
// the interval to the next check.
func (h *heapTrimmer) decide(now time.Time, s heapSample) bool {
	delta := s.allocs - h.lastAlloc
	h.lastAlloc = s.allocs
	served := s.batches - h.lastBatches
	h.lastBatches = s.batches
	periods := uint64(1)
	if !h.lastCheck.IsZero() {
		periods = max(uint64(now.Sub(h.lastCheck)/trimCheckInterval), 1)
	}
	h.lastCheck = now
	busy := s.working || delta > idleAllocPerTick*periods || served > idleBatchesPerTick*periods
	if busy {
		h.quietSince = time.Time{}
	} else if h.quietSince.IsZero() {
		h.quietSince = now
	}
	excess := uint64(0)
	if s.held > s.live {
		excess = s.held - s.live
	}
	worth := excess >= max(trimMinBytes, uint64(trimSlack*float64(s.live-min(s.live, trimSlackFrom))))
	spacing := trimDecay
	if excess >= trimLargeBytes {
		spacing = trimInterval
	}
	spaced := now.Sub(h.lastTrim) >= spacing
	// Sampled often only while busy or about to trim a burst's excess: a
	// small excess waits for trimDecay anyway, a second late changes
	// nothing.
	h.next = trimCheckInterval
	if !busy && (!worth || !spaced && excess < trimLargeBytes) {
		h.next = trimIdleInterval
	}
	if busy || now.Sub(h.quietSince) < trimQuietFor || !spaced || !worth {
		return false
	}
	h.lastTrim = now
	return true
}

// backgroundWorkPending reports work that keeps the server busy while no
// client is served: AOF bytes appended but not yet written (clients wait
// for them), an AOF rewrite or a background save running.
func (s *Server) backgroundWorkPending() bool {
	if app := s.aof.app.Load(); app != nil && app.Buffered() > 0 {
		return true
	}
	return s.aof.rewriting.Load() || s.rdbSave.bgRunning.Load()
}
