package node

import (
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/shoal-db/shoal/command"
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
	st := &t.stats[spec.ID]
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
