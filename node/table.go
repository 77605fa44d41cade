package node

import (
	"maps"
	"slices"
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
// metadata (command/meta_*.go) and the handlers (cmd_*.go).
type commandTable struct {
	// byName finds a top-level command by its own lower-case name: the
	// server's internal lookups (effects, WATCH, migration) use it, as
	// Redis reaches its commands through pointers that rename-command does
	// not touch.
	byName map[string]*command.Spec
	// called is the table clients call through (requests, scripts,
	// COMMAND INFO/GETKEYS, LATENCY HISTOGRAM): byName with rename-command
	// applied — a renamed command under its new name only, a command
	// renamed to "" absent.
	called map[string]*command.Spec
	all    []*command.Spec // implemented top-level commands clients can call, sorted by name
	// stats holds each spec's counters, indexed by its ID: the dispatcher
	// reaches them with one slice index, no lookup. A command's counters
	// (2 KB) are allocated when it is first counted: the 744 KB of all of
	// them at once cost that much RSS whenever the allocator handed out
	// reused pages, which it zeroes, and most commands are never called.
	stats  []atomic.Pointer[cmdStats]
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

// noCmdStats stands for a command never counted: all zero, never written
// (only statsOf returns it, to readers).
var noCmdStats cmdStats

// statsOf returns a command's counters for reading.
func (t *commandTable) statsOf(spec *command.Spec) *cmdStats {
	if st := t.stats[spec.ID].Load(); st != nil {
		return st
	}
	return &noCmdStats
}

// statShard returns the shard of a command's counters that client id
// counts in, allocating the command's counters on first use.
func (t *commandTable) statShard(spec *command.Spec, id int64) *cmdStat {
	return &loadOrNew(&t.stats[spec.ID])[uint64(id)%statShards] // internal clients may have ids <= 0
}

// loadOrNew returns *p, first storing a new zero T there if it is nil; of
// racing callers, all get the one T stored first.
func loadOrNew[T any](p *atomic.Pointer[T]) *T {
	if v := p.Load(); v != nil {
		return v
	}
	p.CompareAndSwap(nil, new(T))
	return p.Load()
}

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
		aclHandlers(), // node/cmd_acl.go
		moduleHandlers(),
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

// newCommandTable builds the table; renames are the configuration's
// rename-command lines in order (config.Config.RenamedCommands), already
// validated by the loader (CommandNames).
func newCommandTable(renames [][2]string) *commandTable {
	handlers := map[string]command.Handler{}
	for _, g := range handlerGroups() {
		for name, h := range g {
			handlers[name] = h
		}
	}
	procs := keyProcs()
	t := &commandTable{byName: map[string]*command.Spec{}}
	for _, spec := range withClusterExtensions(withShoalExtensions(command.AllMeta())) {
		t.finalize(spec, nil, handlers, procs)
		t.byName[spec.Name] = spec
		if spec.Handler != nil || len(spec.Subcommands) > 0 && anyImplemented(spec) {
			t.all = append(t.all, spec)
		}
	}
	t.called = maps.Clone(t.byName)
	for _, r := range renames {
		from, to := strings.ToLower(r[0]), strings.ToLower(r[1])
		spec := t.called[from]
		if spec == nil {
			continue // the loader refused it
		}
		delete(t.called, from)
		if to != "" {
			t.called[to] = spec
		} else {
			t.all = slices.DeleteFunc(t.all, func(s *command.Spec) bool { return s == spec })
		}
	}
	sort.Slice(t.all, func(i, j int) bool { return t.all[i].Name < t.all[j].Name })
	t.stats = make([]atomic.Pointer[cmdStats], t.nextID)
	return t
}

// CommandNames returns the lower-case names of the commands clients can
// call before any rename: the configuration loader checks rename-command
// lines against it (config.LoadOptions.CommandExists).
func CommandNames() map[string]bool {
	t := newCommandTable(nil)
	names := make(map[string]bool, len(t.all))
	for _, spec := range t.all {
		names[spec.Name] = true
	}
	return names
}

func anyImplemented(spec *command.Spec) bool {
	for _, sub := range spec.Subcommands {
		if sub.Handler != nil {
			return true
		}
	}
	return false
}

// finalize numbers the spec, attaches its handler and key procedure, and
// derives what Redis derives at start-up (command.Spec.Derive).
func (t *commandTable) finalize(spec, parent *command.Spec, handlers map[string]command.Handler, procs map[string]func([][]byte) ([]int, error)) {
	spec.SetParent(parent)
	spec.ID = t.nextID
	t.nextID++
	if h, ok := handlers[spec.FullName()]; ok {
		spec.Handler = h
	}
	if p, ok := procs[spec.FullName()]; ok {
		spec.GetKeys = p
		spec.GetKeyFlags = keyProcFlags()[spec.FullName()] // a handful of commands, once
	}
	spec.Derive()
	for _, sub := range spec.Subcommands {
		t.finalize(sub, spec, handlers, procs)
	}
}

// lookup finds the spec for a request: the top-level command, or the
// subcommand of a container. It returns nil if unknown; sub reports that the
// container is known but the subcommand is not.
func (t *commandTable) lookup(args [][]byte) (spec *command.Spec, unknownSub bool) {
	return t.lookupIn(t.called, args)
}

// lookupOwn is lookup by the commands' own names, for commands the server
// builds itself (effects), which rename-command does not change.
func (t *commandTable) lookupOwn(args [][]byte) (spec *command.Spec, unknownSub bool) {
	return t.lookupIn(t.byName, args)
}

func (t *commandTable) lookupIn(names map[string]*command.Spec, args [][]byte) (spec *command.Spec, unknownSub bool) {
	var buf [32]byte
	spec = names[string(lowerName(&buf, args[0]))]
	if spec == nil || spec.Handler == nil && len(spec.Subcommands) == 0 {
		return nil, false
	}
	if len(spec.Subcommands) == 0 || len(args) == 1 {
		return spec, false
	}
	sub := spec.Subcommands[string(lowerName(&buf, args[1]))]
	if sub == nil || sub.Handler == nil {
		return spec, true
	}
	return sub, false
}

// lookupName finds a command by "name" or "container|sub" (COMMAND INFO).
func (t *commandTable) lookupName(name string) *command.Spec {
	name = strings.ToLower(name)
	top, sub, hasSub := strings.Cut(name, "|")
	spec := t.called[top]
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

// lowerName returns the lower-case form of a command name, in buf when it
// fits: looked up as names[string(lowerName(&buf, b))], a short name costs
// no allocation (the compiler does not copy a []byte used only as a map
// key; a string returned by a function it had to copy, once per command).
func lowerName(buf *[32]byte, b []byte) []byte {
	out := buf[:0]
	if len(b) > len(buf) {
		out = make([]byte, 0, len(b))
	}
	for _, c := range b {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		out = append(out, c)
	}
	return out
}
