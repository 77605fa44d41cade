package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/shoal-db/shoal/glob"
)

// RedisVersion is the Redis version whose configuration this package mimics
// (also the version printed in fatal configuration errors).
const RedisVersion = "7.0.15"

// Config holds the values of all directives of one server.
type Config struct {
	byName  map[string]*entry // lower-case name or alias -> entry; never modified after New
	entries []*entry          // all names and aliases, sorted
	dirs    []*directive      // primary directives in Redis's table order

	setMu sync.Mutex // serializes Set, SetFromClient and Rewrite

	hookMu       sync.RWMutex
	hooks        map[*directive][]func(string) error
	resetHooks   []func()
	rewriteLines map[string]func() []string

	loading atomic.Bool

	// acceptUnbuilt skips the refusal of values whose feature is not built
	// (config/unbuilt.go). Only this package's tests set it, to check the
	// parsing of those values against Redis.
	acceptUnbuilt bool

	// Filled by Load, read-only afterwards.
	configFile    string
	renames       [][2]string
	users         [][]string
	modules       [][]string
	moduleConfigs [][2]string

	// Hot directives, resolved once.
	hMaxclients, hTimeout, hProtoMaxBulkLen, hQueryBufLimit, hHz *directive
	hLazyEviction, hLazyExpire, hLazyServerDel, hLazyUserDel     *directive
	hLazyUserFlush, hMaxmemory, hDatabases, hClusterEnabled      *directive
}

// Info describes a directive.
type Info struct {
	Name    string
	Alias   string // "" when the directive has no alias
	Type    Type
	Flags   Flag
	Default string   // default value as printed by CONFIG GET
	Values  []string // accepted names for TypeEnum
	Memory  bool     // TypeInt accepting memory units (1gb, 10k, ...)
	Percent bool     // TypeInt accepting a percentage (n%)
	Octal   bool     // TypeInt written in octal
}

// currentDir returns the working directory as getcwd() would (no symlinks).
func currentDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	if r, err := filepath.EvalSymlinks(wd); err == nil {
		return r
	}
	return wd
}

// New returns a Config with every directive at its Redis 7.0.15 default.
// The default of "dir" is the current working directory.
func New() *Config {
	c := &Config{
		byName:       make(map[string]*entry),
		hooks:        make(map[*directive][]func(string) error),
		rewriteLines: make(map[string]func() []string),
	}
	for _, d := range append(buildDirectives(currentDir()), shoalDirectives()...) {
		d.cur.Store(d.def)
		c.dirs = append(c.dirs, d)
		c.addEntry(&entry{name: d.name, d: d})
		if d.alias != "" {
			c.addEntry(&entry{name: d.alias, alias: true, d: d})
		}
	}
	sort.Slice(c.entries, func(i, j int) bool { return c.entries[i].name < c.entries[j].name })
	c.hMaxclients = c.dir("maxclients")
	c.hTimeout = c.dir("timeout")
	c.hProtoMaxBulkLen = c.dir("proto-max-bulk-len")
	c.hQueryBufLimit = c.dir("client-query-buffer-limit")
	c.hHz = c.dir("hz")
	c.hLazyEviction = c.dir("lazyfree-lazy-eviction")
	c.hLazyExpire = c.dir("lazyfree-lazy-expire")
	c.hLazyServerDel = c.dir("lazyfree-lazy-server-del")
	c.hLazyUserDel = c.dir("lazyfree-lazy-user-del")
	c.hLazyUserFlush = c.dir("lazyfree-lazy-user-flush")
	c.hMaxmemory = c.dir("maxmemory")
	c.hDatabases = c.dir("databases")
	c.hClusterEnabled = c.dir("cluster-enabled")
	return c
}

func (c *Config) addEntry(e *entry) {
	key := strings.ToLower(e.name)
	if _, dup := c.byName[key]; dup {
		panic("config: duplicate directive " + e.name)
	}
	c.byName[key] = e
	c.entries = append(c.entries, e)
}

func (c *Config) lookup(name string) *entry {
	if e, ok := c.byName[name]; ok {
		return e
	}
	return c.byName[asciiLower(name)]
}

func (c *Config) dir(name string) *directive {
	if e := c.lookup(name); e != nil {
		return e.d
	}
	return nil
}

func (c *Config) mustDir(name string) *directive {
	d := c.dir(name)
	if d == nil {
		panic(fmt.Sprintf("config: unknown directive %q", name))
	}
	return d
}

