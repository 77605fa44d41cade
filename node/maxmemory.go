package node

import (
	"math"
	"os"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/store"
	"go.uber.org/zap"
)

// maxmemory: used_memory, eviction and the OOM refusals (Redis's evict.c and
// the maxmemory part of processCommand).
//
// used_memory is a logical figure, not the Go heap: the heap at start-up
// (used_memory_startup), plus what the keyspace's entries are charged
// (store/memory.go), plus the clients' buffers (client eviction's totals,
// node/client_evict.go), the stream queued for replicas and the replication
// backlog (both sampled by the cron). It moves only when data does,
// so eviction neither chases garbage the collector has not reclaimed yet
// nor stops while the heap holds it. The Go heap is kept near that figure by
// GOMEMLIMIT, which follows maxmemory (applyGoMemoryLimit).

// memoryState holds what used_memory adds to the keyspace's charges, the
// maxmemory settings the hot path reads, and the eviction statistics.
type memoryState struct {
	backlog        atomic.Int64 // the replication backlog's size (cron)
	replicaStreams atomic.Int64 // stream bytes queued for replicas (cron, and every memoryReport)

	limit         atomic.Int64 // maxmemory; 0 = no limit
	policy        atomic.Int64 // maxmemory-policy (config.Maxmemory*)
	samples       atomic.Int64 // maxmemory-samples
	tenacity      atomic.Int64 // maxmemory-eviction-tenacity
	replicaIgnore atomic.Bool  // replica-ignore-maxmemory

	// exceededSince is when used memory was last found over the limit
	// without eviction bringing it back (ns since server start; 0 = not
	// over); exceededTotal accumulates the finished periods in µs (INFO
	// current_/total_eviction_exceeded_time).
	exceededSince atomic.Int64
	exceededTotal atomic.Int64

	// background is set while a goroutine keeps evicting after a command
	// ran out of time (Redis's eviction time proc).
	background atomic.Bool
}

// evictResult is performEvictions' answer (EVICT_OK, EVICT_RUNNING,
// EVICT_FAIL).
type evictResult uint8

const (
	evictOK evictResult = iota
	evictRunning
	evictFail
)

// oomError is Redis's shared.oomerr.
const oomError = "OOM command not allowed when used memory > 'maxmemory'."

// usedMemory is used_memory.
func (s *Server) usedMemory() int64 {
	return s.memoryCountedForEvict() + s.memoryNotCountedForEvict()
}

// memoryCountedForEvict is used_memory less memoryNotCountedForEvict, what
// maxmemory is judged on: the start-up heap, the keyspace's charges, the
// buffers of clients that are not replicas, and the backlog.
func (s *Server) memoryCountedForEvict() int64 {
	normal, _ := s.clientsMemory() // node/client_evict.go
	return int64(s.aux().startupMemory) + s.ks.DataBytes() + normal + s.mem.backlog.Load()
}

// memoryNotCountedForEvict is what eviction leaves out of used_memory
// (freeMemoryGetNotCountedMemory): the replicas' buffers and the stream
// queued for them, which evicting would only grow with DELs. shoal has no
// AOF buffer.
func (s *Server) memoryNotCountedForEvict() int64 {
	_, replicas := s.clientsMemory()
	return replicas + s.mem.replicaStreams.Load()
}

// applyMaxmemoryConfig copies the maxmemory directives into the hot path's
// atomics and the keyspace's access tracking.
func (s *Server) applyMaxmemoryConfig() {
	m := &s.mem
	cfg := s.cfg
	m.limit.Store(int64(min(cfg.Uint("maxmemory"), math.MaxInt64)))
	m.policy.Store(cfg.Int("maxmemory-policy"))
	m.samples.Store(cfg.Int("maxmemory-samples"))
	m.tenacity.Store(cfg.Int("maxmemory-eviction-tenacity"))
	m.replicaIgnore.Store(cfg.Bool("replica-ignore-maxmemory"))
	s.ks.SetAccessPolicy(m.policy.Load()&config.MaxmemoryFlagLFU != 0, cfg.Int("lfu-log-factor"), cfg.Int("lfu-decay-time"))
}

