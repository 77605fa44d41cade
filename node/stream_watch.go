package node

import (
	"slices"
	"sync"
	"time"

	"github.com/shoal-db/shoal/slots"
	"github.com/shoal-db/shoal/store"
)

// ---------------------------------------------------------------- watching blocked XREADGROUP keys

// Redis unblocks an XREADGROUP waiter with -UNBLOCKED as soon as its stream
// is deleted or replaced (DEL, SET, RENAME over it, FLUSHALL, SWAPDB...):
// the keyspace signals every stream key that goes away. shoal's writers
// only signal the keys they add data to, so the keys XREADGROUP clients
// wait on are watched instead: a watcher goroutine, running only while
// there are such waiters, looks at each watched key a few times a second
// and, when the value under the key is no longer the stream it saw, makes
// the key ready as a writer would. The serve callbacks then decide what
// Redis decides after such a change (data, -NOGROUP, -UNBLOCKED, or wait
// on). A store-level hook on deletion and overwrite would make this
// immediate; until there is one, the watcher's delay (watchInterval) is
// the price.

const (
	watchInterval    = 10 * time.Millisecond
	watchPerKeyDelay = 50 * time.Microsecond // spreads the work when many keys are watched
)

type streamWatcher struct {
	srv     *Server
	mu      sync.Mutex
	keys    map[blockKey][]watchEntry
	running bool
}

// watchEntry is an XREADGROUP waiter on a watched key and the stream the
// key held when the waiter last saw it.
type watchEntry struct {
	w    *blockWaiter
	seen *store.Stream
}

// streamWatch returns the server's watcher (created in New).
func (s *Server) streamWatch() *streamWatcher { return s.streamWatcher }

// newStreamWatcher returns the watcher of server s, idle until a waiter is
// added.
func newStreamWatcher(s *Server) *streamWatcher {
	return &streamWatcher{srv: s, keys: map[blockKey][]watchEntry{}}
}

// add watches keys for waiter w. The caller holds the keys' slot locks, so
// the streams it records are the ones w saw.
func (sw *streamWatcher) add(w *blockWaiter, db *store.DB, keys [][]byte) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	for _, k := range keys {
		bk := blockKey{db: db.ID(), key: string(k)}
		sw.keys[bk] = append(sw.keys[bk], watchEntry{w: w, seen: streamAt(db, k)})
	}
	if !sw.running {
		sw.running = true
		go sw.run()
	}
}

// streamAt is the stream under key, nil if none. Caller holds the slot lock.
func streamAt(db *store.DB, key []byte) *store.Stream {
	e := db.Lookup(key, store.LookupNoTouch|store.LookupNoStats|store.LookupNoExpire)
	if e == nil || e.Type() != store.TypeStream {
		return nil
	}
	return e.Stream()
}

// run is the watcher goroutine; it exits when nothing is watched.
func (sw *streamWatcher) run() {
	reg := sw.srv.blocking()
	for {
		sw.mu.Lock()
		n := len(sw.keys)
		sw.mu.Unlock()
		delay := max(watchInterval, time.Duration(n)*watchPerKeyDelay)
		select {
		case <-sw.srv.done:
			sw.mu.Lock()
			sw.running = false
			clear(sw.keys)
			sw.mu.Unlock()
			return
		case <-time.After(delay):
		}
		if !sw.sweep(reg) {
			return
		}
	}
}

// sweep drops finished waiters, looks at every watched key and serves the
// keys whose stream changed. It returns false (and marks the watcher
// stopped) when nothing is left to watch.
func (sw *streamWatcher) sweep(reg *blockRegistry) bool {
	// Which waiters are still waiting is known under the registry lock;
	// the two locks are never held together.
	sw.mu.Lock()
	var all []*blockWaiter
	for _, ws := range sw.keys {
		for _, e := range ws {
			all = append(all, e.w)
		}
	}
	sw.mu.Unlock()
	finished := map[*blockWaiter]bool{}
	reg.mu.Lock()
	for _, w := range all {
		if w.done {
			finished[w] = true
		}
	}
	reg.mu.Unlock()
	sw.mu.Lock()
	probes := make([]blockKey, 0, len(sw.keys))
	for bk, ws := range sw.keys {
		ws = slices.DeleteFunc(ws, func(e watchEntry) bool { return finished[e.w] })
		if len(ws) == 0 {
			delete(sw.keys, bk)
			continue
		}
		sw.keys[bk] = ws
		probes = append(probes, bk)
	}
	if len(sw.keys) == 0 {
		sw.running = false
		sw.mu.Unlock()
		return false
	}
	sw.mu.Unlock()

	ks := sw.srv.ks
	var ready []blockKey
	for _, bk := range probes {
		if bk.db < 0 || bk.db >= ks.NumDBs() {
			continue
		}
		db := ks.DB(bk.db)
		key := []byte(bk.key)
		slot := slots.KeySlot(key)
		db.Lock(slot)
		now := streamAt(db, key)
		db.Unlock(slot)
		changed := false
		sw.mu.Lock()
		for i := range sw.keys[bk] {
			if e := &sw.keys[bk][i]; e.seen != now {
				e.seen = now
				changed = true
			}
		}
		sw.mu.Unlock()
		if changed {
			ready = append(ready, bk)
		}
	}
	// Serve the changed keys as the end of a writing command would.
	for i := 0; i < len(ready); i++ {
		reg.serveKey(sw.srv, ready[i], &ready)
	}
	return true
}
