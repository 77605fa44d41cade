package command

// This file holds the shape of the command table: every command the server
// knows is one Spec value. The metadata (arity, flags, ACL categories, key
// specs, tips, docs) is data written in meta_*.go; the behaviour is attached
// by name when node builds its table (node/table.go). The same key specs
// drive slot routing, CROSSSLOT, COMMAND GETKEYS and, later, WATCH,
// replication and ACL: there is one key extractor (keys.go), never two.
// The spec holds no server state: node keeps each command's statistics in
// a slice indexed by Spec.ID.

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

// CmdFlagNames is in the order Redis 7.0 prints flags (addReplyCommandFlags).
// may_replicate and protected are real flags that Redis 7.0.15 does not show.
var CmdFlagNames = []struct {
	Flag CmdFlag
	Name string
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

// ACLCatNames is in the order Redis 7.0 prints categories.
var ACLCatNames = []struct {
	Cat  ACLCat
	Name string
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

// KeySpecFlagNames is in the order Redis 7.0 prints key-spec flags.
var KeySpecFlagNames = []struct {
	Flag KeySpecFlag
	Name string
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

// Doc is what COMMAND DOCS reports for a command.
type Doc struct {
	Summary         string
	Since           string
	Group           string
	Complexity      string
	DeprecatedSince string
	ReplacedBy      string
	DocFlags        []string // "deprecated", "syscmd"
}

// Spec is one row of the command table.
type Spec struct {
	Name     string // lower case; a subcommand's bare name ("get"), see fullName
	Arity    int    // Redis convention: >0 exact, <0 at least -Arity (counting the name, and the container for subcommands)
	Flags    CmdFlag
	ACL      ACLCat // explicit categories; the implicit ones are added by finalize
	KeySpecs []KeySpec
	Tips     []string
	Doc      Doc

	// GetKeys, when set, replaces the key-spec walk for commands whose key
	// positions the specs cannot describe completely (Redis's getkeys_proc).
	GetKeys func(args [][]byte) ([]int, error)
	// GetKeyFlags, when set, gives the flags of a key position GetKeys found
	// and no single key spec describes (COMMAND GETKEYSANDFLAGS).
	GetKeyFlags func(args [][]byte, pos int) KeySpecFlag

	// Subcommands of a container command (CONFIG, CLIENT, ...), by lower-case name.
	Subcommands map[string]*Spec
	Parent      *Spec

	// Handler runs the command; nil means the command is described but not
	// implemented yet, and COMMAND does not list it.
	Handler Handler

	// ID numbers the specs of one table (top-level commands and
	// subcommands), from 0; node indexes its per-command statistics by it.
	ID int

	// Derived by SetParent and Derive: the full name and the legacy
	// first/last/step triple.
	fullName                   string // "config|get" for subcommands, as shown by COMMAND
	firstKey, lastKey, keyStep int
}

// SetParent links a subcommand to its container (nil for a top-level
// command) and sets the full name COMMAND shows.
func (spec *Spec) SetParent(parent *Spec) {
	spec.Parent = parent
	spec.fullName = spec.Name
	if parent != nil {
		spec.fullName = parent.Name + "|" + spec.Name
	}
}

// Derive derives what Redis derives at start-up, once the key procedure
// (GetKeys) is attached: the implicit ACL categories, the legacy
// first/last/step triple and the movablekeys flag.
func (spec *Spec) Derive() {
	// Implicit ACL categories (server.c setImplicitACLCategories).
	if spec.Flags&FlagWrite != 0 {
		spec.ACL |= CatWrite
	}
	if spec.Flags&FlagReadonly != 0 && spec.ACL&CatScripting == 0 {
		spec.ACL |= CatRead
	}
	if spec.Flags&FlagAdmin != 0 {
		spec.ACL |= CatAdmin | CatDangerous
	}
	if spec.Flags&FlagPubsub != 0 {
		spec.ACL |= CatPubsub
	}
	if spec.Flags&FlagFast != 0 {
		spec.ACL |= CatFast
	}
	if spec.Flags&FlagBlocking != 0 {
		spec.ACL |= CatBlocking
	}
	if spec.ACL&CatFast == 0 {
		spec.ACL |= CatSlow
	}
	spec.deriveLegacyRange()
	if spec.GetKeys != nil {
		spec.Flags |= FlagMovableKeys
	}
}

// deriveLegacyRange computes first/last/step from the key specs the way
// Redis 7.0's populateCommandLegacyRangeSpec does, and sets movablekeys when
// the specs cannot be expressed as one plain range.
func (spec *Spec) deriveLegacyRange() {
	ks := spec.KeySpecs
	if len(ks) == 0 {
		return
	}
	plain := func(k KeySpec) bool { return k.BeginSearch == BeginIndex && k.FindKeys == FindRange }
	if len(ks) == 1 && plain(ks[0]) {
		spec.setLegacy(ks[0].Index, ks[0].LastKey, ks[0].KeyStep)
		if ks[0].Flags&KeyIncomplete != 0 {
			spec.Flags |= FlagMovableKeys
		}
		return
	}
	first, last, prevLast := int(^uint(0)>>1), 0, 0
	for _, k := range ks {
		if !plain(k) {
			spec.Flags |= FlagMovableKeys
			continue
		}
		if k.KeyStep != 1 || (prevLast != 0 && prevLast != k.Index-1) {
			spec.Flags |= FlagMovableKeys
			continue
		}
		if k.Flags&KeyIncomplete != 0 {
			spec.Flags |= FlagMovableKeys
		}
		first = min(first, k.Index)
		abs := k.LastKey
		if abs >= 0 {
			abs += k.Index
		}
		// Redis compares as unsigned so that a negative (from the end)
		// last key wins.
		if uint(abs) > uint(last) {
			last = abs
		}
		prevLast = last
	}
	if first == int(^uint(0)>>1) {
		return
	}
	rel := last
	if last >= 0 {
		rel = last - first
	}
	spec.setLegacy(first, rel, 1)
}

// setLegacy stores the triple COMMAND reports: lastkey relative to first as
// in the range spec; COMMAND converts it to absolute.
func (spec *Spec) setLegacy(first, lastRel, step int) {
	spec.firstKey = first
	spec.lastKey = lastRel
	if lastRel >= 0 {
		spec.lastKey = lastRel + first
	}
	spec.keyStep = step
}

// LegacyRange returns the first key, last key (absolute, or negative from
// the end) and step that COMMAND INFO reports.
func (spec *Spec) LegacyRange() (first, last, step int) {
	return spec.firstKey, spec.lastKey, spec.keyStep
}

// IsContainer reports whether the spec has subcommands.
func (spec *Spec) IsContainer() bool { return len(spec.Subcommands) > 0 }

// FullName returns "name" or "container|sub".
func (spec *Spec) FullName() string { return spec.fullName }

// ArityOK checks argc against the Redis arity convention.
func (spec *Spec) ArityOK(argc int) bool {
	if spec.Arity > 0 {
		return argc == spec.Arity
	}
	return argc >= -spec.Arity
}

// HasKeyArguments mirrors doesCommandHaveKeys: a key procedure, or a key
// spec that is not marked not_key.
func (spec *Spec) HasKeyArguments() bool {
	if spec.GetKeys != nil {
		return true
	}
	for _, ks := range spec.KeySpecs {
		if ks.Flags&KeyNotKey == 0 {
			return true
		}
	}
	return false
}