// registerMaxmemoryHooks applies CONFIG SET of the maxmemory directives. A
// lower maxmemory starts evicting in the background, as Redis's
// updateMaxmemory starts its eviction time proc: never inside CONFIG SET
// itself, which may run in a transaction holding slot locks.
func (s *Server) registerMaxmemoryHooks() {
	for _, name := range []string{"maxmemory-policy", "maxmemory-samples", "maxmemory-eviction-tenacity",
		"replica-ignore-maxmemory", "lfu-log-factor", "lfu-decay-time"} {
		s.cfg.OnChange(name, func(string) error { s.applyMaxmemoryConfig(); return nil })
	}
	s.cfg.OnChange("maxmemory", func(string) error {
		s.applyMaxmemoryConfig()
		s.applyGoMemoryLimit()
		if limit := s.mem.limit.Load(); limit > 0 {
			if used := s.memoryCountedForEvict(); used > limit {
				s.log.Warn("the new maxmemory value set via CONFIG SET is smaller than the current memory usage: "+
					"keys will be evicted and/or new write commands refused depending on the maxmemory-policy",
					zap.Int64("maxmemory", limit), zap.Int64("used", used))
			}
			s.startBackgroundEviction()
		}
		return nil
	})
}

// goMemoryHeadroom is what GOMEMLIMIT allows above the start-up heap and
// maxmemory: room for garbage between collections, goroutine stacks and
// the runtime's own structures.
const goMemoryHeadroom = 16 << 20

// applyGoMemoryLimit sets the Go runtime's soft memory limit from maxmemory
// when the server manages it (Options.ManageGoMemoryLimit, and no GOMEMLIMIT
// in the environment): maxmemory + 25% + goMemoryHeadroom (16 MiB) above the
// start-up heap, so that the collector runs before the process outgrows
// the machine instead of letting the heap double. No limit without
// maxmemory.
func (s *Server) applyGoMemoryLimit() {
	if !s.manageGoMemLimit {
		return
	}
	limit := s.mem.limit.Load()
	if limit == 0 {
		debug.SetMemoryLimit(math.MaxInt64)
		return
	}
	goLimit := int64(s.aux().startupMemory) + limit + limit/4 + goMemoryHeadroom
	if goLimit < 0 {
		goLimit = math.MaxInt64
	}
	debug.SetMemoryLimit(goLimit)
	s.log.Info("GOMEMLIMIT follows maxmemory", zap.Int64("maxmemory", limit), zap.Int64("gomemlimit", goLimit))
}

// goMemLimitFromEnv reports whether the operator set GOMEMLIMIT, which the
// server then leaves alone.
func goMemLimitFromEnv() bool { return os.Getenv("GOMEMLIMIT") != "" }

// evictionPolicy maps maxmemory-policy to the keyspace's policy; ok is
// false for noeviction.
func evictionPolicy(p int64) (store.EvictionPolicy, bool) {
	switch p {
	case config.MaxmemoryAllKeysLRU:
		return store.EvictAllKeysLRU, true
	case config.MaxmemoryVolatileLRU:
		return store.EvictVolatileLRU, true
	case config.MaxmemoryAllKeysLFU:
		return store.EvictAllKeysLFU, true
	case config.MaxmemoryVolatileLFU:
		return store.EvictVolatileLFU, true
	case config.MaxmemoryAllKeysRandom:
		return store.EvictAllKeysRandom, true
	case config.MaxmemoryVolatileRandom:
		return store.EvictVolatileRandom, true
	case config.MaxmemoryVolatileTTL:
		return store.EvictVolatileTTL, true
	}
	return 0, false
}

// evictionTimeLimit converts maxmemory-eviction-tenacity to the time one
// command may spend evicting before the rest is left to the background
// (evictionTimeLimitUs): linear up to 500µs at 10, then 15% more per step,
// no limit at 100.
func evictionTimeLimit(tenacity int64) time.Duration {
	switch {
	case tenacity <= 10:
		return time.Duration(50*tenacity) * time.Microsecond
	case tenacity < 100:
		return time.Duration(500*math.Pow(1.15, float64(tenacity-10))) * time.Microsecond
	}
	return math.MaxInt64
}

