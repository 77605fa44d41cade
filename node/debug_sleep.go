package node

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-db/shoal/command"
)

// strtod parses the longest prefix of b that is a number, like C's strtod
// (0 when there is none).
func strtod(b []byte) float64 {
	s := strings.TrimLeft(string(b), " \t\n\v\f\r")
	for end := len(s); end > 0; end-- {
		if f, err := strconv.ParseFloat(s[:end], 64); err == nil || command.IsRangeErr(err) {
			return f
		}
	}
	return 0
}

// debugSleep stops the whole server for the given time, as Redis's DEBUG
// SLEEP does by sleeping in its event loop: every other client waits before
// its next command (the execution gate, node/multi.go; commands already
// running finish first), so the replication stream is neither served nor
// applied, and the cluster bus neither processes what peers send nor runs
// its cron (gossip.Bus.Hold), so peers see the node stop answering — Redis's
// tests/cluster relies on that to make a node time out without killing it.
// What arrives meanwhile waits in the socket and bus buffers, as in Redis.
// The sleep ends early if the server shuts down.
func debugSleep(c *Client, arg []byte) {
	secs := strtod(arg)
	if secs > 0 {
		release := c.closeGate()
		defer release()
		if unhold := c.holdBus(); unhold != nil { // node/cmd_cluster_migrate.go
			defer unhold()
		}
		d := time.Duration(math.MaxInt64)
		if secs < float64(math.MaxInt64)/float64(time.Second) {
			d = time.Duration(secs * float64(time.Second))
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-c.srv.stopCron:
		}
		t.Stop()
	}
	c.OK()
}
