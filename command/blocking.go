package command

import (
	"time"

	"github.com/shoal-db/shoal/store"
)

// BlockSpec is what a blocking handler (BLPOP, BLMOVE, BZPOPMIN, XREAD
// BLOCK...) passes to Ctx.BlockOn.
type BlockSpec struct {
	// Keys the client waits on; a key given twice counts once.
	Keys [][]byte
	// ExtraKeys are locked, besides the ready key, while the client is
	// served (BLMOVE's destination).
	ExtraKeys [][]byte
	// Timeout is how long to wait; 0 waits forever.
	Timeout time.Duration
	// Serve tries to serve the client from the ready key sc.Key. It runs
	// on the writer's goroutine with the slot locks of sc.Key and of
	// ExtraKeys held in sc.DB, and must not block or take other locks.
	Serve func(sc *BlockServe) ServeResult
	// OnTimeout writes the reply for a timeout (or CLIENT UNBLOCK ...
	// TIMEOUT): a null array for every list and sorted-set command in
	// Redis 7.0 (replyToBlockedClientTimedOut), BLMOVE included.
	OnTimeout func(c *Ctx)
	// OnDenied, if set, writes the immediate reply when the client may not
	// block (inside MULTI/EXEC or a script) instead of OnTimeout: BLMOVE
	// and BRPOPLPUSH answer a null bulk there.
	OnDenied func(c *Ctx)
}

// BlockServe is the context of one serve attempt.
type BlockServe struct {
	// C stands for the blocked client: a context with its id and protocol
	// whose reply writers fill the reply the blocked client sends when it
	// wakes up, and whose effects are propagated. It is not the blocked
	// client's own context, whose goroutine owns it; use DB, not C.DB().
	C   *Ctx
	DB  *store.DB
	Key []byte // the ready key
	// MarkReady notes that serving made key (in DB) ready (a BLMOVE push).
	MarkReady func(key []byte)
}

// ServeResult is what a serve callback did.
type ServeResult uint8

const (
	// ServeSkipped: the client cannot be served from this key now (wrong
	// type for it, ...); it stays blocked and the next waiter is tried.
	ServeSkipped ServeResult = iota
	// ServeDone: the client got its reply (data or an error) and is
	// unblocked.
	ServeDone
	// ServeKeyExhausted: the key has nothing left for anyone (missing or
	// empty); the client stays blocked and the key's round ends.
	ServeKeyExhausted
)
