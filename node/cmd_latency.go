package node

import (
	"fmt"
	"strings"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/config"
)

// LATENCY: the latency monitor's event classes (node/latency.go) and the
// per-command latency histograms (node/metrics_hist.go).

func latencyHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"latency|latest":    cmdLatencyLatest,
		"latency|history":   cmdLatencyHistory,
		"latency|reset":     cmdLatencyReset,
		"latency|graph":     cmdLatencyGraph,
		"latency|doctor":    cmdLatencyDoctor,
		"latency|histogram": cmdLatencyHistogram,
		"latency|help":      func(c *Client, args [][]byte) { c.ReplyHelp(args, latencyHelpLines) },
	}
}

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

// cmdLatencyLatest: [event, time of the latest spike, its ms, all-time max]
// per class.
func cmdLatencyLatest(c *Client, args [][]byte) {
	evs := c.srv.latency.snapshot("")
	c.Array(len(evs))
	for _, ev := range evs {
		c.Array(4)
		c.BulkString(ev.name)
		c.Int(ev.latest.at)
		c.Int(ev.latest.ms)
		c.Int(ev.max)
	}
}

// cmdLatencyHistory: the class's [time, ms] samples, oldest first; an
// unknown class has none.
func cmdLatencyHistory(c *Client, args [][]byte) {
	evs := c.srv.latency.snapshot(string(args[2]))
	if len(evs) == 0 {
		c.Array(0)
		return
	}
	c.Array(len(evs[0].samples))
	for _, s := range evs[0].samples {
		c.Array(2)
		c.Int(s.at)
		c.Int(s.ms)
	}
}

func cmdLatencyReset(c *Client, args [][]byte) {
	if len(args) == 2 {
		c.Int(int64(c.srv.latency.reset("")))
		return
	}
	n := 0
	for _, ev := range args[2:] {
		n += c.srv.latency.reset(string(ev))
	}
	c.Int(int64(n))
}

// latencyGraphColumns and latencyGraphRows are the graph's size (Redis's
// LATENCY_GRAPH_COLS and the sparkline's 4 rows).
const (
	latencyGraphColumns = 80
	latencyGraphRows    = 4
)

func cmdLatencyGraph(c *Client, args [][]byte) {
	evs := c.srv.latency.snapshot(string(args[2]))
	if len(evs) == 0 {
		c.Error("ERR No samples available for event '" + string(args[2]) + "'")
		return
	}
	c.Verbatim(latencyGraph(evs[0], c.srv.latency.now().Unix()), "txt")
}