// ---------------------------------------------------------------- typed getters

func intOf(d *directive) int64 {
	v := d.load().num
	if d.unsigned && d.typ == TypeInt && v < 0 {
		return math.MaxInt64
	}
	return v
}

// Has reports whether name (case-insensitive) is a directive or an alias.
func (c *Config) Has(name string) bool { return c.lookup(name) != nil }

// Int returns the value of an integer directive (memory values in bytes;
// for maxmemory-clients a negative value -n means n percent; unsigned values
// above MaxInt64 are returned as MaxInt64, see Uint), 0/1 for a bool, the
// enum value for an enum (see the constants of enums.go), the flags of
// notify-keyspace-events. Unknown names and other directives give 0.
func (c *Config) Int(name string) int64 {
	d := c.dir(name)
	if d == nil {
		return 0
	}
	return intOf(d)
}

// Uint returns an integer directive as unsigned (for maxmemory and
// cluster-link-sendbuf-limit, which accept values up to 2^64-1).
func (c *Config) Uint(name string) uint64 {
	d := c.dir(name)
	if d == nil {
		return 0
	}
	return uint64(d.load().num)
}

// Bool returns the value of a yes/no directive (false for other directives
// and unknown names).
func (c *Config) Bool(name string) bool {
	d := c.dir(name)
	if d == nil || d.typ != TypeBool {
		return false
	}
	return d.load().num != 0
}

// String returns the value of any directive exactly as CONFIG GET prints it
// ("" for unknown names).
func (c *Config) String(name string) string {
	d := c.dir(name)
	if d == nil {
		return ""
	}
	return d.load().str
}

// Strings returns a multi-valued directive as a list: the addresses of
// bind, "seconds changes ..." of save, the words of the other multi-argument
// directives. A single-valued directive gives a one-element list (an empty
// list for an empty string directive). The result is a fresh copy.
func (c *Config) Strings(name string) []string {
	d := c.dir(name)
	if d == nil {
		return nil
	}
	return d.stringsOf(d.load())
}

// IntFunc returns a cheap getter for an integer directive, equivalent to
// calling Int(name) but without the name lookup. It panics for an unknown
// name (a programming error).
func (c *Config) IntFunc(name string) func() int64 {
	d := c.mustDir(name)
	return func() int64 { return intOf(d) }
}

// BoolFunc returns a cheap getter for a yes/no directive. It panics for an
// unknown name.
func (c *Config) BoolFunc(name string) func() bool {
	d := c.mustDir(name)
	return func() bool { return d.load().num != 0 }
}

// MaxClients returns maxclients.
func (c *Config) MaxClients() int64 { return intOf(c.hMaxclients) }

// Timeout returns timeout (client idle timeout in seconds, 0 = none).
func (c *Config) Timeout() int64 { return intOf(c.hTimeout) }

// ProtoMaxBulkLen returns proto-max-bulk-len in bytes.
func (c *Config) ProtoMaxBulkLen() int64 { return intOf(c.hProtoMaxBulkLen) }

// ClientQueryBufferLimit returns client-query-buffer-limit in bytes.
func (c *Config) ClientQueryBufferLimit() int64 { return intOf(c.hQueryBufLimit) }

// Hz returns hz (already capped to 1..500 like Redis does).
func (c *Config) Hz() int64 { return intOf(c.hHz) }

// Maxmemory returns maxmemory in bytes (0 = no limit).
func (c *Config) Maxmemory() uint64 { return uint64(c.hMaxmemory.load().num) }

// Databases returns databases.
func (c *Config) Databases() int64 { return intOf(c.hDatabases) }

// ClusterEnabled returns cluster-enabled.
func (c *Config) ClusterEnabled() bool { return c.hClusterEnabled.load().num != 0 }

// LazyfreeLazyEviction returns lazyfree-lazy-eviction.
func (c *Config) LazyfreeLazyEviction() bool { return c.hLazyEviction.load().num != 0 }

// LazyfreeLazyExpire returns lazyfree-lazy-expire.
func (c *Config) LazyfreeLazyExpire() bool { return c.hLazyExpire.load().num != 0 }

// LazyfreeLazyServerDel returns lazyfree-lazy-server-del.
func (c *Config) LazyfreeLazyServerDel() bool { return c.hLazyServerDel.load().num != 0 }

