package node

// This file holds the shape of the command table: every command the server
// knows is one CommandSpec value. The metadata (arity, flags, ACL categories,
// key specs, tips, docs) is data written in commandmeta_*.go; the behaviour is
// attached by name in the cmd_*.go files (see table.go). The same key specs
// drive slot routing, CROSSSLOT, COMMAND GETKEYS and, later, WATCH,
// replication and ACL: there is one key extractor (keys.go), never two.

import "github.com/shoal-db/shoal/command"

// CmdFlag is one of Redis 7.0's command flags (server.h CMD_*).
type CmdFlag uint32

const (
	FlagWrite CmdFlag = 1 << iota
	FlagReadonly
	FlagDenyOOM
	FlagModule
	FlagAdmin
	FlagPubsub
	FlagNoscript
	FlagBlocking
	FlagLoading
	FlagStale
	FlagSkipMonitor
	FlagSkipSlowlog
	FlagAsking
	FlagFast
	FlagNoAuth
	FlagMayReplicate
	FlagNoMandatoryKeys
	FlagNoAsyncLoading
	FlagNoMulti
	FlagMovableKeys
	FlagAllowBusy
	FlagProtected // not shown by COMMAND (Redis hides it too); guarded by enable-*-command
)

// cmdFlagNames is in the order Redis 7.0 prints flags (addReplyCommandFlags).
// may_replicate and protected are real flags that Redis 7.0.15 does not show.
var cmdFlagNames = []struct {
	flag CmdFlag
	name string
}{
	{FlagWrite, "write"}, {FlagReadonly, "readonly"}, {FlagDenyOOM, "denyoom"},
	{FlagModule, "module"}, {FlagAdmin, "admin"}, {FlagPubsub, "pubsub"},
	{FlagNoscript, "noscript"}, {FlagBlocking, "blocking"}, {FlagLoading, "loading"},
	{FlagStale, "stale"}, {FlagSkipMonitor, "skip_monitor"}, {FlagSkipSlowlog, "skip_slowlog"},
	{FlagAsking, "asking"}, {FlagFast, "fast"}, {FlagNoAuth, "no_auth"},
	{FlagNoMandatoryKeys, "no_mandatory_keys"},
	{FlagNoAsyncLoading, "no_async_loading"}, {FlagNoMulti, "no_multi"},
	{FlagMovableKeys, "movablekeys"}, {FlagAllowBusy, "allow_busy"},
}

// ACLCat is an ACL category bit (server.h ACL_CATEGORY_*).
type ACLCat uint32

const (
	CatKeyspace ACLCat = 1 << iota
	CatRead
	CatWrite
	CatSet
	CatSortedSet
	CatList
	CatHash
	CatString
	CatBitmap
	CatHyperLogLog
	CatGeo
	CatStream
	CatPubsub
	CatAdmin
	CatFast
	CatSlow
	CatBlocking
	CatDangerous
	CatConnection
	CatTransaction
	CatScripting
)

// aclCatNames is in the order Redis 7.0 prints categories.
var aclCatNames = []struct {
	cat  ACLCat
	name string
}{
	{CatKeyspace, "keyspace"}, {CatRead, "read"}, {CatWrite, "write"}, {CatSet, "set"},
	{CatSortedSet, "sortedset"}, {CatList, "list"}, {CatHash, "hash"}, {CatString, "string"},
	{CatBitmap, "bitmap"}, {CatHyperLogLog, "hyperloglog"}, {CatGeo, "geo"}, {CatStream, "stream"},
	{CatPubsub, "pubsub"}, {CatAdmin, "admin"}, {CatFast, "fast"}, {CatSlow, "slow"},
	{CatBlocking, "blocking"}, {CatDangerous, "dangerous"}, {CatConnection, "connection"},
	{CatTransaction, "transaction"}, {CatScripting, "scripting"},
}

// KeySpecFlag is a key-spec flag (server.h CMD_KEY_*).
type KeySpecFlag uint32

const (
	KeyRO KeySpecFlag = 1 << iota
	KeyRW
	KeyOW
	KeyRM
	KeyAccess
	KeyUpdate
	KeyInsert
	KeyDelete
	KeyNotKey
	KeyIncomplete
	KeyVariableFlags
)

var keySpecFlagNames = []struct {
	flag KeySpecFlag
	name string
}{
	{KeyRO, "RO"}, {KeyRW, "RW"}, {KeyOW, "OW"}, {KeyRM, "RM"}, {KeyAccess, "access"},
	{KeyUpdate, "update"}, {KeyInsert, "insert"}, {KeyDelete, "delete"}, {KeyNotKey, "not_key"},
	{KeyIncomplete, "incomplete"}, {KeyVariableFlags, "variable_flags"},
}

// BeginSearchType tells how the first key of a spec is found.
type BeginSearchType uint8

const (
	BeginUnknown BeginSearchType = iota
	BeginIndex                   // the key starts at argv[Index]
	BeginKeyword                 // the key follows Keyword, searched from StartFrom (negative = from the end)
)

// FindKeysType tells how many keys follow the first one.
type FindKeysType uint8

const (
	FindUnknown FindKeysType = iota
	FindRange                // LastKey relative to the first key (-1 = last arg), KeyStep, Limit
	FindKeynum               // the count is at KeynumIdx (relative), keys start at FirstKey, KeyStep apart
)

// KeySpec is one Redis 7.0 key specification.
type KeySpec struct {
	Notes string
	Flags KeySpecFlag

	BeginSearch BeginSearchType
	Index       int    // BeginIndex
	Keyword     string // BeginKeyword
	StartFrom   int    // BeginKeyword

	FindKeys  FindKeysType
	LastKey   int // FindRange
	KeyStep   int // FindRange and FindKeynum
	Limit     int // FindRange
	KeynumIdx int // FindKeynum
	FirstKey  int // FindKeynum
}

// CommandDoc is what COMMAND DOCS reports for a command.
type CommandDoc struct {
	Summary         string
	Since           string
	Group           string
	Complexity      string
	DeprecatedSince string
	ReplacedBy      string
	DocFlags        []string // "deprecated", "syscmd"
}

// CommandSpec is one row of the command table.
type CommandSpec struct {
	Name     string // lower case; a subcommand's bare name ("get"), see fullName
	Arity    int    // Redis convention: >0 exact, <0 at least -Arity (counting the name, and the container for subcommands)
	Flags    CmdFlag
	ACL      ACLCat // explicit categories; the implicit ones are added by finalize
	KeySpecs []KeySpec
	Tips     []string
	Doc      CommandDoc

	// GetKeys, when set, replaces the key-spec walk for commands whose key
	// positions the specs cannot describe completely (Redis's getkeys_proc).
	GetKeys func(args [][]byte) ([]int, error)
	// GetKeyFlags, when set, gives the flags of a key position GetKeys found
	// and no single key spec describes (COMMAND GETKEYSANDFLAGS).
	GetKeyFlags func(args [][]byte, pos int) KeySpecFlag

	// Subcommands of a container command (CONFIG, CLIENT, ...), by lower-case name.
	Subcommands map[string]*CommandSpec
	Parent      *CommandSpec

	// Handler runs the command; nil means the command is described but not
	// implemented yet, and COMMAND does not list it.
	Handler command.Handler

	// Derived by finalize: the legacy first/last/step triple.
	firstKey, lastKey, keyStep int
	fullName                   string // "config|get" for subcommands, as shown by COMMAND
	id                         int
	stats                      *cmdStats
}
