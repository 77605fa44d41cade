package node

import (
	"strings"
	"testing"
	"time"
)

func TestLatencyMonitorSamples(t *testing.T) {
	threshold := int64(10)
	m := newLatencyMonitor(func() int64 { return threshold })
	now := time.Unix(1_700_000_000, 0)
	m.now = func() time.Time { return now }

	m.observe(latencyEventCommand, 9*time.Millisecond) // under the threshold
	if got := m.snapshot(""); len(got) != 0 {
		t.Fatalf("a sample under the threshold was kept: %+v", got)
	}
	m.observe(latencyEventCommand, 12*time.Millisecond)
	m.observe(latencyEventCommand, 30*time.Millisecond) // same second: the highest stays
	m.observe(latencyEventCommand, 20*time.Millisecond)
	ev := m.snapshot(latencyEventCommand)
	if len(ev) != 1 || len(ev[0].samples) != 1 || ev[0].samples[0].ms != 30 || ev[0].max != 30 {
		t.Fatalf("one second's samples: %+v", ev)
	}
	for i := 1; i <= latencySeriesLen+5; i++ { // the ring keeps the last 160 seconds
		now = now.Add(time.Second)
		m.observe(latencyEventCommand, time.Duration(10+i%7)*time.Millisecond)
	}
	ev = m.snapshot(latencyEventCommand)
	if n := len(ev[0].samples); n != latencySeriesLen {
		t.Fatalf("ring holds %d samples, want %d", n, latencySeriesLen)
	}
	if ev[0].samples[0].at >= ev[0].samples[1].at || ev[0].latest.at != now.Unix() || ev[0].max != 30 {
		t.Fatalf("order, latest or all-time max wrong: first %+v latest %+v max %d", ev[0].samples[:2], ev[0].latest, ev[0].max)
	}

	threshold = 0 // off: nothing is recorded
	m.observe(latencyEventExpireCycle, time.Second)
	if len(m.snapshot(latencyEventExpireCycle)) != 0 {
		t.Fatal("recorded with latency-monitor-threshold 0")
	}
	threshold = 1
	m.observe(latencyEventExpireCycle, time.Second)
	if n := m.reset("COMMAND"); n != 1 {
		t.Fatalf("reset COMMAND = %d, want 1 (case-insensitive)", n)
	}
	if n := m.reset(""); n != 1 {
		t.Fatalf("reset all = %d, want 1", n)
	}
}

// The graph of five spikes, as redis-server 7.0.15 drew it (LATENCY GRAPH
// command after DEBUG SLEEP 0.01, 0.03, 0.02, 0.05, 0.012 a second apart).
func TestLatencyGraphMatchesRedis(t *testing.T) {
	ev := latencyEventCopy{name: "command", max: 50}
	base := int64(1795687830)
	for i, ms := range []int64{10, 30, 20, 50, 12} {
		at := base + int64(i)
		if i > 0 {
			at++ // Redis's samples were 6, 4, 3, 2 and 1 s old
		}
		ev.samples = append(ev.samples, latencySample{at: at, ms: ms})
	}
	want := "command - high 50 ms, low 10 ms (all time high 50 ms)\n" +
		strings.Repeat("-", 80) + "\n" +
		"   # \n" +
		" _ | \n" +
		" |_| \n" +
		"_|||_\n" +
		"     \n" +
		"64321\n" +
		"sssss\n"
	if got := latencyGraph(ev, base+6); got != want {
		t.Fatalf("graph:\n%s\nwant:\n%s", got, want)
	}
}

// The histogram's keys are Redis's: the top of each power-of-two step of
// its hdr_histogram, in µs (read from redis-server 7.0.15's LATENCY
// HISTOGRAM: 1 2 4 8 16 33 ... 16908 ... 1073741).
func TestLatencyHistogramStepKeys(t *testing.T) {
	want := map[int]int64{0: 1, 1: 2, 2: 4, 3: 8, 4: 16, 5: 33, 6: 66, 14: 16908, 20: 1073741, 23: 1073741}
	for i, w := range want {
		if got := latencyStepUsec(i); got != w {
			t.Errorf("step %d = %d, want %d", i, got, w)
		}
	}
}

