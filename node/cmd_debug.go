package node

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/glob"
	"github.com/shoal-db/shoal/store"
	"go.uber.org/zap"
)

// DEBUG: the subcommands Redis's test suite and tools rely on, with Redis's
// replies, plus two shoal extensions (GOROUTINES, HEAP) that write a Go
// runtime summary to the log. DEBUG declares no keys, so the subcommands
// that touch keys lock each key's slot themselves.

func debugHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{"debug": cmdDebug}
}

var debugHelpLines = []string{
	"CHANGE-REPL-ID",
	"    Change the replication IDs of the instance.",
	"    Dangerous: should be used only for testing the replication subsystem.",
	"DIGEST",
	"    Output a hex signature representing the current DB content.",
	"DIGEST-VALUE <key> [<key> ...]",
	"    Output a hex signature of the values of all the specified keys.",
	"DROP-CLUSTER-PACKET-FILTER <packet-type>",
	"    Drop all packets that match the filtered type. Set to -1 allow all packets.",
	"ERROR <string>",
	"    Return a Redis protocol error with <string> as message. Useful for clients",
	"    unit tests to simulate Redis errors.",
	"LOG <message>",
	"    Write <message> to the server log.",
	"OBJECT <key>",
	"    Show low level info about `key` and associated value.",
	"POPULATE <count> [<prefix>] [<size>]",
	"    Create <count> string keys named key:<num>. If <prefix> is specified then",
	"    it is used instead of the 'key' prefix. These are not propagated to",
	"    replicas. Cluster slots are not respected so keys not belonging to the",
	"    current node can be created in cluster mode.",
	"PROTOCOL <type>",
	"    Reply with a test value of the specified type. <type> can be: string,",
	"    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
	"    true, false.",
	"SDSLEN <key>",
	"    Show low level SDS string info representing `key` and value.",
	"SET-ACTIVE-EXPIRE <0|1>",
	"    Setting it to 0 disables expiring keys in background when they are not",
	"    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
	"    default.",
	"PAUSE-CRON <0|1>",
	"    Stop periodic cron job processing.",
	"SLEEP <seconds>",
	"    Stop the server for <seconds>. Decimals allowed.",
	"STRINGMATCH-TEST",
	"    Run a fuzz tester against the stringmatchlen() function.",
	"STRUCTSIZE",
	"    Return the size of different Redis core C structures.",
	"CLUSTERLINK KILL <to|from|all> <node-id>",
	"    Kills the link based on the direction to/from (both) with the provided node.",
	"GOROUTINES",
	"    (shoal) Write the stacks of all goroutines to the server log.",
	"HEAP",
	"    (shoal) Write a summary of the Go heap to the server log.",
}