// safeToEvict is isSafeToPerformEvictions: not on a replica that ignores
// maxmemory (it stays an exact copy of its master, whose DELs it applies),
// and not while clients are paused (the dataset must stay still).
func (s *Server) safeToEvict() bool {
	if s.ks.ReplicaMode() && s.mem.replicaIgnore.Load() {
		return false
	}
	return !s.pause.active.Load() || !s.pause.paused()
}

// overMemoryLimit is the cheap check every command makes when maxmemory is
// set: true when used memory, less what eviction does not count, is over
// the limit.
func (s *Server) overMemoryLimit() bool {
	limit := s.mem.limit.Load()
	return limit > 0 && s.memoryCountedForEvict() > limit
}

// performEvictions evicts keys until used memory is back under maxmemory,
// for at most the tenacity's time limit; the rest is left to a background
// goroutine (evictRunning). evictFail: over the limit with nothing the
// policy may evict. Call it without holding slot locks.
func (s *Server) performEvictions() evictResult {
	if !s.safeToEvict() {
		return evictOK
	}
	result := s.evictUntil(evictionTimeLimit(s.mem.tenacity.Load()))
	if result == evictRunning {
		s.startBackgroundEviction()
	}
	s.noteEvictionResult(result)
	return result
}

// evictUntil frees what used memory is over the limit by when it starts,
// checking the clock every 16 keys against budget (evictRunning when it ran
// out). As Redis's performEvictions, the amount is fixed at the start and
// counted from the charges of the evicted keys: memory the evictions
// themselves make grow — invalidation messages queued for tracking
// clients, notifications — does not make this call evict more (a feedback
// loop that could drain the keyspace). Every 16 keys it stops early if
// memory is already under the limit.
func (s *Server) evictUntil(budget time.Duration) evictResult {
	limit := s.mem.limit.Load()
	used := s.memoryCountedForEvict()
	if limit <= 0 || used <= limit {
		return evictOK
	}
	policy, ok := evictionPolicy(s.mem.policy.Load())
	if !ok {
		return evictFail // noeviction
	}
	toFree := used - limit
	// The clock is read only when the latency monitor wants the cycle's
	// time, or from the 16th key on for the budget: a write over the limit
	// usually frees what it needs with one key, and two clock reads were a
	// few percent of an evicting SET's CPU. Counting from the 16th key
	// lets a cycle run over its budget by those keys' time (µs, against
	// maxmemory-eviction-tenacity's default 500 µs).
	timeEach := s.latency.enabled()
	var start time.Time
	if timeEach {
		start = time.Now()
		defer func() { s.latency.observe(latencyEventEvictCycle, time.Since(start)) }()
	}
	samples := int(s.mem.samples.Load())
	var freed int64
	for keys := 1; freed < toFree; keys++ {
		var delStart time.Time
		if timeEach {
			delStart = time.Now()
		}
		n, ok := s.ks.EvictOne(policy, samples, s.keyEvicted)
		if timeEach {
			s.latency.observe(latencyEventEvictDel, time.Since(delStart))
		}
		if !ok {
			return evictFail
		}
		freed += n
		if keys%16 == 0 {
			if !s.overMemoryLimit() {
				break
			}
			if start.IsZero() {
				if budget <= 0 {
					return evictRunning // tenacity 0: 16 keys per slice
				}
				start = time.Now()
			} else if time.Since(start) > budget {
				return evictRunning
			}
		}
	}
	return evictOK
}

// keyEvicted is told of each evicted key under its slot lock: the DEL goes
// to the replicas in order with the slot's writes, and WATCH sees the key
// change (Redis's signalModifiedKey). The evicted keyspace event of
// notifications is emitted from here.
func (s *Server) keyEvicted(db *store.DB, key []byte) {
	if s.tx.watch.watching() {
		s.tx.watch.touch(db.ID(), key, nil)
	}
	s.trackingInvalidate(nil, key, true) // node/tracking.go
	// After the invalidation, as Redis's performEvictions.
	s.notifyKeyspaceEvent(nil, config.NotifyEvicted, "evicted", key, db.ID()) // node/notify.go
	if s.feeds.list.Load() != nil {
		s.propagate(db.ID(), [][][]byte{{[]byte("DEL"), key}})
	}
}

