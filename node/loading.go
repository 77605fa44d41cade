package node

import (
	"fmt"
	"math/rand/v2"
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

// msgLoading is Redis's shared.loadingerr.
const msgLoading = "LOADING Redis is loading the dataset in memory"

// loadingState is Redis's server.loading and its progress figures.
type loadingState struct {
	active atomic.Bool
	// startup is set while the start-up load runs (LoadData), also
	// around the file's load itself: clients are served then, and every
	// command without the loading flag is refused until the data set and
	// the AOF are ready.
	startup    atomic.Bool
	startUnix  atomic.Int64 // loading_start_time
	totalBytes atomic.Int64 // loading_total_bytes (0: unknown, as a diskless load)
	loaded     atomic.Int64 // loading_loaded_bytes
	// delayOwed is key-load-delay's time not slept yet, µs (keyLoadDelay).
	delayOwed atomic.Int64
}

// startLoading enters the loading state for a load of total bytes (0 if
// unknown) and returns the function that leaves it.
func (s *Server) startLoading(total int64) (stop func()) {
	l := &s.loading
	l.startUnix.Store(time.Now().Unix())
	l.totalBytes.Store(total)
	l.loaded.Store(0)
	l.active.Store(true)
	s.cfg.SetLoading(true) // CONFIG SET refuses dir, appendonly ... (DENY_LOADING_CONFIG)
	s.repl.updateGuards()
	return func() {
		l.active.Store(false)
		s.cfg.SetLoading(false)
		s.repl.updateGuards()
	}
}

// refusing reports whether commands without the loading flag are refused.
func (l *loadingState) refusing() bool { return l.active.Load() || l.startup.Load() }

// loadedKey records the load's progress after a key that ended at offset
// bytes, and sleeps key-load-delay.
func (s *Server) loadedKey(offset int64) {
	s.loading.loaded.Store(offset)
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
	if !c.srv.loading.refusing() || c.isMasterLink() {
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
