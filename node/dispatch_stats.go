package node

import (
	"math/bits"
	"strings"
	"time"

	"github.com/shoal-db/shoal/command"
)

// The statistics of the commands a connection runs: commandstats and the
// latency buckets, gathered per connection and published in batches, and
// errorstats, counted as each error reply is written.

// cmdStatAcc gathers the statistics of a run of one command on one
// connection (pipelines repeat a command). They reach the command's shared
// counters when the connection runs another command, before it blocks and
// before its replies are written: every reply a client can have seen has
// its command counted (and INFO, another command, sees the counts of the
// commands before it), at a fraction of the atomic operations — four per
// command were a tenth of a pipelined GET.
type cmdStatAcc struct {
	spec                          *command.Spec
	calls, usec, rejected, failed int64
	lat                           [latencyBucketCount]int64
	latUsed                       uint32 // the buckets of lat that are not zero
	outBytes                      int64  // reply bytes queued since the last flush (any command)
}

// observe counts one call of duration d in its latency bucket (the
// buckets of latencyBuckets.observe).
func (a *cmdStatAcc) observe(d time.Duration) {
	i := latencyBucket(d)
	a.lat[i]++
	a.latUsed |= 1 << i
}

// statsFor returns the accumulator for spec, first publishing the one of
// the previous command if it was another — or if this one may read the
// counters (accumulates): INFO, LATENCY, CONFIG RESETSTAT and the like read
// or reset them, and INFO after INFO counts the first one, as in Redis.
func (c *Client) statsFor(spec *command.Spec) *cmdStatAcc {
	if c.stats.spec != spec || !accumulates(spec) {
		c.flushStats()
		c.stats.spec = spec
	}
	return &c.stats
}

// accumulates reports whether a run of spec's calls may gather its
// statistics before publishing them: a fast command or a write (SET is not
// fast) never reads or resets the counters. The commands that do (INFO,
// LATENCY, CONFIG RESETSTAT, DEBUG, scripts that could call them...) are
// neither, and see every call before them counted.
func accumulates(spec *command.Spec) bool {
	return spec.Flags&(command.FlagFast|command.FlagWrite) != 0
}

// flushStats adds the accumulated statistics to the command's shared
// counters and the client's processed-commands total. Called by the
// connection's goroutine.
func (c *Client) flushStats() {
	a := &c.stats
	if a.outBytes != 0 {
		c.outBytes.Add(a.outBytes)
		a.outBytes = 0
	}
	if n := a.calls + a.rejected; n != 0 {
		c.cmdsProcessed.Add(n)
	}
	c.publishStats(a)
}

// publishStats adds what a gathered to its command's shared counters and
// zeroes it.
func (c *Client) publishStats(a *cmdStatAcc) {
	if a.spec == nil {
		return
	}
	sh := c.srv.table.statShard(a.spec, c.id)
	if a.calls != 0 {
		sh.calls.Add(a.calls)
		sh.usec.Add(a.usec)
	}
	if a.rejected != 0 {
		sh.rejected.Add(a.rejected)
	}
	if a.failed != 0 {
		sh.failed.Add(a.failed)
	}
	for m := a.latUsed; m != 0; m &= m - 1 {
		i := bits.TrailingZeros32(m)
		sh.lat[i].Add(a.lat[i])
		a.lat[i] = 0
	}
	// The spec stays: a command that flushes mid-run (before blocking)
	// goes on counting into the same accumulator.
	a.calls, a.usec, a.rejected, a.failed, a.latUsed = 0, 0, 0, 0, 0
}

// startBatch reads the clock for a batch of requests read together: the
// time of the client's last interaction (Redis too stamps it once per
// read) and the start of the batch's first command. Each later command of
// the batch starts where the one before it ended, so a command costs one
// clock read, not two (a clock read was a tenth of a pipelined GET's CPU).
func (c *Client) startBatch() {
	now := time.Now()
	c.batchAt = now
	c.batchStart = now.Sub(c.srv.start)
	c.cmdStart = c.batchStart
	c.lastInteraction.Store(now.UnixMilli())
}

// noteError counts an error reply in INFO errorstats.
func (c *Client) noteError(msg string) {
	c.errored = true
	s := c.srv
	s.stats.totalErrorReplies.Add(1)
	code := msg
	if i := strings.IndexByte(msg[:min(len(msg), 32)], ' '); i > 0 {
		code = msg[:i]
	} else {
		code = "ERR"
	}
	s.stats.countError(code)
}
