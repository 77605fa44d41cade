package node

import (
	"testing"
	"time"
)

// An idle server with a compact heap samples the allocator once a second,
// not every 50 ms; reads served (scaled to the time since the last sample)
// bring the 50 ms sampling back.
func TestHeapTrimmerBacksOffWhenIdle(t *testing.T) {
	// Samples of its own, not the process's allocation counter: other
	// tests' servers still winding down allocate in this process.
	const mb = 1 << 20
	h := newHeapTrimmer()
	sample := func(batches uint64) heapSample {
		return heapSample{allocs: 1 * mb, live: 100 * mb, held: 100 * mb, batches: batches}
	}
	t0 := time.Now()
	h.decide(t0, sample(0))
	h.decide(t0.Add(trimCheckInterval), sample(0)) // nothing served, nothing allocated
	if h.interval() != trimIdleInterval {
		t.Fatalf("idle: next check in %v, want %v", h.interval(), trimIdleInterval)
	}
	// 20 periods later, 20 × the per-period threshold is still idle.
	t1 := t0.Add(trimCheckInterval + trimIdleInterval)
	h.decide(t1, sample(20*idleBatchesPerTick))
	if h.interval() != trimIdleInterval {
		t.Fatalf("idle over a second: next check in %v, want %v", h.interval(), trimIdleInterval)
	}
	h.decide(t1.Add(trimCheckInterval), sample(20*idleBatchesPerTick+idleBatchesPerTick+1))
	if h.interval() != trimCheckInterval {
		t.Fatalf("busy: next check in %v, want %v", h.interval(), trimCheckInterval)
	}
}

// One quiet check in the middle of a write load (the clients waiting for
// a stalled AOF write) does not trim: the server must stay quiet for
// trimQuietFor, and a check that finds background work under way is not
// quiet. A full collection there cost up to a second of CPU mid-benchmark.
func TestHeapTrimmerWaitsForLastingQuiet(t *testing.T) {
	const mb = 1 << 20
	h := newHeapTrimmer()
	t0 := time.Now().Add(-time.Hour) // long after any last trim
	allocs, batches := uint64(0), uint64(0)
	check := func(at time.Duration, busy, working bool) bool {
		if busy {
			allocs += 10 * idleAllocPerTick
			batches += 10 * idleBatchesPerTick
		}
		// 200 MB held for 100 MB live: worth trimming once idle.
		return h.decide(t0.Add(at), heapSample{allocs: allocs, live: 100 * mb, held: 200 * mb, batches: batches, working: working})
	}
	step := trimCheckInterval
	at := time.Duration(0)
	for range 10 { // a write load
		if check(at, true, false) {
			t.Fatal("trimmed while busy")
		}
		at += step
	}
	// A stall: four quiet checks (200 ms), then the load goes on.
	for range 4 {
		if check(at, false, false) {
			t.Fatalf("trimmed after a %v stall under load", at)
		}
		at += step
	}
	check(at, true, false)
	at += step
	// Quiet clients while AOF bytes wait to be written: never a trim.
	for range 3 * int(trimQuietFor/step) {
		if check(at, false, true) {
			t.Fatal("trimmed while background work was pending")
		}
		at += step
	}
	// Really idle: a trim once trimQuietFor has passed, not before.
	start := at
	trimmed := false
	for range 2 * int(trimQuietFor/step) {
		if check(at, false, false) {
			if at-start < trimQuietFor {
				t.Fatalf("trimmed after %v of quiet, want %v", at-start, trimQuietFor)
			}
			trimmed = true
			break
		}
		at += step
	}
	if !trimmed {
		t.Fatal("an idle server with a loose heap was never trimmed")
	}
}

// A quiet node whose heap holds a little idle garbage (a cluster node's
// gossip) gives it back too, but at most once per trimDecay, and it keeps
// sampling once a second while it waits: an idle node must not wake 20
// times a second for garbage that can wait.
func TestHeapTrimmerReturnsIdleGarbageOncePerDecay(t *testing.T) {
	const kb = 1 << 10
	h := newHeapTrimmer()
	t0 := time.Now()
	live := uint64(5 << 20)
	decide := func(at time.Duration, garbage uint64) bool {
		return h.decide(t0.Add(at), heapSample{allocs: garbage, live: live, held: live + garbage})
	}
	// Less than trimMinBytes above the live heap: nothing to do.
	for at := time.Duration(0); at <= 3*trimQuietFor; at += trimIdleInterval {
		if decide(at, 100*kb) {
			t.Fatalf("trimmed %d KB of garbage", 100)
		}
		if at > 0 && h.interval() != trimIdleInterval {
			t.Fatalf("next check in %v with nothing to trim, want %v", h.interval(), trimIdleInterval)
		}
	}
	at := 4 * trimQuietFor
	if !decide(at, 600*kb) {
		t.Fatal("600 KB of garbage on a quiet node was not given back")
	}
	// The next trim waits for trimDecay, sampled once a second meanwhile.
	start := at
	trimmed := false
	for range 2 * int(trimDecay/trimIdleInterval) {
		at += trimIdleInterval
		if decide(at, 600*kb+uint64(at-start)/uint64(time.Second)) {
			if at-start < trimDecay {
				t.Fatalf("trimmed again after %v, want %v", at-start, trimDecay)
			}
			trimmed = true
			break
		}
		if h.interval() != trimIdleInterval {
			t.Fatalf("next check in %v while the trim waits, want %v", h.interval(), trimIdleInterval)
		}
	}
	if !trimmed {
		t.Fatal("the idle garbage was not given back after trimDecay")
	}
}

// How much excess is worth a trim: trimMinBytes on a small heap (an idle
// cluster node, whose live heap counts a 3 MB slot array it never
// touches), and a tenth of the live data beyond trimSlackFrom on a large
// one, whose collection costs more.
func TestHeapTrimmerExcessWorthATrim(t *testing.T) {
	const kb, mb = 1 << 10, 1 << 20
	for _, c := range []struct {
		live, excess uint64
		want         bool
	}{
		{5 * mb, 100 * kb, false},
		{5 * mb, 200 * kb, true},
		{100 * mb, 5 * mb, false}, // below (100-8)/10 = 9.2 MB
		{100 * mb, 10 * mb, true},
	} {
		h := newHeapTrimmer()
		t0 := time.Now().Add(-time.Hour) // long after any last trim
		var got bool
		for at := time.Duration(0); at <= 2*trimQuietFor; at += trimIdleInterval {
			got = h.decide(t0.Add(at), heapSample{live: c.live, held: c.live + c.excess}) || got
		}
		if got != c.want {
			t.Errorf("live %d KB, excess %d KB: trimmed %v, want %v", c.live/kb, c.excess/kb, got, c.want)
		}
	}
}
