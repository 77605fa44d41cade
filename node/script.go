package node

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/slots"
	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
	"go.uber.org/zap"
)

// Lua scripting: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT (Redis 7.0's
// eval.c and script.c).
//
// A script that declares keys runs under their slot locks
// (node/script_locked.go); any other runs with the execution gate closed
// (node/multi.go): no other client runs a command until it returns, as in
// Redis's single thread. The commands it calls go through the command
// table on a script client (a Client without a connection); under the gate
// it locks each command's slots around its handler, and the slots EVAL's
// own dispatch locked are released for the script's duration (they are
// re-taken before EVAL returns), so the called commands never wait for a
// lock their own script holds. The
// writes a script makes go to the effect feed as one unit, wrapped in
// MULTI/EXEC when more than one.
//
// One Lua state serves every script (Redis keeps one too); it is only
// touched by the script holding runMu (or by the gate's owner). The
// script cache (sha → body, flags, compiled prototype) has its own lock:
// SCRIPT LOAD and EXISTS run without the gate.

// scriptFlags are the shebang flags (#!lua flags=...).
type scriptFlags uint8

const (
	sfCompat         scriptFlags = 1 << iota // no shebang: EVAL's backward-compatible mode
	sfNoWrites                               // no-writes
	sfAllowOOM                               // allow-oom
	sfAllowStale                             // allow-stale
	sfNoCluster                              // no-cluster
	sfAllowCrossSlot                         // allow-cross-slot-keys
)

var scriptFlagNames = []struct {
	flag scriptFlags
	name string
}{
	{sfNoWrites, "no-writes"}, {sfAllowOOM, "allow-oom"}, {sfAllowStale, "allow-stale"},
	{sfNoCluster, "no-cluster"}, {sfAllowCrossSlot, "allow-cross-slot-keys"},
}

// luaScript is one cached EVAL script.
type luaScript struct {
	sha   string // its SHA1 in lower-case hex, its name
	body  []byte
	flags scriptFlags
	proto *lua.FunctionProto
	// setsGlobals: its code (a nested function's too) may assign a global
	// (setsGlobals); else it runs with the globals as its environment.
	setsGlobals bool
	roams       atomic.Bool // it reached beyond its declared keys (node/script_locked.go)
}

// scriptEngine is the server's EVAL scripts and Lua state.
type scriptEngine struct {
	mu      sync.Mutex // guards scripts
	scripts map[string]*luaScript
	// lastFound is the script EVALSHA found last (lookupSHA), stored and
	// cleared under mu, read without it.
	lastFound atomic.Pointer[luaScript]

	// runMu is held by the script that runs: scripts run one at a time,
	// under the gate or under their keys' slot locks (taken before those
	// locks). What follows belongs to its holder.
	runMu sync.Mutex
	env   *luaEnv
	fns   map[string]*lua.LFunction
	rand  lrand48
	cur   *scriptRun  // the run redis.call serves
	args  luaCallArgs // the arguments of the call it serves

	lc        *Client                   // the script client, reused
	ctx       context.Context           // cancelled by SCRIPT KILL; replaced after
	cancel    context.CancelFunc        // cancels ctx
	running   atomic.Pointer[scriptRun] // for SCRIPT KILL / FUNCTION KILL
	watchOnce sync.Once                 // startMemoryWatch
	// watchIdle: the memory watch sleeps until watchWake; memLimit is
	// scriptMemoryLimit (lower in tests).
	watchIdle atomic.Bool
	watchWake chan struct{}
	memLimit  uint64
	// busyTimer marks the running script busy past busy-reply-threshold
	// (busyLimit, in ms); busyArmed: it is pending (armBusyTimer).
	busyTimer *time.Timer
	busyArmed atomic.Bool
	busyLimit atomic.Int64
	// denyDisabled: DEBUG SET-DISABLE-DENY-SCRIPTS lets scripts call
	// commands flagged noscript (tests only).
	denyDisabled atomic.Bool
}

// scriptRun is one script invocation.
type scriptRun struct {
	caller   *Client
	lc       *Client // the script client
	name     string  // the sha (EVAL) or function name
	eval     bool    // EVAL (else FCALL)
	readOnly bool
	flags    scriptFlags
	start    time.Time
	startMs  int64       // start in unix ms: the keyspace's time while the script runs
	dirty    atomic.Bool // a write command ran: SCRIPT KILL refuses
	killed   atomic.Bool
	oom      atomic.Bool // stopped by the memory watch
	cancel   context.CancelFunc
	repl     int      // redis.set_repl flags: replToAOF | replToReplicas
	slot     int32    // the slot the script's keys hash to, -1 unknown (cluster)
	argv     [][]byte // the FCALL command (FUNCTION STATS)
	// roams is the script's (or function's) mark that it reached beyond
	// its declared keys once: it runs exclusive from then on.
	roams  *atomic.Bool
	locked *lockedRun // set while it runs under its keys' slot locks (its goroutine's)
	// lockedStore is where locked points (lockedRunFor): one allocation
	// per run, not two.
	lockedStore lockedRun
	// underLocks: locked is set, for other goroutines (the busy timer,
	// SCRIPT KILL).
	underLocks atomic.Bool
	busy       atomic.Bool // past busy-reply-threshold: SCRIPT KILL may stop it
	// onlyReads: every command it ran so far only read (a locked run that
	// gives up can run again from the start without anyone noticing).
	onlyReads bool
}

// reset makes a run that gave up ready to run again.
func (run *scriptRun) reset() {
	run.dirty.Store(false)
	run.killed.Store(false)
	run.oom.Store(false)
	run.busy.Store(false)
	run.underLocks.Store(false)
	run.locked = nil
}

// scriptHandlers: EVAL and SCRIPT (FUNCTION is in cmd_function.go).
func scriptHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"eval":          func(c *Client, a [][]byte) { c.evalCommand(a, false, false) },
		"evalsha":       func(c *Client, a [][]byte) { c.evalCommand(a, true, false) },
		"eval_ro":       func(c *Client, a [][]byte) { c.evalCommand(a, false, true) },
		"evalsha_ro":    func(c *Client, a [][]byte) { c.evalCommand(a, true, true) },
		"script|load":   cmdScriptLoad,
		"script|exists": cmdScriptExists,
		"script|flush":  cmdScriptFlush,
		"script|kill":   cmdScriptKill,
		"script|help":   cmdScriptHelp,
	}
}

// InScript reports whether the running command was called by a script
// (SORT sorts its output then, as Redis does for determinism).
func (c *Client) InScript() bool { return c.tx.inScript }

