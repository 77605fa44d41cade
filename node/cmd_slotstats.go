package node

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/shoal-db/shoal/slots"
	"github.com/shoal-db/shoal/strconvx"
)

// This file is CLUSTER SLOT-STATS as Valkey 8.0 defines it, and the per-slot
// counters behind it and behind the per-slot Prometheus series.
//
// key-count comes from the keyspace's own per-slot counts. cpu-usec,
// network-bytes-in and network-bytes-out are counted only while
// cluster-slot-stats-enabled is yes (Valkey's default is no: they cost a few
// atomic adds per command); calls per slot are always counted in cluster
// mode (one atomic add on a slot whose lock the command has just held).

// slotCounters are one slot's counters. Updated with atomic adds by the
// command goroutines; read at scrape or SLOT-STATS time.
type slotCounters struct {
	calls, cpuUsec, netIn, netOut atomic.Int64
}

// slotStats are every slot's counters (cluster mode only), in blocks of
// slotStatsBlock slots allocated when a command first counts in one: the
// 512 KB of a whole array cost that much RSS on an idle node whenever the
// Go allocator handed it reused pages, which it zeroes.
type slotStats struct {
	enabled func() bool // cluster-slot-stats-enabled, a lock-free read
	blocks  [slots.Count / slotStatsBlock]atomic.Pointer[[slotStatsBlock]slotCounters]
}

const slotStatsBlock = 256

// noCounters stands for the slots of a block never counted in: all zero,
// and never written (only counters returns it, to readers).
var noCounters slotCounters

// counters returns the counters of slot for reading.
func (st *slotStats) counters(slot int) *slotCounters {
	if b := st.blocks[slot/slotStatsBlock].Load(); b != nil {
		return &b[slot%slotStatsBlock]
	}
	return &noCounters
}

// countersFor returns the counters of slot for counting, allocating its
// block on first use.
func (st *slotStats) countersFor(slot int) *slotCounters {
	return &loadOrNew(&st.blocks[slot/slotStatsBlock])[slot%slotStatsBlock] // node/table.go
}

// newSlotStats returns the counters of a cluster node, nil otherwise.
func (s *Server) newSlotStats() *slotStats {
	if !s.cfg.Bool("cluster-enabled") {
		return nil
	}
	return &slotStats{enabled: s.cfg.BoolFunc("cluster-slot-stats-enabled")}
}

// record counts one executed command of a single-slot request: its
// duration, its request as RESP (what the client sent for it) and its reply
// bytes. Blocked commands are counted when they finish.
func (st *slotStats) record(slot uint16, args [][]byte, dur time.Duration, replyBytes int) {
	sc := st.countersFor(int(slot))
	sc.calls.Add(1)
	if !st.enabled() {
		return
	}
	sc.cpuUsec.Add(int64(dur / time.Microsecond))
	sc.netIn.Add(int64(requestSize(args)))
	sc.netOut.Add(int64(replyBytes))
}

// requestSize is the size of args encoded as a RESP multibulk request.
func requestSize(args [][]byte) int {
	n := 1 + decimalLen(len(args)) + 2
	for _, a := range args {
		n += 1 + decimalLen(len(a)) + 2 + len(a) + 2
	}
	return n
}

func decimalLen(v int) int {
	n := 1
	for v >= 10 {
		v /= 10
		n++
	}
	return n
}

// slotStatMetric is an ORDERBY metric.
type slotStatMetric int

const (
	statKeyCount slotStatMetric = iota
	statCPUUsec
	statNetIn
	statNetOut
)

// myShardSlots marks the slots served by this node's shard (its own, or
// its master's for a replica), as Valkey's SLOT-STATS reports them.
func (s *Server) myShardSlots() (owned [slots.Count]bool, count int) {
	t := s.cluster.Slots().Load()
	shard := t.MyID
	if t.MyMaster != "" {
		shard = t.MyMaster
	}
	for i := 0; i < slots.Count; i++ {
		if n := t.Owner(i); n != nil && n.ID == shard {
			owned[i] = true
			count++
		}
	}
	return owned, count
}

func (s *Server) slotStat(slot int, m slotStatMetric) int64 {
	switch m {
	case statCPUUsec:
		return s.slotStats.counters(slot).cpuUsec.Load()
	case statNetIn:
		return s.slotStats.counters(slot).netIn.Load()
	case statNetOut:
		return s.slotStats.counters(slot).netOut.Load()
	}
	return int64(s.countKeysInSlot(slot))
}