// LazyfreeLazyUserDel returns lazyfree-lazy-user-del.
func (c *Config) LazyfreeLazyUserDel() bool { return c.hLazyUserDel.load().num != 0 }

// LazyfreeLazyUserFlush returns lazyfree-lazy-user-flush.
func (c *Config) LazyfreeLazyUserFlush() bool { return c.hLazyUserFlush.load().num != 0 }

// SaveParams returns the save points (empty when saving is disabled).
func (c *Config) SaveParams() []SaveParam {
	return append([]SaveParam{}, c.mustDir("save").load().data.([]SaveParam)...)
}

// ClientOutputBufferLimits returns client-output-buffer-limit, indexed by
// ClientNormal, ClientReplica and ClientPubSub.
func (c *Config) ClientOutputBufferLimits() [3]ClientBufferLimit {
	return c.mustDir("client-output-buffer-limit").load().data.([3]ClientBufferLimit)
}

// OOMScoreAdjValues returns oom-score-adj-values (master, replica, bgchild).
func (c *Config) OOMScoreAdjValues() [3]int {
	return c.mustDir("oom-score-adj-values").load().data.([3]int)
}

// RecordReplicaOf records the master this node now follows (REPLICAOF at
// run time; host "" for none): ReplicaOf and CONFIG REWRITE then report
// it, as Redis's rewriteConfigReplicaOfOption writes server.masterhost.
func (c *Config) RecordReplicaOf(host string, port int) {
	v := &value{data: replicaOf{}}
	if host != "" {
		r := replicaOf{host: host, port: port, set: true}
		v = &value{str: r.host + " " + strconv.Itoa(r.port), data: r}
	}
	c.mustDir("replicaof").cur.Store(v)
}

// ReplicaOf returns the replicaof directive; ok is false when none is set.
func (c *Config) ReplicaOf() (host string, port int, ok bool) {
	r := c.mustDir("replicaof").load().data.(replicaOf)
	return r.host, r.port, r.set
}

// LatencyTrackingPercentiles returns latency-tracking-info-percentiles.
func (c *Config) LatencyTrackingPercentiles() []float64 {
	return append([]float64{}, c.mustDir("latency-tracking-info-percentiles").load().data.([]float64)...)
}

// ConfigFile returns the absolute path of the configuration file given on
// the command line ("" when there is none, e.g. only options or stdin).
func (c *Config) ConfigFile() string { return c.configFile }

// RenamedCommands returns the rename-command directives read at startup, in
// order, as {old name, new name} (an empty new name removes the command).
func (c *Config) RenamedCommands() [][2]string { return append([][2]string{}, c.renames...) }

// Users returns the arguments of the "user" directives read at startup
// (user name followed by the ACL rules). They are not validated here.
func (c *Config) Users() [][]string { return cloneArgs(c.users) }

// LoadModules returns the "loadmodule path [args...]" directives read at
// startup.
func (c *Config) LoadModules() [][]string { return cloneArgs(c.modules) }

// ModuleConfigs returns the module configuration directives (names with a
// dot, like "mymodule.option value") read at startup, as {name, value}.
// Redis fails later, when modules are loaded, if nobody consumes them.
func (c *Config) ModuleConfigs() [][2]string { return append([][2]string{}, c.moduleConfigs...) }

func cloneArgs(in [][]string) [][]string {
	out := make([][]string, len(in))
	for i, a := range in {
		out[i] = append([]string{}, a...)
	}
	return out
}

// Lookup returns the description of a directive (by name or alias).
func (c *Config) Lookup(name string) (Info, bool) {
	d := c.dir(name)
	if d == nil {
		return Info{}, false
	}
	return infoOf(d), true
}

// Directives describes every directive (primary names, Redis's table
// order, hidden ones included).
func (c *Config) Directives() []Info {
	out := make([]Info, 0, len(c.dirs))
	for _, d := range c.dirs {
		out = append(out, infoOf(d))
	}
	return out
}

func infoOf(d *directive) Info {
	in := Info{Name: d.name, Alias: d.alias, Type: d.typ, Flags: d.flags, Default: d.def.str,
		Memory: d.numFlags&numMemory != 0, Percent: d.numFlags&numPercent != 0, Octal: d.numFlags&numOctal != 0}
	for _, it := range d.enum {
		in.Values = append(in.Values, it.name)
	}
	return in
}