func sha1Hex(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

// parseShebang extracts the flags of a "#!lua flags=a,b" first line; it
// returns the flags and how many bytes the shebang takes (its newline is
// kept so that line numbers stay right).
func parseShebang(body []byte) (scriptFlags, int, string) {
	if !bytes.HasPrefix(body, []byte("#!")) {
		return sfCompat, 0, ""
	}
	end := bytes.IndexByte(body, '\n')
	if end < 0 {
		return 0, 0, "ERR Invalid script shebang"
	}
	parts, ok := splitArgs(string(body[:end]))
	if !ok || len(parts) == 0 {
		return 0, 0, "ERR Invalid engine in script shebang"
	}
	if parts[0] != "#!lua" {
		return 0, 0, "ERR Unexpected engine in script shebang: " + parts[0]
	}
	var flags scriptFlags
	for _, p := range parts[1:] {
		if !strings.HasPrefix(p, "flags=") {
			return 0, 0, "ERR Unknown lua shebang option: " + p
		}
		if p == "flags=" {
			continue // an empty list declares no flag (sdssplitlen gives no part)
		}
		for _, f := range strings.Split(p[6:], ",") {
			known := false
			for _, d := range scriptFlagNames {
				if d.name == f {
					flags |= d.flag
					known = true
				}
			}
			if !known {
				return 0, 0, "ERR Unexpected flag in script shebang: " + f
			}
		}
	}
	return flags, end, ""
}

// splitArgs splits a line into words as Redis's sdssplitargs (quotes
// honoured).
func splitArgs(line string) ([]string, bool) {
	var out []string
	i := 0
	for {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r' || line[i] == '\n') {
			i++
		}
		if i >= len(line) {
			return out, true
		}
		var b strings.Builder
		quote := byte(0)
		for ; i < len(line); i++ {
			ch := line[i]
			if quote != 0 {
				if ch == quote {
					quote = 0
					i++
					if i < len(line) && line[i] != ' ' && line[i] != '\t' {
						return nil, false
					}
					break
				}
				if ch == '\\' && quote == '"' && i+1 < len(line) {
					i++
					ch = line[i]
				}
				b.WriteByte(ch)
				continue
			}
			if ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' {
				break
			}
			if ch == '"' || ch == '\'' {
				quote = ch
				continue
			}
			b.WriteByte(ch)
		}
		if quote != 0 {
			return nil, false
		}
		out = append(out, b.String())
	}
}

// compileLua compiles a chunk to a prototype.
func compileLua(body []byte, chunk string) (*lua.FunctionProto, error) {
	stmts, err := parse.Parse(bytes.NewReader(body), chunk)
	if err != nil {
		return nil, err
	}
	proto, err := lua.Compile(stmts, chunk)
	if err != nil {
		return nil, err
	}
	// gopher-lua marks a chunk that does not use "..." as wanting Lua
	// 5.0's implicit "arg" table, and builds one on every call; a main
	// chunk has no "arg" local to read it (Lua 5.1 gives it none either),
	// so the table was only an allocation per script run.
	proto.IsVarArg &^= lua.VarArgNeedsArg
	return proto, nil
}

// setsGlobals reports whether a compiled chunk has an instruction that
// assigns a global (SETGLOBAL, the only one that writes to a function's
// environment), in its own code or a nested function's. A word that is
// not an instruction (SETLIST's count) may read as one: then the answer
// is yes, which is the safe one.
func setsGlobals(proto *lua.FunctionProto) bool {
	for _, inst := range proto.Code {
		if int(inst>>26) == lua.OP_SETGLOBAL { // the opcode: the top 6 bits
			return true
		}
	}
	for _, p := range proto.FunctionPrototypes {
		if setsGlobals(p) {
			return true
		}
	}
	return false
}

// luaCompileError formats a parse error as Lua 5.1 reports it
// ("user_script:1: ... near ...") as best gopher-lua allows.
func luaCompileError(err error) string {
	msg := err.Error()
	if pe, ok := err.(*parse.Error); ok {
		msg = fmt.Sprintf("%s:%d: %s near '%s'", luaChunkName, pe.Pos.Line, pe.Message, pe.Token)
	}
	return strings.ReplaceAll(msg, "\n", " ")
}

// load returns the cached script for body, compiling and caching it if
// needed; on failure it returns Redis's error text.
func (eng *scriptEngine) load(body []byte) (string, *luaScript, string) {
	sha := sha1Hex(body)
	eng.mu.Lock()
	sc := eng.scripts[sha]
	eng.mu.Unlock()
	if sc != nil {
		return sha, sc, ""
	}
	flags, skip, errMsg := parseShebang(body)
	if errMsg != "" {
		return "", nil, errMsg
	}
	src := body[skip:]
	proto, err := compileLua(src, luaChunkName)
	if err != nil {
		return "", nil, "ERR Error compiling script (new function): " + luaCompileError(err)
	}
	sc = &luaScript{sha: sha, body: bytes.Clone(body), flags: flags, proto: proto, setsGlobals: setsGlobals(proto)}
	eng.mu.Lock()
	if eng.scripts == nil {
		eng.scripts = make(map[string]*luaScript)
	}
	if old := eng.scripts[sha]; old != nil {
		sc = old
	} else {
		eng.scripts[sha] = sc
	}
	eng.mu.Unlock()
	return sha, sc, ""
}

func (eng *scriptEngine) lookup(sha string) *luaScript {
	eng.mu.Lock()
	defer eng.mu.Unlock()
	return eng.scripts[sha]
}

// lookupSHA returns the cached script whose SHA1 is hex, in any case, or
// nil; EVALSHA's lookup, lowered on the stack so that it does not
// allocate. The script found last is answered without the lock and the
// map (clients tend to run one script over and over); SCRIPT FLUSH
// forgets it under the lock, so no lookup after the flush finds it.
func (eng *scriptEngine) lookupSHA(hex []byte) *luaScript {
	var buf [40]byte
	if len(hex) != len(buf) {
		return nil
	}
	for i, ch := range hex {
		if ch >= 'A' && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		buf[i] = ch
	}
	if sc := eng.lastFound.Load(); sc != nil && sc.sha == string(buf[:]) {
		return sc
	}
	eng.mu.Lock()
	defer eng.mu.Unlock()
	sc := eng.scripts[string(buf[:])]
	if sc != nil {
		eng.lastFound.Store(sc)
	}
	return sc
}

