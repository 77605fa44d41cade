package node

import (
	"runtime"
	"slices"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/store"
	lua "github.com/yuin/gopher-lua"
)

// Scripts that run on their own slots.
//
// A script (EVAL, EVALSHA, FCALL and their _RO forms) that declares keys
// runs under the slot locks of those keys, which the dispatcher took for
// the command as for any multi-key command, instead of closing the
// execution gate: other clients go on running commands on other slots,
// and those on the script's slots wait for its end, as they would for a
// slot-locked EXEC. Scripts still run one at a time (one Lua state each for
// EVAL and functions; engine.runMu, always taken before slot locks).
//
// What a script may touch is known only as it runs. Redis 7.0 lets a
// script touch undeclared keys except in cluster mode with shebang flags
// lacking allow-cross-slot-keys (one slot: checkClusterKeys refuses the
// others with Redis's error). Every command a locked run calls is covered
// first (cover):
//
//   - keys in the slots it holds (same database): runs, without locking;
//   - a keyless command that does not touch the keyspace (PING, TIME,
//     SELECT, PUBLISH...): runs;
//   - anything else — an undeclared slot, another database, a
//     keyspace-wide command (KEYS, SCAN, FLUSHALL, RANDOMKEY, DEBUG...),
//     SORT BY/GET, MOVE, COPY, which lock beyond the command's keys:
//     if everything the script ran so far only read, the run gives up (its
//     Lua state is cancelled, nothing is replied or propagated) and the
//     script runs again from the start with the gate closed, as a keyless
//     script does. The script (by sha, or the function) is marked and
//     runs exclusive from then on. (The reads of the abandoned run are
//     counted twice in keyspace hits/misses and may raise keymiss events
//     twice; nothing else of them is visible.)
//   - if it already wrote, an undeclared slot of the same database is
//     taken with TryLock, which cannot deadlock (it never waits while
//     holding): held to the script's end. If another client holds it (for
//     a moment, a few retries), or the command needs more than slots, the
//     call is refused: "ERR Script attempted to access a key outside its
//     declared keys' slots after writing ..." — shoal's only departure
//     from standalone Redis here, for a script that writes first and then
//     reaches beyond its declared keys the first time it is run; it runs
//     exclusive from then on. Declaring every key avoids it.
//
// Busy scripts: past busy-reply-threshold a locked run marks the gate
// (setRunBusy), so other clients' new commands are answered -BUSY and
// SCRIPT KILL / FUNCTION KILL / SHUTDOWN NOSAVE get through, as with a
// gate-holding script; commands already waiting for its slots wait for its
// end. Before the threshold the run is invisible to SCRIPT KILL and
// FUNCTION STATS (NOTBUSY, no running script), as in Redis where nothing
// else runs then. While any script runs the keyspace clock stands still at
// its start for every client (keyspaceClock): other slots' keys do not
// expire during it.

// lockedRun is a script's run under its declared keys' slot locks.
type lockedRun struct {
	db    *store.DB
	held  []uint16 // the declared keys' slots, ascending (the caller's slotBuf)
	extra []uint16 // undeclared slots taken with TryLock after a write
	// restart: the run gave up to run again exclusive.
	restart bool
}

// lockedRunRetries bounds the TryLock attempts on an undeclared slot.
const lockedRunRetries = 200

// restartMsg is the error the script's calls get while a run that gave up
// unwinds (its context is cancelled: it never reaches the reply).
const restartMsg = "Script reached beyond its declared keys: running again exclusive"

// lockedRunFor returns the locked run for a script about to run, or nil
// when it must close the gate: no declared keys, run inside an exclusive
// EXEC (or under the gate otherwise), or marked as reaching beyond them.
func (c *Client) lockedRunFor(run *scriptRun, keys [][]byte) *lockedRun {
	db := c.LockedDB()
	if len(keys) == 0 || db == nil || c.tx.exclusive || run.roams == nil || run.roams.Load() || len(c.slotBuf) == 0 {
		return nil
	}
	run.lockedStore = lockedRun{db: db, held: c.slotBuf}
	return &run.lockedStore
}

// runLuaLocked runs the script holding its declared keys' slots (the
// dispatcher took them). Scripts run one at a time and runMu comes before
// slot locks: when another script runs, the slots are let go while
// waiting for it.
func (c *Client) runLuaLocked(run *scriptRun, lr *lockedRun, fnOf func(*scriptEngine) (*luaEnv, *lua.LFunction), keys, argv [][]byte) (restart bool) {
	eng := &c.srv.tx.scripts
	if !eng.runMu.TryLock() {
		lr.db.UnlockSlots(lr.held)
		eng.lockRun()
		lr.db.LockSlots(lr.held)
	}
	defer eng.runMu.Unlock()
	restart = c.runLuaBody(run, lr, fnOf, keys, argv)
	for _, sl := range lr.extra {
		lr.db.Unlock(sl)
	}
	return restart
}