// latencyGraph renders a class as Redis does: a title line, a rule, and
// a filled sparkline of its samples labelled with how long ago each was.
func latencyGraph(ev latencyEventCopy, now int64) string {
	var lo, hi int64
	points := make([]sparkPoint, 0, len(ev.samples))
	for i, s := range ev.samples {
		if i == 0 {
			lo, hi = s.ms, s.ms
		}
		lo, hi = min(lo, s.ms), max(hi, s.ms)
		points = append(points, sparkPoint{value: float64(s.ms), label: agoLabel(now - s.at)})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s - high %d ms, low %d ms (all time high %d ms)\n", ev.name, hi, lo, ev.max)
	b.WriteString(strings.Repeat("-", latencyGraphColumns))
	b.WriteByte('\n')
	renderSparkline(&b, points, latencyGraphColumns, latencyGraphRows)
	return b.String()
}

// agoLabel is a sample's age in the largest whole unit: 5s, 3m, 2h, 1d.
func agoLabel(elapsed int64) string {
	switch {
	case elapsed < 60:
		return itoa(elapsed) + "s"
	case elapsed < 3600:
		return itoa(elapsed/60) + "m"
	case elapsed < 86400:
		return itoa(elapsed/3600) + "h"
	}
	return itoa(elapsed/86400) + "d"
}

type sparkPoint struct {
	value float64
	label string
}

// renderSparkline draws points as Redis's filled sparkline: rows lines of
// one character per point ('_', 'o', '#' as the value climbs through a
// row, '|' below the top), then, if any point has a label, one blank line
// and the labels written vertically. More points than columns wrap into
// further blocks separated by a blank line.
func renderSparkline(b *strings.Builder, points []sparkPoint, columns, rows int) {
	const fill = "_o#"
	if len(points) == 0 {
		return
	}
	lo, hi := points[0].value, points[0].value
	labelled := false
	for _, p := range points {
		lo, hi = min(lo, p.value), max(hi, p.value)
		labelled = labelled || p.label != ""
	}
	span := hi - lo
	if span == 0 {
		span = 1
	}
	steps := len(fill) * rows
	for start := 0; start < len(points); start += columns {
		if start != 0 {
			b.WriteByte('\n')
		}
		block := points[start:min(start+columns, len(points))]
		line := make([]byte, len(block))
		for row := 0; row < rows; row++ {
			for j, p := range block {
				// Redis truncates value×steps before dividing by the span.
				step := int(float64(int((p.value-lo)*float64(steps))) / span)
				step = max(0, min(step, steps-1))
				idx := step - (rows-row-1)*len(fill)
				switch {
				case idx >= 0 && idx < len(fill):
					line[j] = fill[idx]
				case idx >= len(fill):
					line[j] = '|'
				default:
					line[j] = ' '
				}
			}
			b.Write(line)
			b.WriteByte('\n')
		}
		if !labelled {
			continue
		}
		b.WriteString(strings.Repeat(" ", len(block)))
		b.WriteByte('\n')
		for k := 0; ; k++ {
			any := false
			for j, p := range block {
				line[j] = ' '
				if k < len(p.label) {
					line[j] = p.label[k]
					any = true
				}
			}
			if !any {
				break
			}
			b.Write(line)
			b.WriteByte('\n')
		}
	}
}

func cmdLatencyDoctor(c *Client, args [][]byte) {
	c.Verbatim(c.srv.latencyReport(), "txt")
}

// The advice LATENCY DOCTOR gives, in Redis's order, for the classes shoal
// records.
const (
	adviceSlowlogEnable = iota
	adviceSlowlogTuning
	adviceSlowlogInspect
	adviceScheduler
	adviceHz
	adviceLargeObjects
	adviceMassEviction
	adviceRelaxFsync
	adviceDisableTHP
	adviceCount
)

// latencyReport is LATENCY DOCTOR's text (Redis's createLatencyReport).
func (s *Server) latencyReport() string {
	m := s.latency
	evs := m.snapshot("")
	if len(evs) == 0 && m.threshold() == 0 {
		return "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n"
	}
	var advise [adviceCount]bool
	advices := 0
	give := func(a ...int) {
		for _, x := range a {
			advise[x] = true
			advices++
		}
	}
	var b strings.Builder
	now := m.now().Unix()
	for i, ev := range evs {
		if i == 0 {
			b.WriteString("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n")
		}
		st := analyzeLatency(ev, now)
		fmt.Fprintf(&b, "%d. %s: %d latency spikes (average %dms, mean deviation %dms, period %.2f sec). Worst all time event %dms.",
			i+1, ev.name, st.samples, st.avg, st.mad, float64(st.periodSeconds)/float64(st.samples), ev.max)
		switch ev.name {
		case latencyEventCommand:
			if slower := s.cfg.Int("slowlog-log-slower-than"); slower < 0 {
				give(adviceSlowlogEnable)
			} else if slower/1000 > m.threshold() {
				give(adviceSlowlogTuning)
			}
			give(adviceSlowlogInspect, adviceLargeObjects)
		case latencyEventFastCommand:
			give(adviceScheduler)
		case latencyEventExpireCycle:
			give(adviceHz, adviceLargeObjects)
		case latencyEventEvictDel:
			give(adviceLargeObjects)
		case latencyEventEvictCycle:
			give(adviceMassEviction)
		case latencyEventAOFFsyncAlways:
			give(adviceRelaxFsync)
		}
		b.WriteByte('\n')
	}
	if anonHugePagesBytes() > 0 {
		give(adviceDisableTHP)
	}
	switch {
	case len(evs) == 0 && advices == 0:
		b.WriteString("Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n")
	case advices == 0:
		b.WriteString("\nWhile there are latency events logged, I'm not able to suggest any easy fix. Please use the Redis community to get some help, providing this report in your help request.\n")
	default:
		b.WriteString("\nI have a few advices for you:\n\n")
		threshold := m.threshold()
		if advise[adviceSlowlogEnable] {
			fmt.Fprintf(&b, "- There are latency issues with potentially slow commands you are using. Try to enable the Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than %d'. If the Slow log is disabled Redis is not able to log slow commands execution for you.\n", threshold*1000)
		}
		if advise[adviceSlowlogTuning] {
			fmt.Fprintf(&b, "- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than %d'.\n", threshold*1000)
		}
		if advise[adviceSlowlogInspect] {
			b.WriteString("- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n")
		}
		if advise[adviceScheduler] {
			b.WriteString("- The system is slow to execute Redis code paths not containing system calls. This usually means the system does not provide Redis CPU time to run for long periods. You should try to:\n" +
				"  1) Lower the system load.\n" +
				"  2) Use a computer / VM just for Redis if you are running other software in the same system.\n" +
				"  3) Check if you have a \"noisy neighbour\" problem.\n" +
				"  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in your system.\n" +
				"  5) Check if the problem is allocator-related by recompiling Redis with MALLOC=libc, if you are using Jemalloc. However this may create fragmentation problems.\n")
		}
		if advise[adviceHz] && s.cfg.Hz() < 100 {
			b.WriteString("- In order to make the Redis keys expiring process more incremental, try to set the 'hz' configuration parameter to 100 using 'CONFIG SET hz 100'.\n")
		}
		if advise[adviceLargeObjects] {
			b.WriteString("- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n")
		}
		if advise[adviceMassEviction] {
			b.WriteString("- Sudden changes to the 'maxmemory' setting via 'CONFIG SET', or allocation of large objects via sets or sorted sets intersections, STORE option of SORT, Redis Cluster large keys migrations (RESTORE command), may create sudden memory pressure forcing the server to block trying to evict keys. \n")
		}
		if advise[adviceRelaxFsync] && s.aof.fsync.Load() == config.AppendFsyncAlways {
			b.WriteString("- Your fsync policy is set to 'always'. It is very hard to get good performances with such a setup, if possible try to relax the fsync policy to 'onesec'.\n")
		}
		if advise[adviceDisableTHP] {
			b.WriteString("- I detected a non zero amount of anonymous huge pages used by your process. This creates very serious latency events in different conditions, especially when Redis is persisting on disk. To disable THP support use the command 'echo never > /sys/kernel/mm/transparent_hugepage/enabled', make sure to also add it into /etc/rc.local so that the command will be executed again after a reboot. Note that even if you have already disabled THP, you still need to restart the Redis process to get rid of the huge pages already created.\n")
		}
	}
	return b.String()
}

// cmdLatencyHistogram: per command (or the named commands and their
// subcommands) with calls since CONFIG RESETSTAT, {calls, histogram_usec}
// where histogram_usec maps bucket bounds in µs to cumulative counts
// (Redis 7.0's fillCommandCDF over its hdr_histogram). Nothing is recorded
// with latency-tracking no.
func cmdLatencyHistogram(c *Client, args [][]byte) {
	s := c.srv
	var specs []*command.Spec
	tracking := s.cfg.Bool("latency-tracking")
	add := func(spec *command.Spec) {
		if _, total := s.table.latencyHistogram(spec); total > 0 && tracking {
			specs = append(specs, spec)
		}
		for _, sub := range sortedSubcommands(spec) {
			if _, total := s.table.latencyHistogram(sub); total > 0 && tracking {
				specs = append(specs, sub)
			}
		}
	}
	if len(args) == 2 {
		for _, spec := range s.table.all {
			add(spec)
		}
	} else {
		for _, name := range args[2:] {
			spec := s.table.lookupName(string(name))
			if spec == nil {
				continue
			}
			if spec.Parent != nil {
				if _, total := s.table.latencyHistogram(spec); total > 0 && tracking {
					specs = append(specs, spec)
				}
				continue
			}
			add(spec)
		}
	}
	c.Map(len(specs))
	for _, spec := range specs {
		c.BulkString(spec.FullName())
		cumulative, total := s.table.latencyHistogram(spec)
		c.Map(2)
		c.BulkString("calls")
		c.Int(int64(total))
		c.BulkString("histogram_usec")
		writeLatencyCDF(c, cumulative, total)
	}
}

// writeLatencyCDF writes the cumulative distribution as Redis reports its
// hdr_histogram (2 significant digits, 1 ns .. 1 s, walked in power-of-two
// steps from 1024 ns): a step's key is the highest value its bucket holds,
// in µs (1, 2, 4, 8, 16, 33, 66, 131 ...), and a step appears only if it
// added calls. Bucket i of shoal's histogram (calls under 2^i µs) falls
// within step i; calls of a second or more are Redis's last step, 1073741.
func writeLatencyCDF(c *Client, cumulative [latencyBucketCount - 1]uint64, total uint64) {
	type point struct{ usec, count int64 }
	var points []point
	var prev uint64
	for i := 0; ; i++ {
		n := total
		if i < latencyHistLastStep {
			n = cumulative[i]
		}
		if n > prev {
			points = append(points, point{latencyStepUsec(i), int64(n)})
			prev = n
		}
		if n == total {
			break
		}
	}
	c.Map(len(points))
	for _, p := range points {
		c.Int(p.usec)
		c.Int(p.count)
	}
}

// latencyHistLastStep is the first step past Redis's histogram's 1 s
// ceiling: 1024 ns × 2^20 exceeds it.
const latencyHistLastStep = 20

// latencyStepUsec is step i's key: the highest value of the hdr bucket
// holding 1024·2^i ns (its width is 2^(i+3) ns at 2 significant digits),
// in whole µs; the last step is the histogram's top bucket's.
func latencyStepUsec(i int) int64 {
	if i >= latencyHistLastStep {
		return (1<<30 - 1) / 1000
	}
	return (1032<<i - 1) / 1000
}