// scriptNumKeys parses EVAL's and FCALL's numkeys (args[2]) against the
// arguments that follow, writing notInteger or Redis's range errors.
func scriptNumKeys(c *Client, args [][]byte, notInteger string) (int64, bool) {
	numkeys, ok := command.ParseInt64(args[2])
	if !ok {
		c.Error(notInteger)
		return 0, false
	}
	if numkeys > int64(len(args)-3) {
		c.Error("ERR Number of keys can't be greater than number of args")
		return 0, false
	}
	if numkeys < 0 {
		c.Error("ERR Number of keys can't be negative")
		return 0, false
	}
	return numkeys, true
}

// evalCommand: EVAL script numkeys [key ...] [arg ...] and its variants.
func (c *Client) evalCommand(args [][]byte, evalsha, ro bool) {
	numkeys, ok := scriptNumKeys(c, args, msgNotInteger)
	if !ok {
		return
	}
	eng := &c.srv.tx.scripts
	var sha string
	var sc *luaScript
	if evalsha {
		if sc = eng.lookupSHA(args[1]); sc == nil {
			c.Error("NOSCRIPT No matching script. Please use EVAL.")
			return
		}
		sha = sc.sha
	} else {
		var errMsg string
		sha, sc, errMsg = eng.load(args[1])
		if errMsg != "" {
			c.Error(errMsg)
			return
		}
	}
	keys := args[3 : 3+numkeys]
	argv := args[3+numkeys:]
	if !c.prepareScript(sc.flags, ro) {
		return
	}
	c.runLua(&scriptRun{name: sha, eval: true, flags: sc.flags, readOnly: ro || sc.flags&sfCompat == 0 && sc.flags&sfNoWrites != 0, roams: &sc.roams},
		func(eng *scriptEngine) (*luaEnv, *lua.LFunction) {
			eng.ensureEnv(c.srv)
			return eng.env, eng.evalFunction(sha, sc)
		}, keys, argv)
}

// prepareScript applies the checks Redis makes before running a script
// (scriptPrepareForRun) and writes the refusal.
func (c *Client) prepareScript(flags scriptFlags, ro bool) bool {
	if flags&sfCompat != 0 {
		// Redis refuses a script without flags on a stale replica (before
		// it runs anything) as any command without the stale flag.
		if c.srv.repl.stale() && !c.isMasterLink() {
			c.Error(errMasterDown)
			return false
		}
		return true
	}
	if flags&sfNoCluster != 0 && c.srv.cluster != nil {
		c.Error("ERR Can not run script on cluster, 'no-cluster' flag is set.")
		return false
	}
	if flags&sfNoWrites == 0 {
		// A script that may write is refused where writes are: on a
		// read-only replica, without enough good replicas. Its flags make
		// the command a write, so Redis's processCommand answers as for
		// any write (scriptPrepareForRun's own text is for module calls).
		if set := c.srv.table.byName["set"]; set != nil && !c.replicationAllows(set) {
			return false
		}
		if ro {
			c.Error("ERR Can not execute a script with write flag using *_ro command.")
			return false
		}
	}
	// A stale replica runs only scripts flagged allow-stale (the script's
	// flags replace the command's stale flag; after READONLY, as
	// processCommand checks them).
	if flags&sfAllowStale == 0 && c.srv.repl.stale() && !c.isMasterLink() {
		c.Error(errMasterDown)
		return false
	}
	// Out of memory when the command started (EXEC's start, for a script
	// in a transaction): only allow-oom and no-writes scripts run.
	if c.oomAtStart && c.srv.mem.limit.Load() > 0 && flags&(sfAllowOOM|sfNoWrites) == 0 {
		c.Error("OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'")
		return false
	}
	return true
}

// evalFunction returns the Lua function of a cached EVAL script in the
// current state.
func (eng *scriptEngine) evalFunction(sha string, sc *luaScript) *lua.LFunction {
	if fn := eng.fns[sha]; fn != nil {
		return fn
	}
	fn := eng.env.L.NewFunctionFromProto(sc.proto)
	fn.Env = eng.env.proxy
	if !sc.setsGlobals {
		// Nothing in it can write to its environment: it reads the
		// globals without the read-only proxy in between (one table
		// lookup per global read instead of three). The proxy is still
		// what it gets as _G, from getfenv and for loadstring's chunks.
		fn.Env = eng.env.globals
	}
	eng.fns[sha] = fn
	return fn
}

// ensureEnv creates the Lua state on first use (gate held).
func (eng *scriptEngine) ensureEnv(s *Server) *luaEnv {
	if eng.env == nil {
		eng.rand.seed(time.Now().UnixNano())
		eng.env = eng.newEnv(s)
		eng.fns = make(map[string]*lua.LFunction)
	}
	return eng.env
}

// redis.set_repl's flags (Redis's PROPAGATE_AOF, PROPAGATE_REPL).
const (
	replToAOF      = 1
	replToReplicas = 2
)

// newEnv builds a Lua state with the redis API served by this engine.
func (eng *scriptEngine) newEnv(s *Server) *luaEnv {
	env := newLuaEnv(eng.api(s), map[string]lua.LValue{
		"REPL_NONE": lua.LNumber(0), "REPL_AOF": lua.LNumber(replToAOF), "REPL_SLAVE": lua.LNumber(replToReplicas),
		"REPL_REPLICA": lua.LNumber(replToReplicas), "REPL_ALL": lua.LNumber(replToAOF | replToReplicas),
	})
	eng.patchMath(env)
	return env
}

// patchMath replaces math.random/randomseed with the engine's rand48.
func (eng *scriptEngine) patchMath(env *luaEnv) {
	if p, ok := env.globals.RawGetString("math").(*lua.LTable); ok {
		real := env.L.GetMetatable(p).(*lua.LTable).RawGetString("__index").(*lua.LTable)
		real.RawSetString("random", env.L.NewFunction(eng.mathRandom))
		real.RawSetString("randomseed", env.L.NewFunction(eng.mathRandomseed))
	}
}

// reset drops the Lua state and the cache (SCRIPT FLUSH; gate held).
func (eng *scriptEngine) reset() {
	eng.mu.Lock()
	eng.scripts = nil
	eng.lastFound.Store(nil)
	eng.mu.Unlock()
	if eng.env != nil {
		eng.env.L.Close()
	}
	eng.env = nil
	eng.fns = nil
}