// lockRun takes runMu. Scripts are short and many clients may want it:
// the waiters yield and retry for a while before they sleep on the mutex,
// so that whichever runs first takes it when it frees, rather than a
// sleeping waiter it is handed to and that must first be woken (a convoy
// that let the Lua state sit idle between scripts).
func (eng *scriptEngine) lockRun() {
	for i := 0; i < 64; i++ {
		runtime.Gosched()
		if eng.runMu.TryLock() {
			return
		}
	}
	eng.runMu.Lock()
}

// noteRan records that the script ran a command that does more than read.
func (run *scriptRun) noteRan(spec *command.Spec) {
	if spec.Flags&command.FlagReadonly == 0 && !keylessQuiet(spec) {
		run.onlyReads = false
	}
}

// keylessQuiet reports whether a command without keys leaves the keyspace
// and the outside world alone (PING, ECHO, TIME, SELECT...).
func keylessQuiet(spec *command.Spec) bool {
	const touches = command.CatKeyspace | command.CatRead | command.CatWrite | command.CatAdmin | command.CatDangerous | command.CatPubsub
	return spec.ACL&touches == 0 &&
		spec.Flags&(command.FlagWrite|command.FlagReadonly|command.FlagAdmin|command.FlagMayReplicate|command.FlagPubsub) == 0
}

// keylessAllowedLocked reports whether a keyless command may run in a
// locked run: it touches no key (PUBLISH reaches subscribers, not keys).
func keylessAllowedLocked(spec *command.Spec) bool {
	if keylessQuiet(spec) {
		return true
	}
	return spec.FullName() == "publish"
}

// locksBeyondKeys reports whether the command's handler takes locks beyond
// its keys' slots (SORT's BY/GET patterns, MOVE and COPY's other database).
func locksBeyondKeys(spec *command.Spec, argv [][]byte) bool {
	switch spec.FullName() {
	case "move", "copy":
		return true
	case "sort", "sort_ro":
		return hasArg(argv, "by") || hasArg(argv, "get")
	}
	return false
}

// cover makes sure a locked run may run the command (see the top of this
// file): "" when it may, else the error the call gets.
func (run *scriptRun) cover(spec *command.Spec, argv [][]byte, db *store.DB, keys []int, sl []uint16) string {
	lr := run.locked
	if lr.restart {
		return restartMsg
	}
	var missing []uint16
	switch {
	case len(keys) == 0 && len(sl) == 0:
		if keylessAllowedLocked(spec) {
			return ""
		}
		return run.escape(spec, "This command needs the whole keyspace")
	case db != lr.db || locksBeyondKeys(spec, argv):
		return run.escape(spec, "This command reaches beyond the slots of the script's declared keys")
	}
	for _, x := range sl {
		if !slices.Contains(lr.held, x) && !slices.Contains(lr.extra, x) {
			missing = append(missing, x)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	if run.onlyReads {
		return run.escape(spec, "")
	}
	for _, x := range missing {
		if !tryLockSlot(db, x) {
			return run.escape(spec, "Script attempted to access a key outside its declared keys' slots after writing, while another client held it")
		}
		lr.extra = append(lr.extra, x)
	}
	return ""
}

// tryLockSlot takes the slot lock if it becomes free within a few tries:
// its holder may be waiting for a slot the script holds, so it never
// waits for good.
func tryLockSlot(db *store.DB, slot uint16) bool {
	for i := 0; i < lockedRunRetries; i++ {
		if db.TryLock(slot) {
			return true
		}
		runtime.Gosched()
	}
	return false
}

// escape handles a command the locked run cannot run: if the script has
// only read so far, the run gives up and runs again exclusive; otherwise
// the call is refused with why (and the script runs exclusive from then
// on).
func (run *scriptRun) escape(spec *command.Spec, why string) string {
	run.roams.Store(true)
	if run.onlyReads {
		run.locked.restart = true
		run.cancel() // the Lua state stops at its next instruction
		return restartMsg
	}
	if why == "" {
		why = "Script attempted to access a key outside its declared keys' slots after writing"
	}
	return run.refuse(spec, why+"; declare every key the script uses")
}

// runningVisible returns the running script as other clients may see it:
// a locked run only once it is busy (before that, in Redis, nothing else
// would run while it does).
func (eng *scriptEngine) runningVisible() *scriptRun {
	run := eng.running.Load()
	if run != nil && run.underLocks.Load() && !run.busy.Load() {
		return nil
	}
	return run
}

// setRunBusy marks a locked run that passed busy-reply-threshold: other
// clients' commands get -BUSY, as for a gate-holding script.
func (g *execGate) setRunBusy(run *scriptRun) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.busyRun != nil {
		return
	}
	g.busyRun, g.busyEvl = run, run.eval
	g.closed.Store(true)
	g.wake()
}

// wake wakes the clients waiting for the gate's owner to let go, to look
// at the gate again (only an owned gate has waiters: its channel is open).
func (g *execGate) wake() {
	if g.owner != nil {
		close(g.changed)
		g.changed = make(chan struct{})
	}
}

// clearRunBusy ends what setRunBusy started, when run was marked.
func (g *execGate) clearRunBusy(run *scriptRun) {
	if !run.busy.Load() {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.busyRun != run {
		return
	}
	g.busyRun = nil
	g.closed.Store(g.owner != nil)
	g.wake()
}