func cmdDebug(c *Client, args [][]byte) {
	sub := strings.ToLower(string(args[1]))
	argc := len(args)
	s := c.srv
	switch {
	case sub == "help" && argc == 2:
		c.ReplyHelp(args, debugHelpLines)
	case sub == "log" && argc == 3:
		s.log.Warn("DEBUG LOG: " + string(args[2]))
		c.OK()
	case sub == "sleep" && argc == 3:
		debugSleep(c, args[2])
	case sub == "pause-cron" && argc == 3:
		s.cronPaused.Store(atoi(args[2]) != 0)
		c.OK()
	case sub == "set-active-expire" && argc == 3:
		s.activeExpire.Store(atoi(args[2]) != 0)
		c.OK()
	case sub == "drop-cluster-packet-filter" && argc == 3:
		t, ok := command.ParseInt64(args[2])
		if !ok {
			c.Error(msgNotInteger)
			return
		}
		if s.cluster != nil {
			s.cluster.SetDropFilter(t)
		}
		c.OK()
	case sub == "clusterlink" && argc == 5 && command.EqualFoldASCII(args[2], "kill"):
		if s.cluster == nil {
			c.Error("ERR Debug option only available for cluster mode enabled setup!")
			return
		}
		c.clusterReply(s.cluster.KillLink(string(args[3]), string(args[4])))
	case sub == "set-disable-deny-scripts" && argc == 3: // node/script.go
		s.tx.scripts.denyDisabled.Store(atoi(args[2]) != 0)
		c.OK()
	case sub == "digest" && argc == 2:
		d := s.datasetDigest()
		c.Status(hex.EncodeToString(d[:]))
	case sub == "digest-value":
		c.Array(argc - 2)
		for _, key := range args[2:] {
			d := c.keyDigest(key)
			c.Status(hex.EncodeToString(d[:]))
		}
	case sub == "populate" && argc >= 3 && argc <= 5:
		debugPopulate(c, args)
	case sub == "object" && argc == 3:
		debugObject(c, args[2])
	case sub == "sdslen" && argc == 3:
		debugSdsLen(c, args[2])
	case sub == "protocol" && argc == 3:
		debugProtocol(c, args[2])
	case sub == "error" && argc == 3:
		c.Error(string(args[2]))
	case sub == "change-repl-id" && argc == 2:
		s.log.Warn("Changing replication IDs after receiving DEBUG change-repl-id")
		s.repl.m.ChangeID() // node/replication.go
		c.OK()
	case sub == "stringmatch-test" && argc == 2:
		stringmatchFuzz()
		c.Status("Apparently Redis did not crash: test passed")
	case sub == "structsize" && argc == 2:
		c.BulkString(fmt.Sprintf("bits:%d entry:%d ", strconv.IntSize, unsafe.Sizeof(store.Entry{})))
	case (sub == "listpack" || sub == "quicklist") && (argc == 3 || sub == "quicklist" && argc == 4):
		debugEncodingDump(c, sub, args[2])
	case sub == "quicklist-packed-threshold" && argc == 3:
		debugQuicklistPackedThreshold(c, args[2])
	case sub == "goroutines" && argc == 2:
		var b bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
		s.log.Warn("DEBUG GOROUTINES", zap.Int("goroutines", runtime.NumGoroutine()), zap.String("stacks", b.String()))
		c.OK()
	case sub == "reload":
		debugReload(c, args) // node/cmd_dump_save.go
	case sub == "heap" && argc == 2:
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		s.log.Warn("DEBUG HEAP",
			zap.Uint64("heap_alloc", ms.HeapAlloc), zap.Uint64("heap_inuse", ms.HeapInuse),
			zap.Uint64("heap_idle", ms.HeapIdle), zap.Uint64("heap_released", ms.HeapReleased),
			zap.Uint64("heap_objects", ms.HeapObjects), zap.Uint64("stack_inuse", ms.StackInuse),
			zap.Uint64("sys", ms.Sys), zap.Uint32("num_gc", ms.NumGC),
			zap.Uint64("pause_total_ns", ms.PauseTotalNs), zap.Int("goroutines", runtime.NumGoroutine()))
		c.OK()
	default:
		c.ErrSubcommandSyntax(args)
	}
}

// atoi parses like C's atoi: leading blanks, a sign and digits; anything
// else ends the number (0 if there is none).
func atoi(b []byte) int64 {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] >= '\t' && b[i] <= '\r') {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	var n int64
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if n > (math.MaxInt64-9)/10 {
			break
		}
		n = n*10 + int64(b[i]-'0')
	}
	if neg {
		return -n
	}
	return n
}

// strtod parses the longest prefix of b that is a number, like C's strtod
// (0 when there is none).
func strtod(b []byte) float64 {
	s := strings.TrimLeft(string(b), " \t\n\v\f\r")
	for end := len(s); end > 0; end-- {
		if f, err := strconv.ParseFloat(s[:end], 64); err == nil || command.IsRangeErr(err) {
			return f
		}
	}
	return 0
}

// debugSleep stops the whole server for the given time, as Redis's DEBUG
// SLEEP does by sleeping in its event loop: every other client waits before
// its next command (the execution gate, node/multi.go; commands already
// running finish first), so the replication stream is neither served nor
// applied, and the cluster bus neither processes what peers send nor runs
// its cron (gossip.Bus.Hold), so peers see the node stop answering — Redis's
// tests/cluster relies on that to make a node time out without killing it.
// What arrives meanwhile waits in the socket and bus buffers, as in Redis.
// The sleep ends early if the server shuts down.
func debugSleep(c *Client, arg []byte) {
	secs := strtod(arg)
	if secs > 0 {
		release := c.closeGate()
		defer release()
		if unhold := c.holdBus(); unhold != nil { // node/cmd_cluster_migrate.go
			defer unhold()
		}
		d := time.Duration(math.MaxInt64)
		if secs < float64(math.MaxInt64)/float64(time.Second) {
			d = time.Duration(secs * float64(time.Second))
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-c.srv.stopCron:
		}
		t.Stop()
	}
	c.OK()
}