// runLua runs a script function and replies: under the slot locks of its
// declared keys when it may (node/script_locked.go), else with the gate
// closed. fnOf returns the Lua state and function to run (nil: it is gone,
// the reply is written), called with the script state held.
func (c *Client) runLua(run *scriptRun, fnOf func(*scriptEngine) (*luaEnv, *lua.LFunction), keys, argv [][]byte) {
	eng := &c.srv.tx.scripts
	if lr := c.lockedRunFor(run, keys); lr != nil {
		restart := c.runLuaLocked(run, lr, fnOf, keys, argv)
		if !restart {
			return
		}
		// It reached beyond its keys before doing anything visible: it
		// runs again, from the start, alone (and from now on).
		run.roams.Store(true)
		run.reset()
	}
	// The slots the dispatcher locked for EVAL's declared keys are let go
	// while the script runs: its commands lock their own.
	held := c.slotBuf
	heldDB := c.LockedDB()
	if heldDB != nil {
		heldDB.UnlockSlots(held)
	}
	release := c.closeGate()
	eng.runMu.Lock()
	defer func() {
		eng.runMu.Unlock()
		release()
		if heldDB != nil {
			heldDB.LockSlots(held)
		}
	}()
	c.runLuaBody(run, nil, fnOf, keys, argv)
}

// runLuaBody runs the script with the Lua state held (runMu, and the gate
// or the locked run's slots) and replies, unless the locked run lr gave up
// to run again exclusive: then it writes nothing and returns true.
func (c *Client) runLuaBody(run *scriptRun, lr *lockedRun, fnOf func(*scriptEngine) (*luaEnv, *lua.LFunction), keys, argv [][]byte) (restart bool) {
	s := c.srv
	eng := &s.tx.scripts
	// The slot of the declared keys (the dispatcher checked they share
	// one): undeclared keys must use it too (cluster mode).
	run.slot = -1
	switch {
	case lr != nil && len(lr.held) == 1:
		run.slot = int32(lr.held[0]) // the slot the dispatcher hashed them to
	case len(keys) > 0:
		run.slot = int32(slots.KeySlot(keys[0]))
	}
	run.locked = lr
	run.underLocks.Store(lr != nil)
	run.onlyReads = true
	env, fn := fnOf(eng)
	if fn == nil {
		return
	}
	L := env.L

	// The script client is reused from run to run (only the gate's owner
	// runs scripts); its buffers keep their capacity.
	lc := eng.lc
	if lc == nil {
		lc = s.bindClient(&Client{srv: s, authenticated: true})
		eng.lc = lc
	}
	lc.id, lc.Proto = c.id, 2
	lc.dbIndex.Store(c.dbIndex.Load())
	lc.multiLen.Store(-1)
	lc.tx.exclusive = lr == nil // a command of a locked run never closes the gate (coverage)
	lc.tx.inScript = true
	lc.scriptCaller, lc.scriptKeys = c, keys
	lc.bs.denyBlocking = true
	lc.readonly = c.readonly
	lc.asking = c.asking
	run.caller, run.lc, run.start, run.repl = c, lc, time.Now(), replToAOF|replToReplicas
	run.startMs = run.start.UnixMilli()
	capture := c.startCapture()
	lc.tx.capture = c.tx.capture

	var callArgs []lua.LValue
	if run.eval {
		env.setEvalArray(0, "KEYS", keys)
		env.setEvalArray(1, "ARGV", argv)
	} else {
		// A function may keep its arguments (in its library's upvalues):
		// new tables every call.
		newArray := func(vals [][]byte) lua.LValue {
			t := L.CreateTable(len(vals), 0)
			for i, v := range vals {
				t.RawSetInt(i+1, lua.LString(v))
			}
			return t
		}
		callArgs = []lua.LValue{newArray(keys), newArray(argv)}
	}

	if eng.ctx == nil || eng.ctx.Err() != nil {
		// A fresh context after a SCRIPT KILL (or the first run); one
		// context serves every run otherwise.
		eng.ctx, eng.cancel = context.WithCancel(context.Background())
	}
	run.cancel = eng.cancel
	L.SetContext(eng.ctx)
	eng.cur = run
	eng.running.Store(run)
	eng.armBusyTimer()
	eng.startMemoryWatch(s)

	top := L.GetTop()
	L.Push(fn)
	for _, a := range callArgs {
		L.Push(a)
	}
	err := L.PCall(len(callArgs), 1, env.errFunc)

	eng.running.Store(nil)
	eng.cur = nil
	lc.scriptKeys = nil // do not keep the caller's arguments
	L.RemoveContext()
	if lr != nil {
		s.tx.gate.clearRunBusy(run)
		if lr.restart && !run.killed.Load() && !run.oom.Load() {
			L.SetTop(top)
			lc.tx.capture = nil
			if capture != nil {
				c.tx.capture = nil // nothing was captured: only reads ran
			}
			lc.Out = lc.Out[:0]
			return true
		}
	}
	if err != nil {
		c.scriptError(run, err)
	} else {
		luaToReply(c, L.Get(-1), lc.Proto, 0)
	}
	L.SetTop(top)
	c.finishCapture(capture)
	lc.tx.capture = nil
	// Clients blocked on keys the script made ready are served by the
	// dispatcher after EVAL, like after any command.
	c.bs.ready = append(c.bs.ready, lc.bs.ready...)
	clear(lc.bs.ready)
	lc.bs.ready = lc.bs.ready[:0]
	if cap(lc.Out) > 64*1024 {
		lc.Out = nil // do not keep a big reply's buffer
	}
	if run.killed.Load() {
		s.log.Warn("Lua script killed by user with SCRIPT KILL.")
	}
	return false
}

// scriptMemoryLimit is how much the Go heap may grow while one script runs
// before the script is stopped: Lua tables and strings live on the Go heap,
// and a runaway script must not take the process down.
const scriptMemoryLimit = 1 << 30

// startMemoryWatch starts, once per server, the goroutine that samples the
// heap while a script runs and stops a script that grew it by more than
// memLimit (it ends when the server stops), and wakes it if it sleeps.
// Called with the running script stored (eng.running).
func (eng *scriptEngine) startMemoryWatch(s *Server) {
	eng.watchOnce.Do(func() {
		eng.watchWake = make(chan struct{}, 1)
		go eng.memoryWatch(s)
	})
	// Only the script that ends its sleep sends: the channel never holds
	// more than one wake-up.
	if eng.watchIdle.Load() && eng.watchIdle.CompareAndSwap(true, false) {
		eng.watchWake <- struct{}{}
	}
}

// memoryWatchEvery is how often the memory watch samples the heap while
// a script runs.
const memoryWatchEvery = 20 * time.Millisecond

