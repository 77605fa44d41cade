package node

import (
	"sort"
	"strings"
	"sync/atomic"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/commands/bitmap"
	"github.com/shoal-db/shoal/commands/generic"
	"github.com/shoal-db/shoal/commands/geo"
	"github.com/shoal-db/shoal/commands/hash"
	"github.com/shoal-db/shoal/commands/hyperloglog"
	"github.com/shoal-db/shoal/commands/list"
	"github.com/shoal-db/shoal/commands/set"
	"github.com/shoal-db/shoal/commands/sorting"
	"github.com/shoal-db/shoal/commands/str"
	"github.com/shoal-db/shoal/commands/stream"
	"github.com/shoal-db/shoal/commands/zset"
)

// commandTable is the immutable command table built at start-up from the
// metadata (commandmeta_*.go) and the handlers (cmd_*.go).
type commandTable struct {
	byName map[string]*CommandSpec // lower-case top-level name
	all    []*CommandSpec          // implemented top-level commands, sorted by name
	nextID int
}

// statShards spreads each command's counters over several cache lines so
// that two cores running the same command do not fight over one line.
const statShards = 8

type cmdStat struct {
	calls, usec, rejected, failed atomic.Int64
	lat                           latencyBuckets // node/metrics_hist.go
	_                             [24]byte
}

type cmdStats [statShards]cmdStat

// handlerGroups returns every command family's handlers, keyed by the
// command's full name ("get", "config|get"). The data-type families live in
// packages under commands/ (handlers of command.Ctx); the server-level ones
// in node are written against *Client and adapted (nodeHandler).
func handlerGroups() []map[string]command.Handler {
	groups := []map[string]command.Handler{}
	for _, g := range []map[string]HandlerFunc{
		connectionHandlers(),
		serverHandlers(),
		scriptingHandlers(),
		transactionHandlers(),
		clusterRoutingHandlers(),
		clusterHandlers(),
		clusterMigrateHandlers(),
		failoverHandlers(),
		replicationHandlers(),
		migrateHandlers(),
		pubsubHandlers(),
		aclModuleHandlers(),
	} {
		groups = append(groups, nodeHandlers(g))
	}
	groups = append(groups,
		str.Handlers(),
		bitmap.Handlers(),
		list.Handlers(),
		zset.Handlers(),
		stream.Handlers(),
		generic.Handlers(),
		hash.Handlers(),
		set.Handlers(),
		sorting.Handlers(),
		geo.Handlers(),
		hyperloglog.Handlers(),
	)
	return groups
}

// nodeHandlers adapts a map of node handlers.
func nodeHandlers(m map[string]HandlerFunc) map[string]command.Handler {
	out := make(map[string]command.Handler, len(m))
	for name, h := range m {
		out[name] = nodeHandler(h)
	}
	return out
}

func newCommandTable() *commandTable {
	handlers := map[string]command.Handler{}
	for _, g := range handlerGroups() {
		for name, h := range g {
			handlers[name] = h
		}
	}
	procs := keyProcs()
	t := &commandTable{byName: map[string]*CommandSpec{}}
	for _, spec := range withClusterExtensions(withShoalExtensions(allCommandMeta())) {
		t.finalize(spec, nil, handlers, procs)
		t.byName[spec.Name] = spec
		if spec.Handler != nil || len(spec.Subcommands) > 0 && anyImplemented(spec) {
			t.all = append(t.all, spec)
		}
	}
	sort.Slice(t.all, func(i, j int) bool { return t.all[i].Name < t.all[j].Name })
	return t
}

func anyImplemented(spec *CommandSpec) bool {
	for _, sub := range spec.Subcommands {
		if sub.Handler != nil {
			return true
		}
	}
	return false
}

// finalize derives what Redis derives at start-up: the full name, the
// implicit ACL categories, the legacy first/last/step triple and the
// movablekeys flag; and attaches the handler and key procedure.
func (t *commandTable) finalize(spec, parent *CommandSpec, handlers map[string]command.Handler, procs map[string]func([][]byte) ([]int, error)) {
	spec.Parent = parent
	spec.fullName = spec.Name
	if parent != nil {
		spec.fullName = parent.Name + "|" + spec.Name
	}
	spec.id = t.nextID
	t.nextID++
	spec.stats = new(cmdStats)
	if h, ok := handlers[spec.fullName]; ok {
		spec.Handler = h
	}
	if p, ok := procs[spec.fullName]; ok {
		spec.GetKeys = p
		spec.GetKeyFlags = keyProcFlags()[spec.fullName] // a handful of commands, once
	}
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
	for _, sub := range spec.Subcommands {
		t.finalize(sub, spec, handlers, procs)
	}
}

// deriveLegacyRange computes first/last/step from the key specs the way
// Redis 7.0's populateCommandLegacyRangeSpec does, and sets movablekeys when
// the specs cannot be expressed as one plain range.
func (spec *CommandSpec) deriveLegacyRange() {
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
func (spec *CommandSpec) setLegacy(first, lastRel, step int) {
	spec.firstKey = first
	spec.lastKey = lastRel
	if lastRel >= 0 {
		spec.lastKey = lastRel + first
	}
	spec.keyStep = step
}

// lookup finds the spec for a request: the top-level command, or the
// subcommand of a container. It returns nil if unknown; sub reports that the
// container is known but the subcommand is not.
func (t *commandTable) lookup(args [][]byte) (spec *CommandSpec, unknownSub bool) {
	spec = t.byName[lowerKey(args[0])]
	if spec == nil || spec.Handler == nil && len(spec.Subcommands) == 0 {
		return nil, false
	}
	if len(spec.Subcommands) == 0 || len(args) == 1 {
		return spec, false
	}
	sub := spec.Subcommands[lowerKey(args[1])]
	if sub == nil || sub.Handler == nil {
		return spec, true
	}
	return sub, false
}

// lookupName finds a command by "name" or "container|sub" (COMMAND INFO).
func (t *commandTable) lookupName(name string) *CommandSpec {
	name = strings.ToLower(name)
	top, sub, hasSub := strings.Cut(name, "|")
	spec := t.byName[top]
	if spec == nil {
		return nil
	}
	if hasSub {
		s := spec.Subcommands[sub]
		if s == nil || s.Handler == nil {
			return nil
		}
		return s
	}
	if spec.Handler == nil && !anyImplemented(spec) {
		return nil
	}
	return spec
}

// lowerKey returns the lower-case form of a command name; short names are
// converted on the stack so that the map lookup does not allocate.
func lowerKey(b []byte) string {
	var buf [32]byte
	if len(b) > len(buf) {
		return strings.ToLower(string(b))
	}
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return string(buf[:len(b)])
}

// isContainer reports whether the spec has subcommands.
func (spec *CommandSpec) isContainer() bool { return len(spec.Subcommands) > 0 }

// FullName returns "name" or "container|sub".
func (spec *CommandSpec) FullName() string { return spec.fullName }

// arityOK checks argc against the Redis arity convention.
func (spec *CommandSpec) arityOK(argc int) bool {
	if spec.Arity > 0 {
		return argc == spec.Arity
	}
	return argc >= -spec.Arity
}