func TestLatencyCommands(t *testing.T) {
	s := startTestServer(t, "--enable-debug-command", "yes")
	c := dialTest(t, s)
	if got := c.do("LATENCY", "LATEST"); got != "*0\r\n" {
		t.Fatalf("LATENCY LATEST before any spike = %q", got)
	}
	// A threshold far above what a loaded machine adds to a command or a
	// cron job: only the DEBUG SLEEP is a spike (40 ms was crossed by other
	// events under CI's load).
	c.do("CONFIG", "SET", "latency-monitor-threshold", "400")
	c.do("DEBUG", "SLEEP", "0.5")
	latest := c.do("LATENCY", "LATEST")
	if !strings.HasPrefix(latest, "*1\r\n*4\r\n$7\r\ncommand\r\n:") {
		t.Fatalf("LATENCY LATEST after DEBUG SLEEP 0.5 = %q", latest)
	}
	if got := c.do("LATENCY", "HISTORY", "command"); !strings.HasPrefix(got, "*1\r\n*2\r\n:") {
		t.Fatalf("LATENCY HISTORY command = %q", got)
	}
	if got := c.do("LATENCY", "HISTORY", "nosuch"); got != "*0\r\n" {
		t.Fatalf("LATENCY HISTORY nosuch = %q", got)
	}
	if got := bulkBody(t, c.do("LATENCY", "GRAPH", "command")); !strings.HasPrefix(got, "command - high ") {
		t.Fatalf("LATENCY GRAPH command = %q", got)
	}
	doctor := bulkBody(t, c.do("LATENCY", "DOCTOR"))
	if !strings.Contains(doctor, "1. command: 1 latency spikes") {
		t.Fatalf("LATENCY DOCTOR = %q", doctor)
	}
	if got := c.do("LATENCY", "RESET", "nosuch"); got != ":0\r\n" {
		t.Fatalf("LATENCY RESET nosuch = %q", got)
	}
	if got := c.do("LATENCY", "RESET"); got != ":1\r\n" {
		t.Fatalf("LATENCY RESET = %q", got)
	}
	if got := c.do("LATENCY", "GRAPH", "command"); got != "-ERR No samples available for event 'command'\r\n" {
		t.Fatalf("LATENCY GRAPH after RESET = %q", got)
	}
}

func TestLatencyHistogramReply(t *testing.T) {
	s := startTestServer(t)
	c := dialTest(t, s)
	c.do("CONFIG", "RESETSTAT")
	c.do("SET", "a", "b")
	c.do("SET", "c", "d")
	c.do("CLIENT", "ID")
	got := c.do("LATENCY", "HISTOGRAM", "set", "nosuch", "client")
	for _, part := range []string{"*4\r\n$3\r\nset\r\n*4\r\n$5\r\ncalls\r\n:2\r\n$14\r\nhistogram_usec\r\n*", "$9\r\nclient|id\r\n*4\r\n$5\r\ncalls\r\n:1\r\n"} {
		if !strings.Contains(got, part) {
			t.Fatalf("LATENCY HISTOGRAM set nosuch client = %q, missing %q", got, part)
		}
	}
	all := c.do("LATENCY", "HISTOGRAM")
	for _, name := range []string{"$3\r\nset\r\n", "$16\r\nconfig|resetstat\r\n", "$9\r\nclient|id\r\n"} {
		if !strings.Contains(all, name) {
			t.Fatalf("LATENCY HISTOGRAM = %q, missing %q", all, name)
		}
	}
	c.do("CONFIG", "SET", "latency-tracking", "no")
	if got := c.do("LATENCY", "HISTOGRAM"); got != "*0\r\n" {
		t.Fatalf("LATENCY HISTOGRAM with latency-tracking no = %q", got)
	}
}

// LATENCY DOCTOR's advice follows the recorded classes and the settings,
// as Redis's report: aof-fsync-always asks to relax appendfsync always.
func TestLatencyDoctorAdvice(t *testing.T) {
	s := startTestServer(t, "--appendonly", "yes", "--appendfsync", "always", "--latency-monitor-threshold", "1")
	c := dialTest(t, s)
	s.latency.add(latencyEventAOFFsyncAlways, 12)
	s.latency.add(latencyEventExpireCycle, 30)
	doctor := bulkBody(t, c.do("LATENCY", "DOCTOR"))
	for _, want := range []string{
		"Dave, I have observed latency spikes in this Redis instance.",
		"1. aof-fsync-always: 1 latency spikes (average 12ms, mean deviation 0ms, period 1.00 sec). Worst all time event 12ms.",
		"2. expire-cycle: 1 latency spikes",
		"- Your fsync policy is set to 'always'.",
		"- In order to make the Redis keys expiring process more incremental",
		"- Deleting, expiring or evicting",
	} {
		if !strings.Contains(doctor, want) {
			t.Fatalf("LATENCY DOCTOR lacks %q:\n%s", want, doctor)
		}
	}
}