// memoryWatch samples the heap every memoryWatchEvery while scripts run,
// and sleeps once a sample finds none running, so that a server that ran
// a script once does not wake 50 times a second for good.
func (eng *scriptEngine) memoryWatch(s *Server) {
	t := time.NewTicker(memoryWatchEvery)
	defer t.Stop()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var watched *scriptRun
	var base uint64
	for {
		select {
		case <-s.stopCron:
			return
		case <-t.C:
		}
		run := eng.running.Load()
		if run == nil {
			watched = nil
			t.Stop()
			// Idle first, then look again: a script stored as running
			// after this look finds the watch idle and wakes it; one
			// stored before is seen here (and if it ended the sleep
			// already, its wake-up is drained).
			eng.watchIdle.Store(true)
			if eng.running.Load() == nil || !eng.watchIdle.CompareAndSwap(true, false) {
				select {
				case <-s.stopCron:
					return
				case <-eng.watchWake:
				}
			}
			t.Reset(memoryWatchEvery)
			continue
		}
		metrics.Read(sample)
		heap := sample[0].Value.Uint64()
		if run != watched {
			watched, base = run, heap
			continue
		}
		if heap > base+eng.memLimit && run.oom.CompareAndSwap(false, true) {
			s.log.Warn("stopping a script that grew the heap past the limit",
				zap.String("script", run.name), zap.Uint64("heap_bytes", heap))
			run.cancel()
		}
	}
}

// scriptCounts returns the number of cached EVAL scripts, function
// libraries and functions (INFO memory).
func (s *Server) scriptCounts() (scripts, libs, funcs int) {
	eng := &s.tx.scripts
	eng.mu.Lock()
	scripts = len(eng.scripts)
	eng.mu.Unlock()
	fe := &s.tx.functions
	fe.mu.Lock()
	libs, funcs = len(fe.libs), len(fe.funcs)
	fe.mu.Unlock()
	return scripts, libs, funcs
}

// keyspaceClock is the keyspace's clock: the wall clock, except that while
// a script runs, time stands still at the script's start (Redis's
// scriptTimeSnapshot): a key does not expire in the middle of a script.
type keyspaceClock struct{ s *Server }

// Now implements clock.Clock.
func (k keyspaceClock) Now() time.Time {
	if run := k.s.tx.scripts.running.Load(); run != nil {
		return time.UnixMilli(run.startMs)
	}
	return time.Now()
}

// registerScriptHooks sets the memory watch's limit, creates the busy
// timer (stopped) and reads busy-reply-threshold now and on every change.
func (s *Server) registerScriptHooks() {
	eng := &s.tx.scripts
	eng.memLimit = scriptMemoryLimit
	eng.busyTimer = time.AfterFunc(time.Hour, func() { eng.checkBusy(s) })
	eng.busyTimer.Stop()
	eng.busyLimit.Store(s.cfg.Int("busy-reply-threshold"))
	s.cfg.OnChange("busy-reply-threshold", func(string) error {
		eng.busyLimit.Store(s.cfg.Int("busy-reply-threshold"))
		eng.busyTimer.Reset(0) // a pending deadline of the old threshold is looked at again
		return nil
	})
}

// armBusyTimer makes the gate busy once the running script (eng.running,
// stored before) has run for busy-reply-threshold. One timer per engine,
// armed by a script that finds it idle: when it fires it looks at the
// script that runs then and waits again for that one's deadline, so that
// scripts shorter than the threshold, one after another, re-arm it once
// per threshold, not each (a Reset per script was 2% of an EVALSHA).
func (eng *scriptEngine) armBusyTimer() {
	limit := time.Duration(eng.busyLimit.Load()) * time.Millisecond
	if limit > 0 && eng.busyArmed.CompareAndSwap(false, true) {
		eng.busyTimer.Reset(limit)
	}
}

// checkBusy runs on the timer's goroutine. It clears busyArmed before it
// looks at the running script: a script stored as running after that
// finds the timer idle and arms it.
func (eng *scriptEngine) checkBusy(s *Server) {
	eng.busyArmed.Store(false)
	run := eng.running.Load()
	if run == nil {
		return
	}
	limit := time.Duration(eng.busyLimit.Load()) * time.Millisecond
	if limit <= 0 {
		return
	}
	if ran := time.Since(run.start); ran < limit {
		// A later script: wait for its own deadline.
		if eng.busyArmed.CompareAndSwap(false, true) {
			eng.busyTimer.Reset(limit - ran)
		}
		return
	}
	if eng.running.Load() == run {
		run.busy.Store(true)
		if run.underLocks.Load() {
			s.tx.gate.setRunBusy(run)
		} else {
			s.tx.gate.setBusy(run.eval)
		}
		// The clients that may stop it (SCRIPT KILL, SHUTDOWN NOSAVE) and
		// those to answer -BUSY must be read, on goroutines of their own
		// if an event loop runs or waits for the script (node/evloop.go).
		s.evacuateLoops()
	}
}

// scriptError writes the reply of a script that raised an error, as
// luaCallFunction: the error's text, then " script: NAME, on SOURCE:LINE."
// when the position is known.
func (c *Client) scriptError(run *scriptRun, err error) {
	ae, ok := err.(*lua.ApiError)
	var msg, source, line string
	counted := false // the error was counted in errorstats where it arose
	if ok {
		if t, isTable := ae.Object.(*lua.LTable); isTable {
			if e, isStr := t.RawGetString("err").(lua.LString); isStr {
				msg = string(e)
			}
			counted = t.RawGetString("ignore_error_stats_update") == lua.LTrue
			if s, isStr := t.RawGetString("source").(lua.LString); isStr {
				source = string(s)
			}
			switch l := t.RawGetString("line").(type) {
			case lua.LNumber:
				line = strconv.FormatInt(int64(l), 10)
			case lua.LString:
				line = string(l)
			}
		} else {
			msg = "ERR " + ae.Object.String()
		}
	} else {
		msg = "ERR " + err.Error()
	}
	if run.killed.Load() {
		msg = "ERR Script killed by user with SCRIPT KILL..."
	}
	if run.oom.Load() {
		msg = "ERR Script used too much memory and was stopped"
	}
	if msg == "" {
		c.Error(fmt.Sprintf("ERR Error running script %s, %.100s", run.name, "execution failure"))
		return
	}
	if source != "" && line != "" {
		msg += fmt.Sprintf(" script: %s, on %s:%s.", run.name, source, line)
	}
	if counted && !run.killed.Load() && !run.oom.Load() {
		// A redis.call error raised as is (a command's error reply, or a
		// call the script's state refused) was counted when it was
		// written; Redis replies with ERR_REPLY_FLAG_NO_STATS_UPDATE.
		c.errorCountedAlready(msg)
		return
	}
	c.Error(msg)
}

