package node

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"unsafe"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/slots"
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
	"CONFIG-REWRITE-FORCE-ALL",
	"    Like CONFIG REWRITE but writes all configuration options, including",
	"    keywords not listed in original configuration file or default values.",
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
	"LOADAOF",
	"    Flush the AOF buffers on disk and reload the AOF in memory.",
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
	"REPLICATE <string>",
	"    Replicates the provided string to replicas, allowing data divergence.",
	"SDSLEN <key>",
	"    Show low level SDS string info representing `key` and value.",
	"SET-ACTIVE-EXPIRE <0|1>",
	"    Setting it to 0 disables expiring keys in background when they are not",
	"    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
	"    default.",
	"PAUSE-CRON <0|1>",
	"    Stop periodic cron job processing.",
	"REPLYBUFFER RESIZING <0|1>",
	"    Enable or disable the reply buffer resize cron job",
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
	case sub == "config-rewrite-force-all" && argc == 2:
		if err := s.cfg.RewriteAll(s.cfg.ConfigFile()); err != nil {
			c.Error("ERR CONFIG-REWRITE-FORCE-ALL failed: " + err.Error())
			return
		}
		c.OK()
	case sub == "pause-cron" && argc == 3:
		s.cronPaused.Store(atoi(args[2]) != 0)
		c.OK()
	case sub == "replybuffer" && argc == 4 && command.EqualFoldASCII(args[2], "resizing"):
		// Redis's cron shrinks reply buffers after their peak; shoal
		// drops a burst's buffer (above outputKeepCap) once it is
		// written. 0 keeps it, so a client's tot-mem does not move.
		s.replyBufKeep.Store(atoi(args[3]) == 0)
		c.OK()
	case sub == "replybuffer" && argc == 4 && command.EqualFoldASCII(args[2], "peak-reset-time"):
		c.Error("ERR DEBUG REPLYBUFFER PEAK-RESET-TIME is not supported: shoal's reply buffers keep no peak to reset")
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
	case sub == "replicate" && argc >= 3:
		// The command goes to the replicas only, in the stream's current
		// database (replicationFeedSlaves); a replica feeds nothing.
		if !s.repl.proxy.Load() {
			s.repl.m.FeedArgs(args[2:])
		}
		c.OK()
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
	case sub == "aof-flush-sleep" && argc == 3:
		debugAOFFlushSleep(c, args[2]) // node/aof_load.go
	case sub == "loadaof" && argc == 2:
		debugLoadAOF(c) // node/aof_load.go
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

// lockKeySlot locks the slot of a key for a command that has no declared
// keys (DEBUG) and returns the unlock function.
func lockKeySlot(c *Client, key []byte) func() {
	db := c.DB()
	slot := slots.KeySlot(key)
	db.Lock(slot)
	return func() { db.Unlock(slot) }
}
