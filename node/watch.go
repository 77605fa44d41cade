package node

import (
	"sync"
	"sync/atomic"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/slots"
)

// WATCH / UNWATCH (Redis 7.0 multi.c semantics).
//
// A watched key is "touched" — and the watching client's next EXEC fails
// with a nil reply — by:
//   - any command that modified it: after every handler, propagateEffects
//     calls touchWritten, which derives the written keys from the command's
//     key specs (the keys whose spec is not RO), or from the explicit
//     effect when the handler gave one (SMOVE whose member was already in
//     the destination writes only the source); a command that failed or
//     said NoEffect touched nothing;
//   - its deletion by expiry (lazy or active: the keyspace's KeyExpired
//     event, node/server.go);
//   - FLUSHDB / FLUSHALL (the watched keys that existed), SWAPDB (the
//     watched keys that exist in either database).
//
// EXEC also fails when a key that was live when WATCHed is not live any
// more without having been touched: it expired logically (Redis's
// isWatchedKeyExpired). A key that was already expired when WATCHed does
// not count as changed when it is finally deleted.
//
// Concurrency: the registry is one mutex-guarded map per database number.
// Touches happen under the written key's slot lock (lock order: slot
// locks, then watchRegistry.mu). The hot path pays one atomic load
// (watchRegistry.n) when nobody watches.

// watchRegistry maps (db, key) to the clients watching it.
type watchRegistry struct {
	n  atomic.Int64 // watched (client, key) pairs; 0 = nobody watches
	mu sync.Mutex
	// dbs[db][key] lists the watch records of that key.
	dbs map[int]map[string][]*watchedKey
}

// watchedKey is one client's watch of one key.
type watchedKey struct {
	c   *Client
	db  int
	key string
	// live is whether the key existed (not logically expired) when it was
	// watched; EXEC fails if a live key is no longer live.
	live bool
}

// clientWatch is a client's WATCH state, owned by its goroutine except
// dirty, which touching writers set.
type clientWatch struct {
	keys  []*watchedKey
	dirty atomic.Bool // a watched key was touched: EXEC fails
}

// watching reports whether any client watches any key (hot path).
func (r *watchRegistry) watching() bool { return r.n.Load() != 0 }

// add registers a watch; it is a no-op when c already watches key in db.
func (r *watchRegistry) add(c *Client, db int, key string, live bool) {
	for _, wk := range c.tx.watch.keys {
		if wk.db == db && wk.key == key {
			return
		}
	}
	wk := &watchedKey{c: c, db: db, key: key, live: live}
	r.mu.Lock()
	if r.dbs == nil {
		r.dbs = make(map[int]map[string][]*watchedKey)
	}
	m := r.dbs[db]
	if m == nil {
		m = make(map[string][]*watchedKey)
		r.dbs[db] = m
	}
	m[key] = append(m[key], wk)
	r.n.Add(1)
	r.mu.Unlock()
	c.tx.watch.keys = append(c.tx.watch.keys, wk)
}

// unwatchAll drops every watch of c and clears its dirty flag.
func (r *watchRegistry) unwatchAll(c *Client) {
	w := &c.tx.watch
	if len(w.keys) > 0 {
		r.mu.Lock()
		for _, wk := range w.keys {
			m := r.dbs[wk.db]
			list := m[wk.key]
			for i, x := range list {
				if x == wk {
					list = append(list[:i], list[i+1:]...)
					break
				}
			}
			if len(list) == 0 {
				delete(m, wk.key)
				if len(m) == 0 {
					delete(r.dbs, wk.db)
				}
			} else {
				m[wk.key] = list
			}
		}
		r.n.Add(-int64(len(w.keys)))
		r.mu.Unlock()
		clear(w.keys)
		w.keys = w.keys[:0]
	}
	w.dirty.Store(false)
}

