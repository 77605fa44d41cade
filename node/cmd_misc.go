package node

import (
	"errors"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/slots"
)

// The smaller server commands: SLOWLOG, LATENCY, MEMORY, LASTSAVE, ROLE,
// TIME, SHUTDOWN, SAVE/BGSAVE, LOLWUT, FAILOVER.

func miscHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"slowlog|get":   cmdSlowlogGet,
		"slowlog|len":   cmdSlowlogLen,
		"slowlog|reset": cmdSlowlogReset,
		"slowlog|help":  func(c *Client, args [][]byte) { c.ReplyHelp(args, slowlogHelpLines) },

		"latency|latest":    func(c *Client, args [][]byte) { c.Array(0) },
		"latency|history":   func(c *Client, args [][]byte) { c.Array(0) },
		"latency|reset":     func(c *Client, args [][]byte) { c.Int(0) },
		"latency|graph":     cmdLatencyGraph,
		"latency|doctor":    cmdLatencyDoctor,
		"latency|histogram": func(c *Client, args [][]byte) { c.Map(0) },
		"latency|help":      func(c *Client, args [][]byte) { c.ReplyHelp(args, latencyHelpLines) },

		"memory|usage":        cmdMemoryUsage,
		"memory|stats":        cmdMemoryStats,
		"memory|doctor":       cmdMemoryDoctor,
		"memory|malloc-stats": cmdMemoryMallocStats,
		"memory|purge":        cmdMemoryPurge,
		"memory|help":         func(c *Client, args [][]byte) { c.ReplyHelp(args, memoryHelpLines) },

		"lastsave": cmdLastsave, // node/cmd_dump_save.go
		"time":     cmdTime,
		"shutdown": cmdShutdown,
		"save":     cmdSave,   // node/cmd_dump_save.go
		"bgsave":   cmdBgsave, // node/cmd_dump_save.go
		"lolwut":   cmdLolwut,
		"failover": cmdFailover,
	}
}

// ---------------------------------------------------------------- SLOWLOG

var slowlogHelpLines = []string{
	"GET [<count>]",
	"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
	"    Entries are made of:",
	"    id, timestamp, time in microseconds, arguments array, client IP and port,",
	"    client name",
	"LEN",
	"    Return the length of the slowlog.",
	"RESET",
	"    Reset the slowlog.",
}

func cmdSlowlogGet(c *Client, args [][]byte) {
	if len(args) > 3 {
		c.ErrSubcommandSyntax(args)
		return
	}
	count := int64(10)
	if len(args) == 3 {
		n, ok := command.ParseInt64(args[2])
		if !ok || n < -1 {
			c.Error("ERR count should be greater than or equal to -1")
			return
		}
		count = n
	}
	l := &c.srv.slowlog
	l.mu.Lock()
	entries := l.entries
	if count >= 0 && int64(len(entries)) > count {
		entries = entries[:count]
	}
	entries = append([]slowlogEntry(nil), entries...)
	l.mu.Unlock()
	c.Array(len(entries))
	for _, e := range entries {
		c.Array(6)
		c.Int(e.id)
		c.Int(e.at.Unix())
		c.Int(int64(e.duration / time.Microsecond))
		c.StringArray(e.args)
		c.BulkString(e.addr)
		c.BulkString(e.name)
	}
}

func cmdSlowlogLen(c *Client, args [][]byte) {
	l := &c.srv.slowlog
	l.mu.Lock()
	n := len(l.entries)
	l.mu.Unlock()
	c.Int(int64(n))
}

func cmdSlowlogReset(c *Client, args [][]byte) {
	l := &c.srv.slowlog
	l.mu.Lock()
	l.entries = nil
	l.mu.Unlock()
	c.OK()
}

// ---------------------------------------------------------------- LATENCY

// shoal does not record latency events yet: every event series is empty,
// which is what Redis reports before its first spike.

var latencyHelpLines = []string{
	"DOCTOR",
	"    Return a human readable latency analysis report.",
	"GRAPH <event>",
	"    Return an ASCII latency graph for the <event> class.",
	"HISTORY <event>",
	"    Return time-latency samples for the <event> class.",
	"LATEST",
	"    Return the latest latency samples for all events.",
	"RESET [<event> ...]",
	"    Reset latency data of one or more <event> classes.",
	"    (default: reset all data for all event classes)",
	"HISTOGRAM [COMMAND ...]",
	"    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
	"    If no commands are specified then all histograms are replied.",
}

func cmdLatencyGraph(c *Client, args [][]byte) {
	c.Error("ERR No samples available for event '" + string(args[2]) + "'")
}

func cmdLatencyDoctor(c *Client, args [][]byte) {
	if c.srv.cfg.Int("latency-monitor-threshold") == 0 {
		c.Verbatim("I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n", "txt")
		return
	}
	c.Verbatim("Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n", "txt")
}

