package node

import (
	"bufio"
	"bytes"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// The latency monitor (Redis's latency.c): with latency-monitor-threshold
// > 0, every event class that takes at least that many milliseconds keeps
// its spikes, one sample per second (the highest), the last
// latencySeriesLen of them, and its all-time high. The classes shoal
// records are the ones it does the equivalent work for:
//
//	command, fast-command   a command's execution (the "fast" flag decides)
//	expire-cycle            one run of the cron's active expiry
//	eviction-cycle          one call that evicts keys over maxmemory
//	eviction-del            deleting one evicted key
//	aof-write               a client waiting for the AOF to hold its writes
//	aof-fsync-always        the same with appendfsync always (write + fsync)
//
// Redis's fork, rdb-* and the other aof-* classes have no counterpart that
// blocks shoal's clients (no fork; saves and rewrites run beside them).

// latencySeriesLen is Redis's LATENCY_TS_LEN.
const latencySeriesLen = 160

// Event classes shoal records.
const (
	latencyEventCommand        = "command"
	latencyEventFastCommand    = "fast-command"
	latencyEventExpireCycle    = "expire-cycle"
	latencyEventEvictCycle     = "eviction-cycle"
	latencyEventEvictDel       = "eviction-del"
	latencyEventAOFWrite       = "aof-write"
	latencyEventAOFFsyncAlways = "aof-fsync-always"
)

type latencySample struct {
	at int64 // unix seconds; 0 = an unused slot
	ms int64
}

// latencySeries is one event class's ring of samples.
type latencySeries struct {
	samples [latencySeriesLen]latencySample
	next    int   // where the next sample goes
	max     int64 // all-time high, ms
}

// latest is the most recent sample.
func (ts *latencySeries) latest() latencySample {
	return ts.samples[(ts.next+latencySeriesLen-1)%latencySeriesLen]
}

// inOrder returns the used samples, oldest first.
func (ts *latencySeries) inOrder() []latencySample {
	out := make([]latencySample, 0, latencySeriesLen)
	for i := range latencySeriesLen {
		if s := ts.samples[(ts.next+i)%latencySeriesLen]; s.at != 0 {
			out = append(out, s)
		}
	}
	return out
}

// latencyMonitor holds the event classes' series. Samples are rare (only
// spikes past the threshold), so one mutex serves every goroutine.
type latencyMonitor struct {
	threshold func() int64 // latency-monitor-threshold, ms (0 = off)
	now       func() time.Time

	mu     sync.Mutex
	events map[string]*latencySeries
}

func newLatencyMonitor(threshold func() int64) *latencyMonitor {
	return &latencyMonitor{threshold: threshold, now: time.Now, events: map[string]*latencySeries{}}
}

// enabled reports whether spikes are being recorded: callers skip their
// clock reads when not.
func (m *latencyMonitor) enabled() bool { return m.threshold() > 0 }

// observe records d for event if it reaches the threshold
// (latencyAddSampleIfNeeded).
func (m *latencyMonitor) observe(event string, d time.Duration) {
	t := m.threshold()
	if ms := d.Milliseconds(); t > 0 && ms >= t {
		m.add(event, ms)
	}
}

// add records one spike: a second keeps only its highest sample.
func (m *latencyMonitor) add(event string, ms int64) {
	now := m.now().Unix()
	m.mu.Lock()
	defer m.mu.Unlock()
	ts := m.events[event]
	if ts == nil {
		ts = &latencySeries{}
		m.events[event] = ts
	}
	ts.max = max(ts.max, ms)
	if prev := &ts.samples[(ts.next+latencySeriesLen-1)%latencySeriesLen]; prev.at == now {
		prev.ms = max(prev.ms, ms)
		return
	}
	ts.samples[ts.next] = latencySample{at: now, ms: ms}
	ts.next = (ts.next + 1) % latencySeriesLen
}

// reset drops the named class (case-insensitively), or every class when
// event is "", and returns how many it dropped.
func (m *latencyMonitor) reset(event string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for name := range m.events {
		if event == "" || strings.EqualFold(name, event) {
			delete(m.events, name)
			n++
		}
	}
	return n
}

// latencyEventCopy is a snapshot of one class, taken under the lock.
type latencyEventCopy struct {
	name    string
	samples []latencySample // oldest first
	latest  latencySample
	max     int64
}

// snapshot copies the named class (nil if it has no data), or all of them
// sorted by name when name is "".
func (m *latencyMonitor) snapshot(name string) []latencyEventCopy {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []latencyEventCopy
	for ev, ts := range m.events {
		if name != "" && ev != name {
			continue
		}
		out = append(out, latencyEventCopy{name: ev, samples: ts.inOrder(), latest: ts.latest(), max: ts.max})
	}
	slices.SortFunc(out, func(a, b latencyEventCopy) int { return strings.Compare(a.name, b.name) })
	return out
}

// latencyStats is analyzeLatencyForEvent's summary of one class.
type latencyStats struct {
	samples        int
	avg, mad       int64
	min, max       int64
	periodSeconds  int64 // from the oldest sample to now, at least 1
	allTimeHighest int64
}

func analyzeLatency(ev latencyEventCopy, now int64) latencyStats {
	st := latencyStats{allTimeHighest: ev.max}
	if len(ev.samples) == 0 {
		return st
	}
	var sum int64
	oldest := ev.samples[0].at
	st.min, st.max = ev.samples[0].ms, ev.samples[0].ms
	for _, s := range ev.samples {
		st.min = min(st.min, s.ms)
		st.max = max(st.max, s.ms)
		oldest = min(oldest, s.at)
		sum += s.ms
	}
	st.samples = len(ev.samples)
	st.avg = sum / int64(st.samples)
	st.periodSeconds = max(now-oldest, 1)
	var dev int64
	for _, s := range ev.samples {
		d := st.avg - s.ms
		if d < 0 {
			d = -d
		}
		dev += d
	}
	st.mad = dev / int64(st.samples)
	return st
}

// anonHugePagesBytes sums the process's AnonHugePages (transparent huge
// pages), as LATENCY DOCTOR's THP advice checks; 0 where unknown.
func anonHugePagesBytes() int64 {
	data, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "AnonHugePages:"); ok {
			fields := strings.Fields(rest)
			if len(fields) > 0 {
				return atoi([]byte(fields[0])) * 1024
			}
		}
	}
	return 0
}