// touch marks the watchers of key in db dirty. live tells whether the key
// exists after the change: a key that was not live when watched (missing
// or already expired) and is still not live has not logically changed
// (Redis: deleting an already expired key is no change).
func (r *watchRegistry) touch(db int, key []byte, live func() bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	list := r.dbs[db][string(key)]
	if len(list) == 0 {
		return
	}
	liveNow := -1
	for _, wk := range list {
		if !wk.live {
			if liveNow < 0 {
				liveNow = 0
				if live != nil && live() {
					liveNow = 1
				}
			}
			if liveNow == 0 {
				continue
			}
		}
		wk.c.tx.watch.dirty.Store(true)
	}
}

// cmdWatch: WATCH key [key ...]. The dispatcher holds the keys' slots.
func cmdWatch(c *Client, args [][]byte) {
	if c.multi != nil {
		c.Error("ERR WATCH inside MULTI is not allowed")
		return
	}
	if c.tx.watch.dirty.Load() {
		// No point in watching more: EXEC fails anyway.
		c.OK()
		return
	}
	db := c.DB()
	for _, k := range args[1:] {
		live := db.Exists(k) // does not expire the key: WATCH changes nothing
		c.srv.tx.watch.add(c, db.ID(), string(k), live)
	}
	c.OK()
}

// cmdUnwatch: UNWATCH.
func cmdUnwatch(c *Client, args [][]byte) {
	c.srv.tx.watch.unwatchAll(c)
	c.OK()
}

// watchFailed reports whether EXEC must fail because of WATCH: a watched
// key was touched, or a key live when watched is not live any more (it
// expired logically). Each key's slot is locked for the check unless the
// caller holds it (held reports whether db's slot is already locked).
func (c *Client) watchFailed(held func(db int, slot uint16) bool) bool {
	w := &c.tx.watch
	if w.dirty.Load() {
		return true
	}
	for _, wk := range w.keys {
		if !wk.live {
			continue
		}
		db := c.srv.ks.DB(wk.db)
		k := []byte(wk.key)
		slot := slots.KeySlot(k)
		locked := held != nil && held(wk.db, slot)
		if !locked {
			db.Lock(slot)
		}
		live := db.Exists(k)
		if !locked {
			db.Unlock(slot)
		}
		if !live {
			return true
		}
	}
	return w.dirty.Load()
}

// touchWritten runs after a handler (from propagateEffects, with the
// command's slots locked) when somebody watches: it touches the keys the
// command wrote.
func (c *Client) touchWritten(spec *command.Spec, args [][]byte) {
	if c.errored || c.bs.pending != nil {
		return
	}
	if isDBWide(spec) {
		// FLUSHDB/FLUSHALL/SWAPDB propagate themselves (and say NoEffect).
		c.touchDBWide(spec, args)
		return
	}
	db := c.DB()
	dbID := db.ID()
	reg := &c.srv.tx.watch
	c.eachWrittenKey(spec, args, func(k []byte) {
		reg.touch(dbID, k, func() bool { return db.Exists(k) })
	})
}

// eachWrittenKey calls fn with each key a command changed: the keys of
// its explicit effect when the handler gave one, else its keys whose key
// spec is not read-only; none when it changed nothing. (WATCH and client
// tracking both react to exactly these: Redis's signalModifiedKey.)
func (c *Client) eachWrittenKey(spec *command.Spec, args [][]byte, fn func(key []byte)) {
	fx := c.Effects()
	if fx.None && !fx.Replaced {
		return
	}
	if fx.Replaced {
		for _, cmd := range fx.Cmds {
			espec, unknown := c.srv.table.lookupOwn(cmd)
			if espec == nil || unknown {
				continue
			}
			for _, p := range writtenKeys(espec, cmd) {
				fn(cmd[p])
			}
		}
		return
	}
	if spec.Flags&command.FlagWrite == 0 {
		return
	}
	for _, p := range writtenKeys(spec, args) {
		fn(args[p])
	}
}