// startBackgroundEviction starts the goroutine that keeps evicting, one
// time slice at a time, until memory is under the limit or nothing can be
// evicted (Redis's evictionTimeProc). At most one runs.
func (s *Server) startBackgroundEviction() {
	if !s.mem.background.CompareAndSwap(false, true) {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.mem.background.Store(false)
		for {
			select {
			case <-s.stopCron:
				return
			default:
			}
			if !s.safeToEvict() {
				return
			}
			result := s.evictUntil(evictionTimeLimit(s.mem.tenacity.Load()))
			s.noteEvictionResult(result)
			if result != evictRunning {
				return
			}
			time.Sleep(time.Millisecond) // let clients run between slices
		}
	}()
}

// noteEvictionResult keeps the exceeded-time statistics.
func (s *Server) noteEvictionResult(r evictResult) {
	m := &s.mem
	if r == evictOK {
		if m.exceededSince.Load() == 0 {
			return // the common case: no shared cache line written
		}
		if since := m.exceededSince.Swap(0); since != 0 {
			m.exceededTotal.Add(int64((time.Since(s.start) - time.Duration(since)) / time.Microsecond))
		}
		return
	}
	m.exceededSince.CompareAndSwap(0, int64(time.Since(s.start)))
}

// evictionExceededMillis returns INFO's total_eviction_exceeded_time and
// current_eviction_exceeded_time.
func (s *Server) evictionExceededMillis() (total, current int64) {
	m := &s.mem
	total = m.exceededTotal.Load()
	if since := m.exceededSince.Load(); since != 0 {
		current = int64((time.Since(s.start) - time.Duration(since)) / time.Microsecond)
		total += current
	}
	return total / 1000, current / 1000
}

// admitMemory is processCommand's maxmemory step: evict if over the limit,
// then refuse a command that may grow memory — flagged denyoom (a script by
// its declared flags, EXEC by its queued commands) or any command queued
// in MULTI except EXEC, DISCARD, QUIT and RESET — when memory could not be
// brought under the limit. The result is remembered for scripts, whose
// first write is refused on it (scriptVerifyOOM).
func (c *Client) admitMemory(spec *command.Spec, args [][]byte) bool {
	s := c.srv
	c.oomAtStart = false
	if s.mem.limit.Load() == 0 {
		return true
	}
	out := s.performEvictions() == evictFail
	if c.trk.enabled {
		// Keys evicted for this command are invalidated before its reply,
		// as Redis flushes its pending invalidations after evicting.
		c.trackingFlushPending(false) // node/tracking.go
	}
	if !out || c.isMasterLink() {
		// The master link is never refused: a replica that does not
		// ignore maxmemory evicts, and applies its master's stream.
		return true
	}
	c.oomAtStart = true
	reject := c.commandDeniesOOM(spec, args)
	if c.multi != nil {
		switch spec.FullName() {
		case "exec", "discard", "quit", "reset":
		default:
			reject = true
		}
	}
	if reject {
		c.rejectCommand(spec, oomError)
		return false
	}
	return true
}

// commandDeniesOOM reports whether a command is refused when out of memory:
// its effective denyoom flag, or for EXEC any queued command's.
func (c *Client) commandDeniesOOM(spec *command.Spec, args [][]byte) bool {
	if spec.FullName() == "exec" && c.multi != nil {
		for _, q := range c.multi.queue {
			if c.srv.commandFlags(q.spec, q.args)&command.FlagDenyOOM != 0 {
				return true
			}
		}
		return false
	}
	return c.srv.commandFlags(spec, args)&command.FlagDenyOOM != 0
}

// sampleMemoryCron refreshes the replication backlog's part of used_memory
// (the clients' parts are kept by node/client_evict.go), then keeps
// evicting if writes stopped while memory is still over the limit (a
// lowered maxmemory, buffers that grew).
func (s *Server) sampleMemoryCron() {
	s.mem.backlog.Store(int64(s.repl.m.BacklogBytes()))
	s.mem.replicaStreams.Store(s.repl.m.LinksPending())
	if _, evicts := evictionPolicy(s.mem.policy.Load()); evicts && s.overMemoryLimit() {
		s.startBackgroundEviction()
	}
}
