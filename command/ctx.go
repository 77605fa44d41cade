// Package command is what a command handler sees of the server: one
// concrete context (Ctx) with the reply writer, the database the dispatcher
// locked, the write-effect API and the hooks into the connection (blocking,
// limits, the output buffer), behind the narrow Session interface the node
// implements. Handlers of the data-type commands live in packages under
// commands/ and import this package, store and leaf packages only: never
// node, replication, gossip, migrate or failover.
//
// The model is tidwall/redcon's handler, which sees a Conn and a Command:
// here a handler is func(c *Ctx, args [][]byte), args[0] being the command
// name as sent. The dispatcher has checked arity, authentication and
// routing and holds the locks of every slot the command's keys hash to.
//
// Concurrency: a Ctx belongs to one connection and is used by that
// connection's goroutine only, except the stand-in Ctx a blocked client is
// served through (its serve callback runs on the writer's goroutine while
// the blocked client's goroutine is parked).
package command

import (
	"unsafe"

	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/resp"
	"github.com/shoal-db/shoal/slots"
	"github.com/shoal-db/shoal/store"
)

// Handler runs one command.
type Handler func(c *Ctx, args [][]byte)

// Session is the connection behind a Ctx: what a handler may ask of the
// server beyond the keyspace. The node's client implements it.
type Session interface {
	// SelectedDB is the client's selected database, for the rare handler
	// that runs with no database locked.
	SelectedDB() *store.DB
	// AddDirty adds n to the server's change count (Redis's server.dirty).
	AddDirty(n int64)
	// BlockClient parks the client on spec's keys (see BlockSpec).
	BlockClient(c *Ctx, spec BlockSpec)
	// SignalReady notes that the running command made key in db able
	// to serve blocked clients; cheap when nobody is blocked.
	SignalReady(db *store.DB, key []byte)
	// SignalDBsSwapped makes every waited key of databases a and b ready.
	SignalDBsSwapped(a, b int)
	// ReplyOverLimitWith reports whether the reply built so far, plus pending
	// bytes, passes the client's output buffer hard limit (the client is
	// then being closed and the handler may stop building).
	ReplyOverLimitWith(pending int) bool
	// OutputCheckAt is the reply size at which ReplyOverLimit is worth
	// asking; Closing reports that the client is closed for its output.
	OutputCheckAt() int
	Closing() bool
	// NormalClient: a plain client connection (not a replica, master link,
	// script or pub/sub client), whose output limit is the normal class.
	NormalClient() bool
	// CloseAfterReply closes the connection once the reply is written.
	CloseAfterReply()
	// PropagateNow sends args to the write-effect feeds at once (commands
	// that change the whole keyspace: SWAPDB, FLUSHALL, MOVE...).
	PropagateNow(args [][]byte)
	// LockForeignSlot takes the lock of slot in database other (not home,
	// the running command's database, whose locks the dispatcher holds) and
	// returns the function that releases it. To keep the lock order it may
	// release and retake the dispatcher's locks first, so the caller looks
	// its keys up only after it returns (MOVE, COPY ... DB).
	LockForeignSlot(home, other *store.DB, slot uint16) (unlock func())
	// SaveAfterFlushAll is what FLUSHALL does once the keyspace is empty
	// (Redis's flushAllDataAndResetRDB): a background save in progress is
	// discarded and, with save points configured, the empty snapshot is
	// saved at once.
	SaveAfterFlushAll()
	// LockWholeDB takes every slot lock of the running command's database
	// beyond the ones already held (SORT ... BY/GET reads any key), and
	// returns the function that restores the previous locks.
	LockWholeDB() (restore func())
	// KeysLocked reports whether the dispatcher holds the slot locks of
	// every key.
	KeysLocked(keys [][]byte) bool
	// IsMasterLink: the client is this replica's link to its master.
	IsMasterLink() bool
	// InScript: the command runs inside EVAL/FCALL.
	InScript() bool
	// FullKeyAccess reports whether the client's ACL user may run the
	// command args with read access to every key (SORT's BY and GET
	// patterns read keys the key extractor cannot see).
	FullKeyAccess(args [][]byte) bool
	// MayBlock: the command may block (not in MULTI/EXEC or a script).
	MayBlock() bool
	// CommandFullName is the command's name as Redis reports it in errors
	// ("zunionstore", "object|encoding").
	CommandFullName(args [][]byte) string
	// ProtoMaxBulkLen is proto-max-bulk-len, read on every string write.
	ProtoMaxBulkLen() int64
	// SelectedDBIndex is the client's selected database number.
	SelectedDBIndex() int
	// WatchStreamKeys, called right after BlockOn by XREADGROUP, has the
	// server wake the client when one of keys is deleted or replaced (Redis
	// answers -UNBLOCKED then); nothing if the client did not block.
	WatchStreamKeys(keys [][]byte)
	// NotifyKeyspaceEvent publishes a keyspace notification (see Ctx.Notify).
	NotifyKeyspaceEvent(class int64, event string, key []byte, db *store.DB)
}

