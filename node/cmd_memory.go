package node

import (
	"math"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/store"
)

// MEMORY, and the memory estimates it shares with DEBUG.

func memoryHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"memory|usage":        cmdMemoryUsage,
		"memory|stats":        cmdMemoryStats,
		"memory|doctor":       cmdMemoryDoctor,
		"memory|malloc-stats": cmdMemoryMallocStats,
		"memory|purge":        cmdMemoryPurge,
		"memory|help":         func(c *Client, args [][]byte) { c.ReplyHelp(args, memoryHelpLines) },
	}
}

var memoryHelpLines = []string{
	"DOCTOR",
	"    Return memory problems reports.",
	"MALLOC-STATS",
	"    Return internal statistics report from the memory allocator.",
	"PURGE",
	"    Attempt to purge dirty pages for reclamation by the allocator.",
	"STATS",
	"    Return information about the memory usage of the server.",
	"USAGE <key> [SAMPLES <count>]",
	"    Return memory in bytes used by <key> and its value. Nested values are",
	"    sampled up to <count> times (default: 5, 0 means sample all).",
}

// defaultUsageSamples is MEMORY USAGE's default SAMPLES.
const defaultUsageSamples = 5

// cmdMemoryUsage estimates a key's memory: its entry, the key bytes and the
// value, in the allocation size classes the Go runtime would use.
func cmdMemoryUsage(c *Client, args [][]byte) {
	samples := int64(defaultUsageSamples)
	for j := 3; j < len(args); j++ {
		if !command.ArgEquals(args[j], "samples") || j+1 >= len(args) {
			c.ErrSyntax()
			return
		}
		n, ok := command.ParseInt64(args[j+1])
		if !ok {
			c.ErrNotInteger()
			return
		}
		if n < 0 {
			c.ErrSyntax()
			return
		}
		if n == 0 {
			n = 1<<63 - 1
		}
		samples = n
		j++
	}
	e := c.DB().Lookup(args[2], lookupPeek)
	if e == nil {
		c.Null()
		return
	}
	c.Int(entryMemoryUsage(e, samples))
}

func cmdMemoryStats(c *Client, args [][]byte) {
	s := c.srv
	m := readMemoryFigures()
	aux := s.aux()
	peak := aux.notePeak(m.used)
	startup := aux.startupMemory
	dbs, _, _ := s.ks.Stats()
	var keys int64
	for _, db := range dbs {
		keys += db.Keys
	}
	overhead := min(m.used, startup+m.goroutine+uint64(keys)*entryOverhead)
	dataset := m.used - overhead
	datasetPerc := 0.0
	if m.used > startup {
		datasetPerc = float64(dataset) * 100 / float64(m.used-startup)
	}
	bytesPerKey := int64(0)
	if keys > 0 {
		bytesPerKey = int64(m.used-min(m.used, startup)) / keys
	}
	c.Map(27 + len(dbs))
	kv := func(k string, v int64) {
		c.BulkString(k)
		c.Int(v)
	}
	kd := func(k string, v float64) {
		c.BulkString(k)
		c.Double(v)
	}
	kv("peak.allocated", int64(peak))
	kv("total.allocated", int64(m.used))
	kv("startup.allocated", int64(startup))
	kv("replication.backlog", 0)
	kv("clients.slaves", 0)
	kv("clients.normal", 0)
	kv("cluster.links", 0)
	kv("aof.buffer", 0)
	kv("lua.caches", 0)
	kv("functions.caches", 0)
	for _, db := range dbs {
		c.BulkString("db." + strconv.Itoa(db.ID))
		c.Map(3)
		kv("overhead.hashtable.main", db.Keys*entryOverhead)
		kv("overhead.hashtable.expires", 0)
		kv("overhead.hashtable.slot-to-keys", 0)
	}
	kv("overhead.total", int64(overhead))
	kv("keys.count", keys)
	kv("keys.bytes-per-key", bytesPerKey)
	kv("dataset.bytes", int64(dataset))
	kd("dataset.percentage", datasetPerc)
	kd("peak.percentage", ratio(m.used, peak)*100)
	kv("allocator.allocated", int64(m.used))
	kv("allocator.active", int64(m.active))
	kv("allocator.resident", int64(m.resident))
	kd("allocator-fragmentation.ratio", ratio(m.active, m.used))
	kv("allocator-fragmentation.bytes", int64(m.active)-int64(m.used))
	kd("allocator-rss.ratio", ratio(m.resident, m.active))
	kv("allocator-rss.bytes", int64(m.resident)-int64(m.active))
	kd("rss-overhead.ratio", ratio(m.rss, m.resident))
	kv("rss-overhead.bytes", int64(m.rss)-int64(m.resident))
	kd("fragmentation", ratio(m.rss, m.used))
	kv("fragmentation.bytes", int64(m.rss)-int64(m.used))
}

func cmdMemoryDoctor(c *Client, args [][]byte) {
	m := readMemoryFigures()
	peak := c.srv.aux().notePeak(m.used)
	switch {
	case m.used < 5<<20:
		c.Verbatim("Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n", "txt")
	case float64(peak)/float64(m.used) > 1.5:
		c.Verbatim("Sam, I detected a few issues in this Redis instance memory implants:\n\n"+
			" * Peak memory: In the past this instance used more than 150% the memory that is currently using. The allocator is normally not able to release memory after a peak, so you can expect to see a big fragmentation ratio, however this is actually harmless and is only due to the memory peak, and if the Redis instance Resident Set Size (RSS) is currently bigger than expected, the memory will be used as soon as you fill the Redis instance with more data. If the memory peak was only occasional and you want to try to reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is to shutdown and restart the instance.\n\n"+
			"I'm here to keep you safe, Sam. I want to help you.\n", "txt")
	default:
		c.Verbatim("Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n", "txt")
	}
}

// cmdMemoryMallocStats reports the Go runtime's memory statistics (Redis
// prints jemalloc's).
func cmdMemoryMallocStats(c *Client, args [][]byte) {
	var b strings.Builder
	for _, name := range memorySampleNames {
		b.WriteString(name)
		b.WriteString(": ")
		b.WriteString(strconv.FormatUint(readMetricUint64(name), 10))
		b.WriteByte('\n')
	}
	c.Verbatim(b.String(), "txt")
}

// cmdMemoryPurge returns freed memory to the operating system.
func cmdMemoryPurge(c *Client, args [][]byte) {
	debug.FreeOSMemory()
	c.OK()
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