// IsSensitive reports whether CONFIG SET arguments for this directive must
// be redacted (masterauth, masteruser, requirepass).
func (c *Config) IsSensitive(name string) bool {
	d := c.dir(name)
	return d != nil && d.has(FlagSensitive)
}

// SetLoading tells whether the server is loading its dataset: while true,
// CONFIG SET of dir, appendonly and repl-diskless-load fails with a LOADING
// error like in Redis.
func (c *Config) SetLoading(loading bool) { c.loading.Store(loading) }

// OnChange registers fn to apply a runtime change of directive name (or its
// alias). After CONFIG SET stored all new values, fn is called with the new
// value (as CONFIG GET prints it) of every directive whose value changed
// (always, for volatile directives such as tls-cert-file). If fn returns an
// error, every value of that CONFIG SET is restored, the hooks already
// called are called again with the restored values, and CONFIG SET fails
// with "ERR CONFIG SET failed (possibly related to argument '<name>') -
// <error text>". Hooks run with the Set mutex held: they may read the
// configuration but must not call Set. OnChange panics for an unknown name.
func (c *Config) OnChange(name string, fn func(value string) error) {
	d := c.mustDir(name)
	c.hookMu.Lock()
	c.hooks[d] = append(c.hooks[d], fn)
	c.hookMu.Unlock()
}

// OnResetStat registers fn to be called by ResetStat (CONFIG RESETSTAT).
func (c *Config) OnResetStat(fn func()) {
	c.hookMu.Lock()
	c.resetHooks = append(c.resetHooks, fn)
	c.hookMu.Unlock()
}

// ResetStat implements CONFIG RESETSTAT: it calls every function registered
// with OnResetStat (server statistics, command statistics, error
// statistics). The configuration itself is unchanged.
func (c *Config) ResetStat() {
	c.hookMu.RLock()
	fns := append([]func(){}, c.resetHooks...)
	c.hookMu.RUnlock()
	for _, fn := range fns {
		fn()
	}
}

// HelpLines returns the reply lines of CONFIG HELP (without the header and
// trailer that the generic help reply adds).
func HelpLines() []string {
	return []string{
		"GET <pattern>",
		"    Return parameters matching the glob-like <pattern> and their values.",
		"SET <directive> <value>",
		"    Set the configuration <directive> to <value>.",
		"RESETSTAT",
		"    Reset statistics reported by the INFO command.",
		"REWRITE",
		"    Rewrite the configuration file.",
	}
}

// ---------------------------------------------------------------- CONFIG GET

// Get implements CONFIG GET: it returns a flat name, value list of every
// directive matching any of the patterns, each directive once. Like Redis
// 7.0, a pattern without glob characters ("*", "?", "[") is looked up
// directly (case-insensitively) and reported with the spelling given by the
// caller, and it can name an alias (CONFIG GET slaveof replies "slaveof");
// glob patterns match case-insensitively against every name and alias (so
// "*" lists both replicaof and slaveof) except hidden directives, which
// need their exact name.
func (c *Config) Get(patterns ...string) []string {
	var out []string
	seen := make(map[string]bool)
	for _, p := range patterns {
		if !strings.ContainsAny(p, "[*?") {
			key := asciiLower(p)
			if seen[key] {
				continue
			}
			if e := c.lookup(p); e != nil {
				seen[key] = true
				out = append(out, p, e.d.load().str)
			}
			continue
		}
		for _, e := range c.entries {
			if e.d.has(FlagHidden) {
				continue
			}
			key := asciiLower(e.name)
			if seen[key] {
				continue
			}
			if glob.Match(p, e.name, true) {
				seen[key] = true
				out = append(out, e.name, e.d.load().str)
			}
		}
	}
	if out == nil {
		out = []string{}
	}
	return out
}

// ---------------------------------------------------------------- CONFIG SET

// Set implements CONFIG SET name value [name value ...] for a client that is
// not local (see SetFromClient).
func (c *Config) Set(pairs ...string) error { return c.SetFromClient(false, pairs...) }