// ---------------------------------------------------------------- MEMORY

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

// ---------------------------------------------------------------- ROLE, TIME

func cmdTime(c *Client, args [][]byte) {
	now := time.Now()
	c.Array(2)
	c.BulkInt(now.Unix())
	c.BulkInt(int64(now.Nanosecond() / 1000))
}

// ---------------------------------------------------------------- SHUTDOWN

// cmdShutdown is SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]
// (shutdownCommand): the client waits while the shutdown runs
// (node/persistence.go); it gets no reply when the server exits — its
// connection closes, as when Redis exits — and Redis's error when the
// shutdown fails or is aborted.
func cmdShutdown(c *Client, args [][]byte) {
	flags := 0
	abort := false
	for _, a := range args[1:] {
		switch {
		case command.ArgEquals(a, "nosave"):
			flags |= config.ShutdownNoSave
		case command.ArgEquals(a, "save"):
			flags |= config.ShutdownSave
		case command.ArgEquals(a, "now"):
			flags |= config.ShutdownNow
		case command.ArgEquals(a, "force"):
			flags |= config.ShutdownForce
		case command.ArgEquals(a, "abort"):
			abort = true
		default:
			c.ErrSyntax()
			return
		}
	}
	if (abort && flags != 0) || (flags&config.ShutdownSave != 0 && flags&config.ShutdownNoSave != 0) {
		c.ErrSyntax()
		return
	}
	s := c.srv
	if abort {
		if s.abortShutdown() {
			c.OK()
		} else {
			c.Error("ERR No shutdown in progress.")
		}
		return
	}
	if flags&config.ShutdownNoSave == 0 {
		// A script past busy-reply-threshold: only SHUTDOWN NOSAVE stops
		// the server (the script's changes are not saved).
		if busy, eval := s.tx.gate.busyState(c); busy {
			msg := "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
			if eval {
				msg = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
			}
			c.Error(msg)
			return
		}
	}
	err := s.prepareShutdown(flags, c)
	if errors.Is(err, errShutdownRunning) {
		err = s.waitShutdown() // the client waits for the shutdown under way
	}
	if err != nil {
		c.Error(errShutdownFailed.Error())
		return
	}
	c.CloseAfterReply()
	s.shutdownFromCommand()
}

// shutdownFromCommand stops the server on behalf of SHUTDOWN: the binary's
// hook (which exits) when there is one, otherwise Shutdown. It runs in its
// own goroutine because Shutdown waits for the connections, including the
// one running SHUTDOWN.
func (s *Server) shutdownFromCommand() {
	go func() {
		if s.shutdownHook != nil {
			s.shutdownHook()
			return
		}
		s.Shutdown()
	}()
}

// ---------------------------------------------------------------- the rest

// LOLWUT [VERSION v]
func cmdLolwut(c *Client, args [][]byte) {
	version := Version
	if len(args) >= 3 && command.ArgEquals(args[1], "version") {
		v, ok := command.ParseInt64(args[2])
		if !ok || v < -1<<63 || v > 1<<63-1 {
			c.ErrNotInteger()
			return
		}
		version = strconv.FormatUint(uint64(uint32(v)), 10) + ".0.0"
	}
	c.Verbatim("Redis ver. "+version+"\nshoal ver. "+ShoalVersion+"\n", "txt")
}

func cmdFailover(c *Client, args [][]byte) {
	if c.srv.cfg.Bool("cluster-enabled") {
		c.Error("ERR FAILOVER not allowed in cluster mode. Use CLUSTER FAILOVER command instead.")
		return
	}
	if len(args) == 2 && command.ArgEquals(args[1], "abort") {
		c.Error("ERR No failover in progress.")
		return
	}
	var timeout, host, force bool
	for j := 1; j < len(args); j++ {
		switch {
		case command.ArgEquals(args[j], "timeout") && j+1 < len(args) && !timeout:
			ms, ok := command.ParseInt64(args[j+1])
			if !ok {
				c.ErrNotInteger()
				return
			}
			if ms <= 0 {
				c.Error("ERR FAILOVER timeout must be greater than 0")
				return
			}
			timeout = true
			j++
		case command.ArgEquals(args[j], "to") && j+2 < len(args) && !host:
			if _, ok := command.ParseInt64(args[j+2]); !ok {
				c.ErrNotInteger()
				return
			}
			host = true
			j += 2
		case command.ArgEquals(args[j], "force") && !force:
			force = true
		default:
			c.ErrSyntax()
			return
		}
	}
	c.Error("ERR FAILOVER requires connected replicas.")
}

// lockKeySlot locks the slot of a key for a command that has no declared
// keys (DEBUG) and returns the unlock function.
func lockKeySlot(c *Client, key []byte) func() {
	db := c.DB()
	slot := slots.KeySlot(key)
	db.Lock(slot)
	return func() { db.Unlock(slot) }
}
