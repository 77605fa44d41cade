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
	e := c.DB().Lookup(args[2], lookupDictFind)
	if e == nil {
		c.Null()
		return
	}
	c.Int(e.MemoryUsage(int(min(samples, math.MaxInt32))))
}

func cmdMemoryStats(c *Client, args [][]byte) {
	s := c.srv
	m := s.memoryReport()
	dbs, _, _ := s.ks.Stats()
	var keys int64
	for _, db := range dbs {
		keys += db.Keys
	}
	bytesPerKey := int64(0)
	if keys > 0 {
		bytesPerKey = (m.used - m.startup) / keys
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
	kv("peak.allocated", m.peak)
	kv("total.allocated", m.used)
	kv("startup.allocated", m.startup)
	kv("replication.backlog", m.backlog)
	kv("clients.slaves", m.clientsReplicas)
	kv("clients.normal", m.clientsNormal)
	kv("cluster.links", 0)
	kv("aof.buffer", 0)
	kv("lua.caches", 0)
	kv("functions.caches", 0)
	for _, db := range dbs {
		c.BulkString("db." + strconv.Itoa(db.ID))
		c.Map(3)
		kv("overhead.hashtable.main", db.Keys*store.DictSlotCharge)
		kv("overhead.hashtable.expires", db.Expires*store.VolatileCharge)
		kv("overhead.hashtable.slot-to-keys", 0)
	}
	kv("overhead.total", m.overhead())
	kv("keys.count", keys)
	kv("keys.bytes-per-key", bytesPerKey)
	kv("dataset.bytes", m.dataset)
	kd("dataset.percentage", m.datasetPercent())
	kd("peak.percentage", ratio(uint64(m.used), uint64(m.peak))*100)
	kv("allocator.allocated", int64(m.heap.used))
	kv("allocator.active", int64(m.heap.active))
	kv("allocator.resident", int64(m.heap.resident))
	kd("allocator-fragmentation.ratio", ratio(m.heap.active, m.heap.used))
	kv("allocator-fragmentation.bytes", int64(m.heap.active)-int64(m.heap.used))
	kd("allocator-rss.ratio", ratio(m.heap.resident, m.heap.active))
	kv("allocator-rss.bytes", int64(m.heap.resident)-int64(m.heap.active))
	kd("rss-overhead.ratio", ratio(m.heap.rss, m.heap.resident))
	kv("rss-overhead.bytes", int64(m.heap.rss)-int64(m.heap.resident))
	kd("fragmentation", ratio(m.heap.rss, uint64(m.used)))
	kv("fragmentation.bytes", int64(m.heap.rss)-m.used)
}

func cmdMemoryDoctor(c *Client, args [][]byte) {
	m := c.srv.memoryReport()
	peak, used := m.peak, m.used
	switch {
	case used < 5<<20:
		c.Verbatim("Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n", "txt")
	case float64(peak)/float64(used) > 1.5:
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