// SetFromClient implements Redis 7.0's multi-parameter CONFIG SET: either
// every value is applied or none. local tells whether the client is
// connected through a unix socket or the loopback interface, which matters
// when enable-protected-configs is "local". Errors carry Redis's exact reply
// text, e.g. "ERR Unknown option or number of arguments for CONFIG SET -
// 'foo'".
func (c *Config) SetFromClient(local bool, pairs ...string) error {
	if len(pairs) < 2 {
		return errors.New("ERR wrong number of arguments for 'config|set' command")
	}
	if len(pairs)%2 != 0 {
		return errors.New("ERR syntax error")
	}
	c.setMu.Lock()
	defer c.setMu.Unlock()

	n := len(pairs) / 2
	sets := make([]*entry, n)
	var invalidName, errArg, errStr string
	invalid, unknown, denyLoading := false, false, false
	protectedOK := allowProtected(c.Int("enable-protected-configs"), local)
	for i := 0; i < n; i++ {
		name := pairs[2*i]
		e := c.lookup(name)
		if e == nil {
			if !invalid {
				invalidName = name
				invalid, unknown = true, true
			}
			continue
		}
		if invalid {
			continue
		}
		if e.d.has(FlagImmutable) || (e.d.has(FlagProtected) && !protectedOK) {
			if e.d.has(FlagImmutable) {
				errStr = "can't set immutable config"
			} else {
				errStr = "can't set protected config"
			}
			errArg = name
			invalid = true
			continue
		}
		if c.loading.Load() && e.d.has(FlagDenyLoading) {
			denyLoading = true
			invalid = true
			continue
		}
		for j := 0; j < i; j++ {
			if sets[j] == e {
				errStr = "duplicate parameter"
				errArg = name
				invalid = true
				break
			}
		}
		sets[i] = e
	}
	if invalid {
		switch {
		case denyLoading:
			return errors.New("LOADING Redis is loading the dataset in memory")
		case unknown:
			return fmt.Errorf("ERR Unknown option or number of arguments for CONFIG SET - '%s'", invalidName)
		default:
			return setFailed(errArg, errStr)
		}
	}

	old := make([]*value, n)
	for i, e := range sets {
		old[i] = e.d.load()
	}
	restore := func(upto int) {
		for j := 0; j < upto; j++ {
			sets[j].d.cur.Store(old[j])
		}
	}
	for i, e := range sets {
		d := e.d
		var args []string
		if d.has(FlagMultiArg) {
			args = splitBySpace(pairs[2*i+1])
		} else {
			args = []string{pairs[2*i+1]}
		}
		v, msg := d.parse(c, args, setCtx{})
		if msg == "" && !c.acceptUnbuilt {
			msg = unbuiltReason(d.name, v.str) // config/unbuilt.go
		}
		if msg != "" {
			restore(i + 1)
			return setFailed(e.name, msg)
		}
		d.cur.Store(v)
	}

	// Apply: run the hooks of every changed directive, once per directive.
	type change struct {
		d    *directive
		name string
	}
	var changes []change
	seen := make(map[*directive]bool)
	for i, e := range sets {
		if seen[e.d] {
			continue
		}
		seen[e.d] = true
		if e.d.load().str != old[i].str || e.d.has(FlagVolatile) {
			changes = append(changes, change{e.d, e.name})
		}
	}
	if len(changes) == 0 {
		return nil
	}
	c.hookMu.RLock()
	hooks := make(map[*directive][]func(string) error, len(changes))
	for _, ch := range changes {
		hooks[ch.d] = append([]func(string) error{}, c.hooks[ch.d]...)
	}
	c.hookMu.RUnlock()
	for k, ch := range changes {
		for _, fn := range hooks[ch.d] {
			if err := fn(ch.d.load().str); err != nil {
				restore(n)
				for _, back := range changes[:k+1] {
					for _, fn2 := range hooks[back.d] {
						_ = fn2(back.d.load().str)
					}
				}
				return setFailed(ch.name, err.Error())
			}
		}
	}
	return nil
}

func setFailed(name, msg string) error {
	if msg == "" {
		return fmt.Errorf("ERR CONFIG SET failed (possibly related to argument '%s')", name)
	}
	return fmt.Errorf("ERR CONFIG SET failed (possibly related to argument '%s') - %s", name, msg)
}

// allowProtected mirrors allowProtectedAction().
func allowProtected(setting int64, local bool) bool {
	return setting == EnableYes || (setting == EnableLocal && local)
}

// AllowProtectedAction reports whether an action guarded by one of
// enable-protected-configs, enable-debug-command or enable-module-command
// (given by name) is allowed for a client; local means connected through a
// unix socket or the loopback interface.
func (c *Config) AllowProtectedAction(name string, local bool) bool {
	return allowProtected(c.Int(name), local)
}
