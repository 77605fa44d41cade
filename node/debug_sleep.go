package node

import (
	"math"
	"time"

	"github.com/shoal-db/shoal/command"
)

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
	secs, _, _ := command.Strtod(arg) // as Redis: the number arg begins with, 0 if none
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