// errorCountedAlready writes an error reply that INFO errorstats counted
// where it arose (a script's redis.call error): the command still counts as
// failed, the error not twice.
func (c *Client) errorCountedAlready(msg string) {
	onError := c.OnError
	c.OnError = nil
	c.Error(msg)
	c.OnError = onError
	c.errored = true
}

// api returns the redis table's functions.
func (eng *scriptEngine) api(s *Server) map[string]lua.LGFunction {
	return map[string]lua.LGFunction{
		"call":  func(L *lua.LState) int { return eng.luaCall(L, s, true) },
		"pcall": func(L *lua.LState) int { return eng.luaCall(L, s, false) },
		"error_reply": func(L *lua.LState) int {
			if L.GetTop() != 1 || L.Get(1).Type() != lua.LTString {
				L.Push(luaErrorTable(L, "wrong number or type of arguments"))
				return 1
			}
			msg := L.ToString(1)
			if !strings.HasPrefix(msg, "-") {
				msg = "-" + msg
			}
			L.Push(luaErrorTable(L, msg))
			return 1
		},
		"status_reply": func(L *lua.LState) int {
			if L.GetTop() != 1 || L.Get(1).Type() != lua.LTString {
				L.Push(luaErrorTable(L, "wrong number or type of arguments"))
				return 1
			}
			L.Push(luaFieldTable(L, "ok", L.Get(1), 1))
			return 1
		},
		"log": func(L *lua.LState) int {
			argc := L.GetTop()
			if argc < 2 {
				luaRaise(L, "redis.log() requires two arguments or more.")
			}
			lvl, ok := L.Get(1).(lua.LNumber)
			if !ok {
				luaRaise(L, "First argument must be a number (log level).")
			}
			if lvl < 0 || lvl > 3 {
				luaRaise(L, "Invalid debug level.")
			}
			var parts []string
			for i := 2; i <= argc; i++ {
				if v, ok := L.Get(i).(lua.LString); ok {
					parts = append(parts, string(v))
				} else if n, ok := L.Get(i).(lua.LNumber); ok {
					parts = append(parts, n.String())
				}
			}
			msg := strings.Join(parts, " ")
			switch int(lvl) {
			case 0:
				s.log.Debug(msg)
			case 1, 2:
				s.log.Info(msg)
			default:
				s.log.Warn(msg)
			}
			return 0
		},
		"setresp": func(L *lua.LState) int {
			run := eng.cur
			if run == nil {
				luaRaise(L, "redis.setresp can only be called inside a script invocation")
			}
			if L.GetTop() != 1 {
				luaRaise(L, "redis.setresp() requires one argument.")
			}
			n, _ := L.Get(1).(lua.LNumber)
			if n != 2 && n != 3 {
				luaRaise(L, "RESP version must be 2 or 3.")
			}
			run.lc.Proto = int(n)
			return 0
		},
		"set_repl": func(L *lua.LState) int {
			run := eng.cur
			if run == nil {
				luaRaise(L, "redis.set_repl can only be called inside a script invocation")
			}
			if L.GetTop() != 1 {
				luaRaise(L, "redis.set_repl() requires two arguments.")
			}
			n, _ := L.Get(1).(lua.LNumber)
			if int(n)&^3 != 0 {
				luaRaise(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")
			}
			run.repl = int(n)
			return 0
		},
		"replicate_commands": func(L *lua.LState) int {
			L.Push(lua.LTrue)
			return 1
		},
		"breakpoint": func(L *lua.LState) int {
			L.Push(lua.LFalse)
			return 1
		},
		"debug": func(L *lua.LState) int { return 0 },
		"acl_check_cmd": func(L *lua.LState) int {
			if eng.cur == nil {
				luaRaise(L, "redis.acl_check_cmd can only be called inside a script invocation")
			}
			argv, errMsg := eng.luaArgv(L)
			if errMsg != "" {
				luaRaise(L, errMsg)
			}
			spec, unknown := s.table.lookup(argv)
			if spec == nil || unknown {
				eng.args.release()
				luaRaise(L, "Invalid command passed to redis.acl_check_cmd()")
			}
			permits := eng.cur.aclPermits(spec, argv) // node/acl.go
			eng.args.release()
			L.Push(lua.LBool(permits))
			return 1
		},
	}
}

// luaRaise raises Redis's error table for msg (redis.* misuse).
func luaRaise(L *lua.LState, msg string) {
	L.Error(luaErrorTable(L, msg), 0)
}

// luaCallArgs holds the arguments of the redis.call being served: one
// slice and one byte buffer reused from call to call (scripts run one at a
// time), instead of an allocation per argument. The command may not keep
// them past its return, as with a connection's read buffer.
type luaCallArgs struct {
	argv  [][]byte
	bytes []byte
}

// The argument buffers kept from one call to the next are bounded: a call
// that passed a large value or many arguments lets them go when it ends
// (release), so that no script pins them.
const (
	maxKeptCallArgBytes = 64 << 10
	maxKeptCallArgs     = 1024
)

// release drops the buffers of the call that just ended if they are big.
func (ca *luaCallArgs) release() {
	if cap(ca.bytes) > maxKeptCallArgBytes {
		ca.bytes = nil
	}
	if cap(ca.argv) > maxKeptCallArgs {
		ca.argv = nil
	}
}

// luaArgv converts redis.call's arguments into eng.args (valid until the
// next call).
func (eng *scriptEngine) luaArgv(L *lua.LState) ([][]byte, string) {
	argc := L.GetTop()
	if argc == 0 {
		return nil, "Please specify at least one argument for this redis lib call"
	}
	ca := &eng.args
	size := 0
	for i := 1; i <= argc; i++ {
		switch x := L.Get(i).(type) {
		case lua.LString:
			size += len(x)
		case lua.LNumber:
			size += 32 // %.17g is at most 24 bytes
		default:
			return nil, "Lua redis lib command arguments must be strings or integers"
		}
	}
	// One buffer for all: the slices below never see it move.
	buf := slices.Grow(ca.bytes[:0], size)
	argv := slices.Grow(ca.argv[:0], argc)
	for i := 1; i <= argc; i++ {
		start := len(buf)
		buf = appendLuaArg(buf, L.Get(i))
		argv = append(argv, buf[start:len(buf):len(buf)])
	}
	ca.bytes, ca.argv = buf, argv
	return argv, ""
}

// luaCall is redis.call (raise) and redis.pcall.
func (eng *scriptEngine) luaCall(L *lua.LState, s *Server, raise bool) int {
	run := eng.cur
	if run == nil {
		luaRaise(L, "redis.call/pcall can only be called inside a script invocation")
	}
	argv, errMsg := eng.luaArgv(L)
	L.SetTop(0)
	if errMsg != "" {
		t := luaErrorTable(L, errMsg)
		if raise {
			L.Error(t, 0)
		}
		L.Push(t)
		return 1
	}
	reply, errMsg := run.call(argv)
	eng.args.release()
	if errMsg != "" {
		t := luaReplyErrorTable(L, errMsg)
		if raise {
			L.Error(t, 0)
		}
		L.Push(t)
		return 1
	}
	if callerTakesNoResults(L) && !(raise && len(reply) > 0 && reply[0] == '-') {
		return 0 // a statement: the reply is not converted (node/script_results.go)
	}
	v, _ := respToLua(L, reply)
	if raise && len(reply) > 0 && reply[0] == '-' {
		L.Error(v, 0)
	}
	L.Push(v)
	return 1
}

// call runs one command for the script on its client and returns the
// reply, or the text of the error that kept it from running.
func (run *scriptRun) call(argv [][]byte) ([]byte, string) {
	if run.locked != nil && run.locked.restart {
		return nil, restartMsg // it is unwinding to run again exclusive
	}
	lc := run.lc
	s := lc.srv
	// The script client remembers the commands scripts call, as a
	// connection does: a script calls the same few.
	spec, unknown := lc.lookupCommand(argv)
	if spec == nil || unknown {
		return nil, run.refuse(nil, "Unknown Redis command called from script")
	}
	if !spec.ArityOK(len(argv)) {
		return nil, run.refuse(spec, "Wrong number of args calling Redis command from script")
	}
	if spec.Flags&command.FlagNoscript != 0 && !s.tx.scripts.denyDisabled.Load() {
		return nil, run.refuse(spec, "This Redis command is not allowed from script")
	}
	if spec.Flags&command.FlagStale == 0 && s.repl.stale() && !run.caller.isMasterLink() {
		// An allow-stale script on a stale replica (scriptVerifyAllowStale).
		return nil, run.refuse(spec, "Can not execute the command on a stale replica")
	}
	if msg := run.aclScriptRefusal(spec, argv); msg != "" { // node/acl.go
		return nil, run.refuse(spec, msg)
	}
	if run.readOnly && spec.Flags&(command.FlagWrite|command.FlagMayReplicate) != 0 {
		return nil, run.refuse(spec, "Write commands are not allowed from read-only scripts.")
	}
	if spec.Flags&command.FlagWrite != 0 && !run.dirty.Load() && !run.caller.isMasterLink() {
		// Replica / min-replicas-to-write refusals apply until the script
		// has written (then it must not fail half-way); a script from the
		// master or the AOF is obeyed (Redis's mustObeyClient).
		lc.Out = lc.Out[:0]
		if !lc.replicationAllows(spec) {
			return nil, run.rejected(spec)
		}
	}
	if spec.Flags&command.FlagDenyOOM != 0 && !run.dirty.Load() && run.flags&sfAllowOOM == 0 &&
		run.caller.oomAtStart && s.mem.limit.Load() > 0 && !run.caller.isMasterLink() {
		// scriptVerifyOOM: out of memory when the script started, and this
		// would be its first write.
		return nil, run.refuse(spec, "-"+oomError)
	}
	if spec.Flags&command.FlagWrite != 0 {
		run.dirty.Store(true)
	}
	if (spec.FullName() == "xread" || spec.FullName() == "xreadgroup") && hasArg(argv, "block") {
		// Redis's xreadCommand refuses to block in a script.
		return nil, run.refuse(nil, "-ERR "+spec.FullName()+" command is not allowed with BLOCK option from scripts")
	}
	db := lc.SelectedDB()
	keys, sl := lc.commandSlots(spec, argv)
	lc.keyBuf = keys // reused by the next call, as the dispatcher does
	if s.cluster != nil {
		if msg := run.checkClusterKeys(spec, argv, keys, sl); msg != "" {
			return nil, run.refuse(spec, msg)
		}
	}
	if run.locked != nil {
		if msg := run.cover(spec, argv, db, keys, sl); msg != "" {
			return nil, msg
		}
	}
	run.noteRan(spec)
	lc.slotBuf = sl
	lc.Out = lc.Out[:0]
	if run.repl&replToReplicas == 0 {
		// redis.set_repl(REPL_NONE) or (REPL_AOF): not for replicas.
		// shoal has no AOF, so the effect reaches no consumer.
		lc.tx.capture = &effectCapture{db: -1}
	} else {
		lc.tx.capture = run.caller.tx.capture
	}
	start := time.Since(s.start) // monotonic only: one clock read, not two (time.Now)
	locks := run.locked == nil   // a locked run holds them already
	if locks {
		db.LockSlots(sl)
	}
	lc.SetDB(db)
	lc.errored = false
	if len(keys) == 1 && len(sl) == 1 {
		lc.HintKeySlot(argv[keys[0]], sl[0]) // hashed once (command.Ctx.KeySlot)
	}
	lc.callHandler(spec, argv)
	lc.ClearKeySlotHint()
	lc.propagateEffects(spec, argv)
	if locks {
		db.UnlockSlots(sl)
	}
	lc.SetDB(nil)
	shard := lc.srv.table.statShard(spec, lc.id)
	shard.calls.Add(1)
	shard.usec.Add(int64((time.Since(s.start) - start) / time.Microsecond))
	if lc.errored {
		shard.failed.Add(1)
	}
	return lc.Out, ""
}

// refuse counts a call the script's state refused, as Redis's scriptCall
// does (afterErrorReply: errorstats, under msg's "-CODE" or ERR; and the
// command's rejected_calls), and returns msg. The error table the script
// gets is flagged so that its reply is not counted again.
func (run *scriptRun) refuse(spec *command.Spec, msg string) string {
	text := "ERR " + msg
	if strings.HasPrefix(msg, "-") {
		text = msg[1:]
	}
	run.lc.noteError(text)
	if spec != nil {
		run.lc.srv.table.statShard(spec, run.lc.id).rejected.Add(1)
	}
	return msg
}

// rejected counts a command the script's call refused (rejected_calls; its
// error reply was counted when written) and returns the refusal's text from
// the script client's output.
func (run *scriptRun) rejected(spec *command.Spec) string {
	lc := run.lc
	lc.srv.table.statShard(spec, lc.id).rejected.Add(1)
	msg := strings.TrimRight(string(lc.Out), "\r\n")
	lc.Out = lc.Out[:0]
	return msg
}

// hasArg reports whether one of args[1:] is word (any case).
func hasArg(args [][]byte, word string) bool {
	for _, a := range args[1:] {
		if command.EqualFoldASCII(a, word) {
			return true
		}
	}
	return false
}

// checkClusterKeys applies scriptVerifyClusterState: every key a script
// touches must be served here, and in one slot unless the script allows
// cross-slot keys. sl are the keys' slots as commandSlots gave them (none
// when it could not find them all).
func (run *scriptRun) checkClusterKeys(spec *command.Spec, argv [][]byte, keys []int, sl []uint16) string {
	if len(keys) == 0 {
		return ""
	}
	// One command's keys in two slots: Redis's getNodeByQuery finds no
	// node for it, which its scripts report as a non-local key.
	const crossSlot = "Script attempted to access a non local key in a cluster node"
	var slot uint16
	switch len(sl) {
	case 1:
		slot = sl[0] // every key hashes to it
	case 0:
		slot = slots.KeySlot(argv[keys[0]])
		for _, p := range keys[1:] {
			if slots.KeySlot(argv[p]) != slot {
				return crossSlot
			}
		}
	default:
		return crossSlot
	}
	switch r, _, _ := run.caller.routeSlots(routeRequest{write: spec.Flags&command.FlagWrite != 0, asking: run.caller.asking}, slot, nil); r {
	case routeHere, routeCheckKeys:
	case routeDownReadOnly:
		return "Script attempted to execute a write command while the cluster is down and readonly"
	case routeDown:
		return "Script attempted to execute a command while the cluster is down"
	default:
		return "Script attempted to access a non local key in a cluster node"
	}
	if run.flags&(sfCompat|sfAllowCrossSlot) != 0 {
		return "" // EVAL without flags, or allow-cross-slot-keys
	}
	if run.slot < 0 {
		run.slot = int32(slot)
	} else if uint16(run.slot) != slot {
		return "Script attempted to access keys that do not hash to the same slot"
	}
	return ""
}

// ------------------------------------------------------ SCRIPT

func cmdScriptLoad(c *Client, args [][]byte) {
	sha, _, errMsg := c.srv.tx.scripts.load(args[2])
	if errMsg != "" {
		c.Error(errMsg)
		return
	}
	c.BulkString(sha)
}

func cmdScriptExists(c *Client, args [][]byte) {
	eng := &c.srv.tx.scripts
	c.Array(len(args) - 2)
	for _, a := range args[2:] {
		if eng.lookup(strings.ToLower(string(a))) != nil {
			c.Int(1)
		} else {
			c.Int(0)
		}
	}
}

func cmdScriptFlush(c *Client, args [][]byte) {
	if len(args) > 3 || len(args) == 3 && !command.EqualFoldASCII(args[2], "sync") && !command.EqualFoldASCII(args[2], "async") {
		c.Error("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
		return
	}
	release := c.closeGate()
	c.srv.tx.scripts.reset()
	release()
	c.OK()
}

func cmdScriptKill(c *Client, args [][]byte) { c.killScript(true) }

// killScript is SCRIPT KILL (eval) and FUNCTION KILL.
func (c *Client) killScript(eval bool) {
	run := c.srv.tx.scripts.runningVisible()
	if run == nil {
		c.Error("NOTBUSY No scripts in execution right now.")
		return
	}
	if run.dirty.Load() {
		c.Error("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.")
		return
	}
	if eval != run.eval { // the other kind's KILL: the error names the right one
		c.Error(busyScriptError(run.eval))
		return
	}
	run.killed.Store(true)
	run.cancel()
	c.OK()
}

func cmdScriptHelp(c *Client, args [][]byte) {
	c.StatusArray([]string{
		"SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"EXISTS <sha1> [<sha1> ...]",
		"    Return information about the existence of the scripts in the script cache.",
		"FLUSH [ASYNC|SYNC]",
		"    Flush the Lua scripts cache. Very dangerous on replicas.",
		"    When called without the optional mode argument, the behavior is determined by the",
		"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
		"    * ASYNC: Asynchronously flush the scripts cache.",
		"    * SYNC: Synchronously flush the scripts cache.",
		"KILL",
		"    Kill the currently executing Lua script.",
		"LOAD <script>",
		"    Load a script into the scripts cache without executing it.",
		"HELP",
		"    Prints this help.",
	})
}

// ------------------------------------------------------ math.random

// lrand48 is Redis's redisLrand48: the 48-bit linear congruential
// generator of rand48, so that a seeded script gives the same numbers on
// every platform.
type lrand48 struct{ x uint64 }

func (r *lrand48) seed(s int64) { r.x = (uint64(int32(s))<<16 | 0x330E) & (1<<48 - 1) }

func (r *lrand48) next() int32 {
	r.x = (0x5DEECE66D*r.x + 0xB) & (1<<48 - 1)
	return int32(r.x >> 17)
}

const lrand48Max = 2147483647

func (eng *scriptEngine) mathRandom(L *lua.LState) int {
	r := float64(eng.rand.next()%lrand48Max) / float64(lrand48Max)
	switch L.GetTop() {
	case 0:
		L.Push(lua.LNumber(r))
	case 1:
		uf, _ := luaToNumber(L.Get(1))
		u := int(uf)
		if u < 1 {
			L.ArgError(1, "interval is empty")
		}
		L.Push(lua.LNumber(float64(int(r*float64(u)) + 1)))
	case 2:
		lf, _ := luaToNumber(L.Get(1))
		uf, _ := luaToNumber(L.Get(2))
		l, u := int(lf), int(uf)
		if l > u {
			L.ArgError(2, "interval is empty")
		}
		L.Push(lua.LNumber(float64(int(r*float64(u-l+1)) + l)))
	default:
		L.RaiseError("wrong number of arguments")
	}
	return 1
}

func (eng *scriptEngine) mathRandomseed(L *lua.LState) int {
	n, ok := luaToNumber(L.Get(1))
	if !ok {
		L.ArgError(1, "number expected, got "+L.Get(1).Type().String())
	}
	eng.rand.seed(int64(n))
	return 0
}

// luaToNumber converts as lua_tonumber: numbers, and strings that read as
// numbers.
func luaToNumber(v lua.LValue) (float64, bool) {
	switch x := v.(type) {
	case lua.LNumber:
		return float64(x), true
	case lua.LString:
		f, err := strconv.ParseFloat(strings.TrimSpace(string(x)), 64)
		return f, err == nil
	}
	return 0, false
}
