package command

import "strconv"

// The write-effect API (DESIGN.md §4). Everything that leaves the node (the
// replication stream, the AOF, a slot migration stream) carries the
// deterministic effect of a write, never the request: SPOP becomes SREM,
// EXPIRE becomes PEXPIREAT. A handler says what its effect is:
//   - by default a write command that did not reply with an error
//     propagates its own argv verbatim;
//   - ReplaceEffect gives the effect explicitly (call it once per command of
//     the effect; a read command may call it too, e.g. to propagate a DEL);
//   - NoEffect says the command changed nothing.
// The dispatcher takes the effect after the handler (TakeEffects) with the
// command's slots still locked.

// Effects is what the running command said about its effect.
type Effects struct {
	// Replaced: ReplaceEffect was called and Cmds is the effect.
	Replaced bool
	// None: NoEffect was called.
	None bool
	// Cmds is the explicit effect, in argv form, in the order it applies.
	Cmds [][][]byte
	// DirtySet: the handler counted its changes itself (Dirty).
	DirtySet bool
	// Charged: every key the command wrote was charged exactly by the
	// store as it was written (ChargedExactly).
	Charged bool
}

// ReplaceEffect appends argv to the running command's effect, which then
// replaces the command's own argv in the feed. argv must stay valid until
// the handler returns.
func (c *Ctx) ReplaceEffect(argv ...[]byte) {
	c.fx.Replaced = true
	c.fx.Cmds = append(c.fx.Cmds, argv)
}

// NoEffect says the running command changed nothing: nothing is propagated
// (an explicit ReplaceEffect still is).
func (c *Ctx) NoEffect() { c.fx.None = true }

// Dirty adds n to the dataset's change count (Redis's server.dirty += n) for
// the running command and replaces the default count: a command whose
// effect reaches the feed counts 1 unless its handler calls Dirty (with 0
// too), a command without an effect counts 0. Handlers call it with what
// Redis's handler adds: the elements pushed, the keys deleted, the fields
// set.
func (c *Ctx) Dirty(n int64) {
	c.fx.DirtySet = true
	c.sess.AddDirty(n)
}

// Changed is Dirty for a command whose effect is exactly its n changes:
// with none it propagates nothing either (Redis propagates a command only
// when it changed the dataset).
func (c *Ctx) Changed(n int64) {
	c.Dirty(n)
	if n == 0 {
		c.NoEffect()
	}
}

// ChargedExactly says that every key the running command wrote is a string
// the store charged exactly as it set it (DB.SetString): the dispatcher
// then skips remeasuring the written keys' memory, a lookup per key that
// would find nothing to change. Only for handlers that write nothing else.
func (c *Ctx) ChargedExactly() { c.fx.Charged = true }

// Effects is the running command's effect state, for the dispatcher (and
// for a handler that counts what it has replaced so far).
func (c *Ctx) Effects() *Effects { return &c.fx }

// ResetEffects clears the effect state for the next command, keeping the
// buffer.
func (c *Ctx) ResetEffects() {
	clear(c.fx.Cmds)
	c.fx.Cmds = c.fx.Cmds[:0]
	c.fx.Replaced, c.fx.None, c.fx.DirtySet, c.fx.Charged = false, false, false, false
}

// PopEffect sets the effect of a pop from a container of size elements:
// cmd key, or cmd key min(count, size) for a counted pop (count ≥ 0).
func (c *Ctx) PopEffect(cmd, key []byte, count int64, size int) {
	if count < 0 {
		c.ReplaceEffect(cmd, key)
		return
	}
	c.ReplaceEffect(cmd, key, strconv.AppendInt(nil, min(count, int64(size)), 10))
}