const msgSlotStatsLimit = "ERR Limit has to lie in between 1 and 16384 (maximum number of slots)."

// cmdClusterSlotStats is CLUSTER SLOT-STATS SLOTSRANGE start end |
// ORDERBY metric [LIMIT n] [ASC|DESC].
func cmdClusterSlotStats(c *Client, args [][]byte) {
	enabled := c.srv.slotStats.enabled()
	sub := strings.ToLower(string(args[2]))
	switch {
	case len(args) == 5 && sub == "slotsrange":
		start, ok1 := slotArg(c, args[3])
		if !ok1 {
			return
		}
		end, ok2 := slotArg(c, args[4])
		if !ok2 {
			return
		}
		if start > end {
			c.Error(fmt.Sprintf("ERR Start slot number %d is greater than end slot number %d", start, end))
			return
		}
		owned, _ := c.srv.myShardSlots()
		var list []int
		for i := start; i <= end; i++ {
			if owned[i] {
				list = append(list, i)
			}
		}
		c.writeSlotStats(list, enabled)
	case len(args) >= 4 && sub == "orderby":
		var metric slotStatMetric
		switch strings.ToLower(string(args[3])) {
		case "key-count":
			metric = statKeyCount
		case "cpu-usec":
			metric = statCPUUsec
		case "network-bytes-in":
			metric = statNetIn
		case "network-bytes-out":
			metric = statNetOut
		default:
			metric = -1
		}
		if metric < 0 || (metric != statKeyCount && !enabled) {
			c.Error("ERR Unrecognized sort metric for ORDERBY.")
			return
		}
		limit, desc := int64(slots.Count), true
		limits, orders := 0, 0
		for i := 4; i < len(args); i++ {
			word := strings.ToLower(string(args[i]))
			switch {
			case word == "limit" && i+1 < len(args):
				n, ok := strconvx.ParseInt(args[i+1])
				if !ok || n < 1 || n > slots.Count {
					c.Error(msgSlotStatsLimit)
					return
				}
				limit = n
				i++
				limits++
			case word == "asc":
				desc = false
				orders++
			case word == "desc":
				desc = true
				orders++
			default:
				c.Error("ERR syntax error")
				return
			}
			if limits > 1 || orders > 1 {
				c.Error("ERR Multiple filters of the same type are disallowed.")
				return
			}
		}
		owned, count := c.srv.myShardSlots()
		type entry struct {
			slot int
			v    int64
		}
		list := make([]entry, 0, count)
		for i := 0; i < slots.Count; i++ {
			if owned[i] {
				list = append(list, entry{i, c.srv.slotStat(i, metric)})
			}
		}
		slices.SortFunc(list, func(a, b entry) int {
			if a.v != b.v {
				if desc == (a.v > b.v) {
					return -1
				}
				return 1
			}
			return a.slot - b.slot
		})
		n := min(int(limit), len(list))
		out := make([]int, n)
		for i := range out {
			out[i] = list[i].slot
		}
		c.writeSlotStats(out, enabled)
	default:
		c.Error(fmt.Sprintf("ERR unknown subcommand or wrong number of arguments for '%.128s'. Try CLUSTER HELP.", args[1]))
	}
}

// slotArg parses a slot number as getSlotOrReply does.
func slotArg(c *Client, arg []byte) (int, bool) {
	n, ok := strconvx.ParseInt(arg)
	if !ok || n < 0 || n >= slots.Count {
		c.Error("ERR Invalid or out of range slot")
		return 0, false
	}
	return int(n), true
}

// writeSlotStats writes [[slot, {key-count: n, ...}], ...].
func (c *Client) writeSlotStats(list []int, enabled bool) {
	c.Array(len(list))
	st := c.srv.slotStats
	for _, slot := range list {
		c.Array(2)
		c.Int(int64(slot))
		if !enabled {
			c.Map(1)
			c.Bulk([]byte("key-count"))
			c.Int(int64(c.srv.countKeysInSlot(slot)))
			continue
		}
		sc := st.counters(slot)
		c.Map(4)
		c.Bulk([]byte("key-count"))
		c.Int(int64(c.srv.countKeysInSlot(slot)))
		c.Bulk([]byte("cpu-usec"))
		c.Int(sc.cpuUsec.Load())
		c.Bulk([]byte("network-bytes-in"))
		c.Int(sc.netIn.Load())
		c.Bulk([]byte("network-bytes-out"))
		c.Int(sc.netOut.Load())
	}
}