// writtenKeys returns the positions of the keys a command may write: the
// keys of its non-RO key specs. For commands whose keys a procedure finds
// (SORT ... STORE, GEORADIUS ... STORE) the first key belongs to the first
// spec, the rest to the later ones.
func writtenKeys(spec *command.Spec, args [][]byte) []int {
	if spec.GetKeys != nil {
		pos, err := command.Keys(spec, args, nil)
		if err != nil || len(pos) == 0 {
			return nil
		}
		if len(spec.KeySpecs) > 0 && spec.KeySpecs[0].Flags&command.KeyRO != 0 {
			pos = pos[1:]
		}
		return pos
	}
	var out []int
	for i := range spec.KeySpecs {
		if spec.KeySpecs[i].Flags&(command.KeyRO|command.KeyNotKey) != 0 {
			continue
		}
		one := command.Spec{Arity: spec.Arity, KeySpecs: spec.KeySpecs[i : i+1]}
		out, _ = command.Keys(&one, args, out)
	}
	return out
}

// touchDBWide touches the watchers FLUSHDB / FLUSHALL / SWAPDB affect,
// after the command ran (holding no slot lock). A key live when watched and
// not touched since existed until the flush, so its watchers are dirty
// (also when it had expired logically meanwhile, as Redis: it was still in
// the table). A key that was missing or stale when watched changed only if
// SWAPDB brought a live key in its place.
func (c *Client) touchDBWide(spec *command.Spec, args [][]byte) {
	reg := &c.srv.tx.watch
	var emptied []int
	swapped := false
	switch spec.FullName() {
	case "flushdb":
		emptied = []int{int(c.dbIndex.Load())}
	case "flushall":
		for i := 0; i < c.srv.ks.NumDBs(); i++ {
			emptied = append(emptied, i)
		}
	case "swapdb":
		a, _ := command.ParseInt64(args[1])
		b, _ := command.ParseInt64(args[2])
		emptied = []int{int(a), int(b)}
		swapped = true
	}
	var check []*watchedKey
	reg.mu.Lock()
	for _, db := range emptied {
		for _, list := range reg.dbs[db] {
			for _, wk := range list {
				if wk.live {
					wk.c.tx.watch.dirty.Store(true)
				} else if swapped {
					check = append(check, wk)
				}
			}
		}
	}
	reg.mu.Unlock()
	for _, wk := range check {
		if c.liveIn(wk.db, wk.key) {
			wk.c.tx.watch.dirty.Store(true)
		}
	}
}

// touchFlushed marks dirty the watchers of keys that were live when
// watched in the given database (every database when db < 0) whose slot
// is in slotSet (every slot when nil): keys the cluster deleted (FLUSHALL
// of a node that became a replica, slots lost to a newer configuration).
func (r *watchRegistry) touchFlushed(db int, slotSet []int) {
	if !r.watching() {
		return
	}
	inSet := slotMembership(slotSet)
	r.mu.Lock()
	defer r.mu.Unlock()
	for d, m := range r.dbs {
		if db >= 0 && d != db {
			continue
		}
		for key, list := range m {
			if inSet != nil && !inSet[slots.KeySlot([]byte(key))] {
				continue
			}
			for _, wk := range list {
				if wk.live {
					wk.c.tx.watch.dirty.Store(true)
				}
			}
		}
	}
}

// slotMembership is slotSet as a set; nil (every slot) stays nil.
func slotMembership(slotSet []int) map[uint16]bool {
	if slotSet == nil {
		return nil
	}
	inSet := make(map[uint16]bool, len(slotSet))
	for _, sl := range slotSet {
		inSet[uint16(sl)] = true
	}
	return inSet
}

// liveIn reports whether key is live in database db, locking its slot.
func (c *Client) liveIn(db int, key string) bool {
	d := c.srv.ks.DB(db)
	k := []byte(key)
	slot := slots.KeySlot(k)
	d.Lock(slot)
	defer d.Unlock(slot)
	return d.Exists(k)
}

// isDBWide reports whether a command empties or swaps whole databases
// (its watch touches are computed before it runs).
func isDBWide(spec *command.Spec) bool {
	switch spec.FullName() {
	case "flushdb", "flushall", "swapdb":
		return true
	}
	return false
}