// debugPopulate implements DEBUG POPULATE count [prefix] [size]: keys
// prefix:N (default "key") holding "value:N", zero-padded or truncated to
// size bytes when size is given; existing keys are left alone.
func debugPopulate(c *Client, args [][]byte) {
	const msg = "ERR value is out of range, must be positive"
	count, ok := command.ParseInt64(args[2])
	if !ok || count < 0 {
		c.Error(msg)
		return
	}
	size := int64(0)
	if len(args) == 5 {
		size, ok = command.ParseInt64(args[4])
		if !ok || size < 0 {
			c.Error(msg)
			return
		}
		// The value is allocated at once: refuse what proto-max-bulk-len
		// would refuse from a client.
		if size > c.srv.cfg.Int("proto-max-bulk-len") {
			c.Error("ERR value is out of range, size is larger than proto-max-bulk-len")
			return
		}
	}
	prefix := "key"
	if len(args) >= 4 {
		prefix = string(args[3])
	}
	db := c.DB()
	var key, val []byte
	for j := int64(0); j < count; j++ {
		if j%1024 == 0 && c.srv.stopping() {
			break
		}
		key = append(key[:0], prefix...)
		key = append(key, ':')
		key = strconv.AppendInt(key, j, 10)
		if len(key) > 127 { // Redis formats the name into a 128-byte buffer
			key = key[:127]
		}
		val = append(val[:0], "value:"...)
		val = strconv.AppendInt(val, j, 10)
		if size > 0 {
			if int64(len(val)) > size {
				val = val[:size]
			} else {
				val = append(val, make([]byte, size-int64(len(val)))...)
			}
		}
		unlock := lockKeySlot(c, key)
		if db.Lookup(key, store.LookupNoTouch|store.LookupNoStats) == nil {
			db.SetString(key, val, false)
		}
		unlock()
	}
	c.OK()
}

// stopping reports whether Shutdown has begun.
func (s *Server) stopping() bool {
	select {
	case <-s.stopCron:
		return true
	default:
		return false
	}
}

// lookupPeek finds a key as Redis's dictFind does for the debugging
// commands: logically expired keys are still there, and neither the LRU
// clock nor the hit/miss counters change.
const lookupPeek = store.LookupNoExpire | store.LookupNoTouch | store.LookupNoStats

// debugObject writes Redis's DEBUG OBJECT line for a key.
func debugObject(c *Client, key []byte) {
	unlock := lockKeySlot(c, key)
	defer unlock()
	e := c.DB().Lookup(key, lookupPeek)
	if e == nil {
		c.Error("ERR no such key")
		return
	}
	ks := c.srv.ks
	idle := ks.IdleMillis(e) / 1000
	lru := (ks.Now()/1000 - idle) & (1<<24 - 1)
	extra := ""
	if e.Type() == store.TypeList {
		extra = listDebugObjectExtra(c, e.List())
	}
	c.Status(fmt.Sprintf("Value at:%p refcount:1 encoding:%s serializedlength:%d lru:%d lru_seconds_idle:%d%s",
		e, store.EncodingOf(e), serializedLength(e), lru, idle, extra))
}

// debugSdsLen reports a string key's lengths in Redis's DEBUG SDSLEN format
// (shoal strings have no sds header: "avail" is the spare capacity of a
// mutable value, and the allocation sizes are Go size classes).
func debugSdsLen(c *Client, key []byte) {
	unlock := lockKeySlot(c, key)
	defer unlock()
	e := c.DB().Lookup(key, lookupPeek)
	if e == nil {
		c.Error("ERR no such key")
		return
	}
	if e.Type() != store.TypeString || e.Encoding() == "int" {
		c.Error("ERR Not an sds encoded string.")
		return
	}
	v := e.Bytes()
	c.Status(fmt.Sprintf("key_sds_len:%d, key_sds_avail:0, key_zmalloc: %d, val_sds_len:%d, val_sds_avail:%d, val_zmalloc: %d",
		len(key), allocSize(int64(len(key))), len(v), cap(v)-len(v), allocSize(int64(cap(v)))))
}

// debugEncodingDump answers DEBUG LISTPACK / QUICKLIST for a key whose
// encoding matches (shoal prints no structure dump).
func debugEncodingDump(c *Client, sub string, key []byte) {
	unlock := lockKeySlot(c, key)
	defer unlock()
	e := c.DB().Lookup(key, lookupPeek)
	if e == nil {
		c.Error("ERR no such key")
		return
	}
	if store.EncodingOf(e) != sub {
		c.Error("ERR Not a " + sub + " encoded object.")
		return
	}
	title := strings.ToUpper(sub[:1]) + sub[1:]
	c.Status(title + " structure printed on stdout")
}

