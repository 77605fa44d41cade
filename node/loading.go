package node

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-db/shoal/command"
)

// While the server loads a dataset into its live keyspace (a replica's full
// sync; DEBUG RELOAD and the start-up load run before or beside nothing
// else), clients may be connected: as in Redis (processCommand's
// server.loading check), commands without the "loading" flag are refused
// with -LOADING, so no one reads half a dataset or writes into one, and
// INFO reports the load's progress (loading_* fields). key-load-delay
// slows each key down, as Redis's debugDelay, which the tests use to
// observe this state.
//
// Redis loads on its only thread and serves clients in between only now
// and then (processEventsWhileBlocked: every loading-process-events-
// interval-bytes of an RDB, every 1024 commands of an AOF), so a command
// that arrives during a load waits for the next of those points, or for
// the end; a load shorter than one interval is never seen. Shoal loads on
// a goroutine of its own while clients run, and does the same: a command
// meeting the loading state waits (holding nothing) for the load's next
// such point, then is judged (loadingState.wait, called from admit).

// msgLoading is Redis's shared.loadingerr.
const msgLoading = "LOADING Redis is loading the dataset in memory"

// loadingState is Redis's server.loading and its progress figures.
type loadingState struct {
	active     atomic.Bool
	startUnix  atomic.Int64 // loading_start_time
	totalBytes atomic.Int64 // loading_total_bytes (0: unknown, as a diskless load)
	loaded     atomic.Int64 // loading_loaded_bytes
	commands   atomic.Int64 // AOF commands loaded
	// delayOwed is key-load-delay's time not slept yet, µs (keyLoadDelay).
	delayOwed atomic.Int64

	// mu guards events and depth. events is closed (and replaced) at each
	// point where the load serves clients, and at its end; nil while no
	// load runs. depth counts the loads under way: the start-up's loading
	// state holds the whole LoadData, and the RDB or AOF load inside it
	// sets its own figures.
	mu     sync.Mutex
	events chan struct{}
	depth  int
}

// serveClients is processEventsWhileBlocked: the commands waiting for the
// load go on (and are judged while it still runs).
func (l *loadingState) serveClients() {
	l.mu.Lock()
	if l.events != nil {
		close(l.events)
		l.events = make(chan struct{})
	}
	l.mu.Unlock()
}

// wait returns at the load's next serveClients or at its end, at once if
// no load runs.
func (l *loadingState) wait() {
	if !l.active.Load() {
		return
	}
	l.mu.Lock()
	ch := l.events
	l.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// startLoading enters the loading state for a load of total bytes (0 if
// unknown) and returns the function that leaves it.
func (s *Server) startLoading(total int64) (stop func()) {
	l := &s.loading
	l.startUnix.Store(time.Now().Unix())
	l.totalBytes.Store(total)
	l.loaded.Store(0)
	l.commands.Store(0)
	l.mu.Lock()
	l.depth++
	if l.events == nil {
		l.events = make(chan struct{})
	}
	l.active.Store(true)
	l.mu.Unlock()
	s.cfg.SetLoading(true) // CONFIG SET refuses dir, appendonly ... (DENY_LOADING_CONFIG)
	s.repl.updateGuards()
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			l.depth--
			last := l.depth == 0
			if last {
				l.active.Store(false)
				close(l.events)
				l.events = nil
			}
			l.mu.Unlock()
			if last {
				s.cfg.SetLoading(false)
				s.repl.updateGuards()
			}
		})
	}
}

// loadedKey records an RDB load's progress after a key that ended at
// offset bytes, serves the waiting clients each time the load crosses a
// multiple of loading-process-events-interval-bytes, and sleeps
// key-load-delay.
func (s *Server) loadedKey(offset int64) {
	prev := s.loading.loaded.Swap(offset)
	if iv := s.cfg.Int("loading-process-events-interval-bytes"); iv > 0 && offset/iv != prev/iv {
		s.loading.serveClients()
	}
	if d := s.cfg.Int("key-load-delay"); d != 0 {
		if sleep := s.loading.keyLoadDelay(d); sleep > 0 {
			time.Sleep(sleep)
		}
	}
}

// loadedAOFCommand records an AOF load's progress after a command that
// ended at offset bytes, serves the waiting clients after the first
// command and every 1024 after it (loadSingleAppendOnlyFile serves them at
// loops 0, 1024, ...), and sleeps key-load-delay.
func (s *Server) loadedAOFCommand(offset int64) {
	s.loading.loaded.Store(offset)
	if s.loading.commands.Add(1)%1024 == 1 {
		s.loading.serveClients()
	}
	if d := s.cfg.Int("key-load-delay"); d != 0 {
		if sleep := s.loading.keyLoadDelay(d); sleep > 0 {
			time.Sleep(sleep)
		}
	}
}

// keyLoadDelayStep is the least a key-load-delay sleep lasts: Go's timers
// wake a sleeper a millisecond or more late on a loaded host, so 50 µs per
// key slept one key at a time took 30 times Redis's usleep(50).
const keyLoadDelayStep = time.Millisecond

// keyLoadDelay is Redis's debugDelay(key_load_delay) for one key: a
// positive value delays each key that many microseconds, a negative -N
// one microsecond with probability 1/N. It returns how long to sleep now:
// the delay owed is paid whenever it reaches keyLoadDelayStep, so a load
// takes Redis's time in all without a sleep per key.
func (l *loadingState) keyLoadDelay(d int64) time.Duration {
	us := d
	if d < 0 {
		us = 0
		if rand.Int64N(-d) == 0 {
			us = 1
		}
	}
	owed := l.delayOwed.Add(us)
	if time.Duration(owed)*time.Microsecond < keyLoadDelayStep {
		return 0
	}
	l.delayOwed.Add(-owed)
	return time.Duration(owed) * time.Microsecond
}

// loadingRefuses reports whether spec must be refused while loading (and
// writes -LOADING): commands without the loading flag, and EXEC of a
// transaction holding one, as processCommand's is_denyloading_command.
func (c *Client) loadingRefuses(spec *command.Spec) bool {
	if !c.srv.loading.active.Load() || c.isMasterLink() {
		return false
	}
	deny := spec.Flags&command.FlagLoading == 0
	if spec.FullName() == "exec" && c.multi != nil {
		for _, q := range c.multi.queue {
			deny = deny || q.spec.Flags&command.FlagLoading == 0
		}
	}
	if deny {
		c.rejectCommand(spec, msgLoading)
	}
	return deny
}

// infoLoading writes the loading_* fields INFO persistence has while a
// load runs (after the AOF fields, as Redis).
func (s *Server) infoLoading(w *infoWriter) {
	l := &s.loading
	if !l.active.Load() {
		return
	}
	total, loaded := l.totalBytes.Load(), l.loaded.Load()
	perc, remaining := 0.0, int64(1)
	if total > 0 {
		perc = float64(loaded) / float64(total) * 100
		remaining = total - loaded
	}
	start := l.startUnix.Load()
	eta := int64(1) // Redis's fake figure for the first second
	if elapsed := time.Now().Unix() - start; elapsed != 0 {
		eta = elapsed * remaining / (loaded + 1)
	}
	w.int("loading_start_time", start)
	w.int("loading_total_bytes", total)
	w.int("loading_rdb_used_mem", 0)
	w.int("loading_loaded_bytes", loaded)
	w.str("loading_loaded_perc", fmt.Sprintf("%.2f", perc))
	w.int("loading_eta_seconds", eta)
}