// Ctx is the context a handler runs in. The embedded resp.Writer builds the
// reply.
type Ctx struct {
	resp.Writer
	db   *store.DB
	fx   Effects
	sess Session
	ks   *store.Keyspace
	cfg  *config.Config
	hint keySlotHint
}

// keySlotHint is the hash slot the dispatcher computed for the running
// command's one key, which it routed and locked by: the key is known by
// where its bytes are, which stay put while the handler runs.
type keySlotHint struct {
	key  *byte
	len  int
	slot uint16
}

// HintKeySlot is for the dispatcher, before it calls a handler whose one key
// is key (an argument of the call): its slot is slot. ClearKeySlotHint
// after the call.
func (c *Ctx) HintKeySlot(key []byte, slot uint16) {
	c.hint = keySlotHint{key: unsafe.SliceData(key), len: len(key), slot: slot}
}

// ClearKeySlotHint ends what HintKeySlot said.
func (c *Ctx) ClearKeySlotHint() { c.hint = keySlotHint{} }

// KeySlot is slots.KeySlot(key), without hashing the key again when it is
// the argument the dispatcher hinted (a hot handler's store call takes the
// slot, as the dispatcher already computed it to lock it).
func (c *Ctx) KeySlot(key []byte) uint16 {
	if len(key) > 0 && len(key) == c.hint.len && unsafe.SliceData(key) == c.hint.key {
		return c.hint.slot
	}
	return slots.KeySlot(key)
}

// Init binds a context to its connection and server; call once, before the
// first command.
func (c *Ctx) Init(sess Session, ks *store.Keyspace, cfg *config.Config) {
	c.sess, c.ks, c.cfg = sess, ks, cfg
}

// Session is the connection behind the context.
func (c *Ctx) Session() Session { return c.sess }

// Keyspace is the server's keyspace (all databases).
func (c *Ctx) Keyspace() *store.Keyspace { return c.ks }

// Config is the server's configuration.
func (c *Ctx) Config() *config.Config { return c.cfg }

// SetDB is for the dispatcher: db is the database locked for the running
// command (nil between commands).
func (c *Ctx) SetDB(db *store.DB) { c.db = db }

// LockedDB is the database locked for the running command, nil if none.
func (c *Ctx) LockedDB() *store.DB { return c.db }

// DB returns the database the running command works on: the one the
// dispatcher resolved and locked for it. Resolving the number again inside a
// handler could see another database after a concurrent SWAPDB, whose slots
// are not locked.
func (c *Ctx) DB() DB {
	if c.db != nil {
		return DB{c.db, c}
	}
	return DB{c.sess.SelectedDB(), c}
}

// DBOf is db as the handler's database handle (command.DB): for a command
// that works on another database than its own (MOVE, COPY ... DB).
func (c *Ctx) DBOf(db *store.DB) DB { return DB{db, c} }

// ValidDB reports whether n is a database number.
func (c *Ctx) ValidDB(n int) bool { return n >= 0 && n < c.ks.NumDBs() }

// NowMs is the keyspace clock in unix milliseconds (frozen during a script
// or transaction, as Redis's mstime cache).
func (c *Ctx) NowMs() int64 { return c.ks.Now() }

// Notify raises the keyspace notification event of class (config.Notify*)
// for key in the command's database, as Redis's notifyKeyspaceEvent: call it
// where Redis does, after the change, with the key's slot locked. It costs
// one atomic load when the class is not enabled.
func (c *Ctx) Notify(class int64, event string, key []byte) {
	c.sess.NotifyKeyspaceEvent(class, event, key, c.DB().DB)
}

// NotifyIn is Notify for a key in another database (MOVE, COPY ... DB).
func (c *Ctx) NotifyIn(db *store.DB, class int64, event string, key []byte) {
	c.sess.NotifyKeyspaceEvent(class, event, key, db)
}

// SignalKeyReady notes that the running command made key (in its database)
// able to serve blocked clients: it pushed to a list, added to a sorted
// set... The waiters are served when the command is over.
func (c *Ctx) SignalKeyReady(key []byte) { c.sess.SignalReady(c.DB().DB, key) }

// SignalKeyReadyIn is SignalKeyReady for a key the command wrote in another
// database (MOVE, COPY ... DB).
func (c *Ctx) SignalKeyReadyIn(db *store.DB, key []byte) { c.sess.SignalReady(db, key) }

// BlockOn blocks the client on spec.Keys. Call it from a handler, with the
// slot locks of the keys held, after finding nothing to serve. If the
// client may not block, the timeout (or denied) reply is written at once.
func (c *Ctx) BlockOn(spec BlockSpec) { c.sess.BlockClient(c, spec) }

// ReplyOverLimit is Session.ReplyOverLimitWith with nothing pending.
func (c *Ctx) ReplyOverLimit() bool { return c.sess.ReplyOverLimitWith(0) }