// debugProtocol replies with a sample of each RESP type (DEBUG PROTOCOL),
// exactly as Redis does; client test suites depend on it.
func debugProtocol(c *Client, name []byte) {
	switch strings.ToLower(string(name)) {
	case "string":
		c.BulkString("Hello World")
	case "integer":
		c.Int(12345)
	case "double":
		c.Double(3.141)
	case "bignum":
		c.BigNumber("1234567999999999999999999999999999999")
	case "null":
		c.Null()
	case "array":
		c.Array(3)
		for j := int64(0); j < 3; j++ {
			c.Int(j)
		}
	case "set":
		c.Set(3)
		for j := int64(0); j < 3; j++ {
			c.Int(j)
		}
	case "map":
		c.Map(3)
		for j := int64(0); j < 3; j++ {
			c.Int(j)
			c.Bool(j == 1)
		}
	case "attrib":
		if c.Proto >= 3 {
			c.attribute(1)
			c.BulkString("key-popularity")
			c.Array(2)
			c.BulkString("key:123")
			c.Int(90)
		}
		c.BulkString("Some real reply following the attribute")
	case "push":
		if c.Proto < 3 {
			c.Error("ERR RESP2 is not supported by this command")
			return
		}
		c.Push(2)
		c.BulkString("server-cpu-usage")
		c.Int(42)
		c.BulkString("Some real reply following the push reply")
	case "true":
		c.Bool(true)
	case "false":
		c.Bool(false)
	case "verbatim":
		c.Verbatim("This is a verbatim\nstring", "txt")
	default:
		c.Error("ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false")
	}
}

// stringmatchFuzz runs the glob matcher on random patterns and strings, as
// Redis's stringmatchlen_fuzz_test does: it passes by not crashing or
// hanging (the matcher bounds its own backtracking).
func stringmatchFuzz() {
	const alphabet = "ab*?[]^-\\"
	rnd := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	gen := func() string {
		b := make([]byte, rnd.IntN(32))
		for i := range b {
			if rnd.IntN(4) == 0 {
				b[i] = byte(rnd.IntN(256))
			} else {
				b[i] = alphabet[rnd.IntN(len(alphabet))]
			}
		}
		return string(b)
	}
	for i := 0; i < 100000; i++ {
		glob.Match(gen(), gen(), rnd.IntN(2) == 0)
	}
}

// ---------------------------------------------------------------- digests

// valueDigest is Redis's 20-byte DEBUG DIGEST accumulator.
type valueDigest [20]byte

// xor adds data without regard to order: d ^= SHA1(data).
func (d *valueDigest) xor(data []byte) {
	h := sha1.Sum(data)
	for i := range d {
		d[i] ^= h[i]
	}
}

// mix adds data in order: d = SHA1(d ^ SHA1(data)).
func (d *valueDigest) mix(data []byte) {
	d.xor(data)
	*d = sha1.Sum(d[:])
}

// Mix and Xor make valueDigest a store.Digester, so value types add their
// contents the way Redis's xorObjectDigest does for each type.
func (d *valueDigest) Mix(data []byte) { d.mix(data) }

// Xor adds data without regard to order (digest ^= SHA1(data)).
func (d *valueDigest) Xor(data []byte) { d.xor(data) }

// redisTypeCode is the OBJ_* number Redis mixes into a value's digest.
func redisTypeCode(t store.Type) uint32 {
	switch t {
	case store.TypeString:
		return 0
	case store.TypeList:
		return 1
	case store.TypeSet:
		return 2
	case store.TypeZSet:
		return 3
	case store.TypeHash:
		return 4
	case store.TypeStream:
		return 6
	}
	return 5 // module
}

// objectDigest adds e's type, value and expiry to d (xorObjectDigest).
// Caller holds e's slot lock.
func objectDigest(e *store.Entry, d *valueDigest) {
	var typ [4]byte
	binary.BigEndian.PutUint32(typ[:], redisTypeCode(e.Type()))
	d.mix(typ[:])
	if e.Type() == store.TypeString {
		d.mix(e.Bytes())
	} else if v := e.Value(); v != nil {
		v.Digest(d)
	}
	if e.ExpireAt() != 0 {
		d.xor([]byte("!!expire!!"))
	}
}

// entryDigest is one key/value pair's digest: the key mixed, then the value.
func entryDigest(e *store.Entry) valueDigest {
	var d valueDigest
	d.mix([]byte(e.Key()))
	objectDigest(e, &d)
	return d
}

// keyDigest implements DEBUG DIGEST-VALUE for one key (zeros when absent).
func (c *Client) keyDigest(key []byte) valueDigest {
	unlock := lockKeySlot(c, key)
	defer unlock()
	var d valueDigest
	if e := c.DB().Lookup(key, lookupPeek); e != nil {
		objectDigest(e, &d)
	}
	return d
}

