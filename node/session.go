package node

import (
	"slices"
	"strings"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/slots"
	"github.com/shoal-db/shoal/store"
)

// Client is the command.Session of its handler context: these methods are
// what the handlers in commands/ may ask of the server.
var _ command.Session = (*Client)(nil)

// clientOf is the Client behind a handler context.
func clientOf(x *command.Ctx) *Client { return x.Session().(*Client) }

// nodeHandler adapts a handler written against *Client (the server-level
// commands that stay in node) to the command table's signature.
func nodeHandler(h HandlerFunc) command.Handler {
	return func(x *command.Ctx, args [][]byte) { h(clientOf(x), args) }
}

func (c *Client) AddDirty(n int64) { c.srv.dirty.add(c.id, n) }

func (c *Client) BlockClient(x *command.Ctx, spec command.BlockSpec) { c.blockOn(spec) }

func (c *Client) SignalReady(db *store.DB, key []byte) { c.signalKeyReadyIn(db, key) }

func (c *Client) SignalDBsSwapped(a, b int) { c.signalDBsSwapped(a, b) }

func (c *Client) ReplyOverLimitWith(pending int) bool { return c.replyOverLimitWith(pending) }

func (c *Client) OutputCheckAt() int { return c.obufCheckAt }

func (c *Client) Closing() bool { return c.obufClosing }

func (c *Client) NormalClient() bool {
	return c.guard != nil && c.ps.push == nil && c.kind() == clientNormal
}

func (c *Client) PropagateNow(args [][]byte) { c.propagateNow(args) }

func (c *Client) LockWholeDB() (restore func()) { return c.lockWholeDB() }

// LockForeignSlot takes the lock of slot in database other (≠ home) while
// the dispatcher holds home's locks of c.slotBuf, and returns the function
// that releases it; on return from both, exactly the dispatcher's locks are
// held again, as the dispatcher expects.
//
// Lock order: a goroutine holding locks in two databases takes them in
// store.LockOrderLess order of the databases, and within one database in
// ascending slot order. Two clients MOVE-ing keys in opposite directions
// therefore cannot deadlock. When other comes first, the dispatcher's locks
// are released and retaken after other's: between the two, other commands
// may change those keys, so the caller must look its keys up only after
// this returns.
func (c *Client) LockForeignSlot(home, other *store.DB, slot uint16) (unlock func()) {
	if store.LockOrderLess(home, other) {
		other.Lock(slot)
	} else {
		home.UnlockSlots(c.slotBuf)
		other.Lock(slot)
		home.LockSlots(c.slotBuf)
	}
	return func() { other.Unlock(slot) }
}

func (c *Client) SaveAfterFlushAll() { c.srv.saveAfterFlushAll(c) } // node/persistence.go

// KeysLocked reports whether the slots of all keys are among the ones the
// dispatcher locked for the running command.
func (c *Client) KeysLocked(keys [][]byte) bool {
	for _, k := range keys {
		if !slices.Contains(c.slotBuf, slots.KeySlot(k)) {
			return false
		}
	}
	return true
}

func (c *Client) IsMasterLink() bool { return c.isMasterLink() }

func (c *Client) MayBlock() bool { return c.mayBlock() }

func (c *Client) CommandFullName(args [][]byte) string { return c.cmdFullName(args) }

func (c *Client) ProtoMaxBulkLen() int64 { return c.srv.limits.ProtoMaxBulkLen.Load() }

func (c *Client) SelectedDBIndex() int { return int(c.dbIndex.Load()) }

func (c *Client) WatchStreamKeys(keys [][]byte) {
	if c.bs.pending != nil {
		c.srv.streamWatch().add(c.bs.pending, c.DB().DB, keys) // node/stream_watch.go
	}
}

// cmdFullName returns the running command's full lower-case name (Redis's
// c->cmd->fullname) for error texts.
func (c *Client) cmdFullName(args [][]byte) string {
	if spec, _ := c.srv.table.lookup(args); spec != nil {
		return spec.FullName()
	}
	return strings.ToLower(string(args[0]))
}
