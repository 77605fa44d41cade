package node

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/config"
)

// latencyBuckets is a command's latency histogram, cheap enough for every
// call: bucket i counts the calls that took fewer than 2^i microseconds
// (and at least 2^(i-1)), found with one bit-length instruction and
// recorded with one atomic add. The last bucket holds everything slower.
// It lives in each cmdStat shard, like the other counters, so two cores
// running the same command do not share its cache lines.
type latencyBuckets [latencyBucketCount]atomic.Int64

// latencyBucketCount covers 1 µs to 2^23 µs (about 8.4 s) plus overflow.
const latencyBucketCount = 25

// observe records one call of duration d.
func (h *latencyBuckets) observe(d time.Duration) { h[latencyBucket(d)].Add(1) }

// latencyBucket returns the bucket of a call of duration d.
func latencyBucket(d time.Duration) int {
	us := uint64(max(d/time.Microsecond, 0))
	return min(bits.Len64(us), latencyBucketCount-1)
}

// reset zeroes the histogram (CONFIG RESETSTAT).
func (h *latencyBuckets) reset() {
	for i := range h {
		h[i].Store(0)
	}
}

// latencyUpperBound is bucket i's upper bound in seconds (the Prometheus
// "le" label); the overflow bucket has none (+Inf).
func latencyUpperBound(i int) float64 {
	return float64(uint64(1)<<i) / 1e6
}

// latencyHistogram sums a command's shards: cumulative counts per upper
// bound (overflow excluded, it is the total), as Prometheus wants them.
func (t *commandTable) latencyHistogram(spec *command.Spec) (cumulative [latencyBucketCount - 1]uint64, total uint64) {
	var per [latencyBucketCount]uint64
	st := t.statsOf(spec)
	for i := range st {
		for b := range per {
			per[b] += uint64(st[i].lat[b].Load())
		}
	}
	var run uint64
	for b := 0; b < latencyBucketCount-1; b++ {
		run += per[b]
		cumulative[b] = run
	}
	return cumulative, run + per[latencyBucketCount-1]
}

// infoLatencyStats writes INFO latencystats: for every command called since
// the last CONFIG RESETSTAT, the latency-tracking-info-percentiles of its
// calls in microseconds, as Redis 7.0 (nothing with latency-tracking no).
// The histogram has one bucket per power of two of microseconds, so a
// percentile is the upper bound of the bucket holding it (Redis's
// hdr_histogram keeps two significant digits; both report the highest
// value the histogram cannot tell apart from the sample).
func (s *Server) infoLatencyStats(w *infoWriter) {
	w.section("Latencystats")
	if !s.cfg.Bool("latency-tracking") {
		return
	}
	percentiles := s.cfg.LatencyTrackingPercentiles()
	names := make([]string, 0, len(s.table.byName))
	for name := range s.table.byName {
		names = append(names, name)
	}
	slices.Sort(names)
	line := func(spec *command.Spec) {
		cumulative, total := s.table.latencyHistogram(spec)
		if total == 0 {
			return
		}
		var b strings.Builder
		for i, p := range percentiles {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "p%s=%.3f", config.FormatPercentile(p), latencyAtPercentile(cumulative, total, p))
		}
		w.str("latency_percentiles_usec_"+safeInfoString(spec.FullName()), b.String())
	}
	for _, name := range names {
		spec := s.table.byName[name]
		line(spec)
		for _, sub := range sortedSubcommands(spec) {
			line(sub)
		}
	}
}

// latencyAtPercentile is the upper bound, in microseconds, of the bucket
// holding the p-th percentile call (hdr_value_at_percentile's rule: the
// smallest value with at least p% of the calls at or below it).
func latencyAtPercentile(cumulative [latencyBucketCount - 1]uint64, total uint64, p float64) float64 {
	want := uint64(math.Ceil(p / 100 * float64(total)))
	want = max(want, 1)
	for i, n := range cumulative {
		if n >= want {
			return float64(uint64(1)<<i - 1)
		}
	}
	return float64(uint64(1)<<(latencyBucketCount-1) - 1) // the overflow bucket: at least this
}