// datasetDigest implements DEBUG DIGEST: the xor of the SHA1s of every
// key/value pair's digest, each database introduced by its number, so the result does not
// depend on the order keys are visited; all zeros for an empty dataset.
func (s *Server) datasetDigest() valueDigest {
	var final valueDigest
	dbs, _, _ := s.ks.Stats()
	for _, st := range dbs {
		var id [4]byte
		binary.BigEndian.PutUint32(id[:], uint32(st.ID))
		final.mix(id[:])
		db := s.ks.DB(st.ID)
		for slot := 0; slot < store.NumSlots; slot++ {
			db.ScanSlot(uint16(slot), func(e *store.Entry) bool {
				d := entryDigest(e)
				final.xor(d[:])
				return true
			})
		}
	}
	return final
}

// ---------------------------------------------------------------- sizes

// entryOverhead is the per-key cost outside the key and value bytes: the
// 48-byte Entry and its slot in the hash table's bucket array.
const entryOverhead = 48 + 8

// goSizeClasses are the Go allocator's small-object size classes.
var goSizeClasses = []int64{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224,
	240, 256, 288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280,
	1408, 1536, 1792, 2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912,
	8192, 9472, 9728, 10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576,
	27264, 28672, 32768}

// allocSize is the size the Go allocator uses for an n-byte allocation.
func allocSize(n int64) int64 {
	if n <= 0 {
		return 0
	}
	for _, c := range goSizeClasses {
		if n <= c {
			return c
		}
	}
	const page = 8192
	if n > math.MaxInt64-page {
		return n
	}
	return (n + page - 1) / page * page
}

// entryMemoryUsage estimates MEMORY USAGE for an entry. Caller holds its
// slot lock.
func entryMemoryUsage(e *store.Entry, samples int64) int64 {
	n := int64(entryOverhead) + allocSize(int64(len(e.Key())))
	if e.Type() == store.TypeString {
		v := e.Bytes()
		if e.Encoding() == "raw" && cap(v) > len(v) {
			// A mutable value: its slice header and spare capacity.
			return n + allocSize(24) + allocSize(int64(cap(v)))
		}
		return n + allocSize(int64(len(v)))
	}
	if v := e.Value(); v != nil {
		n += v.MemoryUsage(int(samples))
	}
	return n
}

// serializedLength estimates the RDB size of a value (DEBUG OBJECT's
// serializedlength): Redis's integer encodings and length-prefixed strings,
// without LZF compression.
func serializedLength(e *store.Entry) int64 {
	if e.Type() != store.TypeString {
		return 0
	}
	v := e.Bytes()
	if len(v) <= 11 && e.Encoding() == "int" {
		n, _ := strconv.ParseInt(string(v), 10, 64)
		switch {
		case n >= math.MinInt8 && n <= math.MaxInt8:
			return 2
		case n >= math.MinInt16 && n <= math.MaxInt16:
			return 3
		case n >= math.MinInt32 && n <= math.MaxInt32:
			return 5
		}
	}
	l := int64(len(v))
	switch {
	case l < 1<<6:
		return 1 + l
	case l < 1<<14:
		return 2 + l
	case l <= math.MaxUint32:
		return 5 + l
	}
	return 9 + l
}

// The list parts of DEBUG.

// debugQuicklistPackedThreshold implements DEBUG QUICKLIST-PACKED-THRESHOLD
// size: list elements of at least size bytes get a node of their own (0
// restores the 1 GiB default). size is a memory amount as Redis's memtoull
// reads it ("1b", "100", "5kb", ...). DEBUG's dispatcher calls it.
func debugQuicklistPackedThreshold(c *Client, arg []byte) {
	sz, ok := config.MemToULL(string(arg))
	if !ok || !store.SetListPackedThreshold(sz) {
		c.Error("ERR argument must be a memory value bigger than 1 and smaller than 4gb")
		return
	}
	c.OK()
}

// listDebugObjectExtra is the quicklist part of DEBUG OBJECT's reply for a
// list (appended after lru_seconds_idle, as Redis does).
func listDebugObjectExtra(c *Client, l *store.List) string {
	nodes, fill, size := l.QuicklistInfo()
	avg := 0.0
	if nodes > 0 {
		avg = float64(l.Len()) / float64(nodes)
	}
	compressed := 0
	if c.Config().Int("list-compress-depth") != 0 {
		compressed = 1
	}
	return fmt.Sprintf(" ql_nodes:%d ql_avg_node:%.2f ql_listpack_max:%d ql_compressed:%d ql_uncompressed_size:%d",
		nodes, avg, fill, compressed, size)
}
