package gossip

import (
	"net"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// memberlistTiming is memberlist's timers for a cluster-node-timeout.
// memberlist's verdicts are hints only (the failure detector is State's,
// which reads the node timeout at every use; bus messages go straight to
// an address, not through memberlist's membership): the hints only tell
// the re-join, every 10 s, which peers to join again. So memberlist probes
// and gossips once per five node-timeouts (1 s to 5 s; 5 s from a
// node-timeout of 1 s): at node-timeout/10 its probes, acks and gossip
// were a second failure detector's worth of packets, a good part of an
// idle node's CPU, and even once a second its probes, acks and timers
// were a tenth of an idle node's wake-ups.
type memberlistTiming struct {
	probe, probeTimeout time.Duration
	gossip              time.Duration
	// stream bounds a stream: dialing one (a reliable send: MEET, UPDATE,
	// votes; a push/pull) and reading an accepted one.
	stream  time.Duration
	reclaim time.Duration // DeadNodeReclaimTime
}

func timingFor(nodeTimeout time.Duration) memberlistTiming {
	probe := clampDur(5*nodeTimeout, time.Second, 5*time.Second)
	return memberlistTiming{
		probe:        probe,
		probeTimeout: probe / 2,
		gossip:       probe,
		stream:       clampDur(nodeTimeout/2, 500*time.Millisecond, 5*time.Second),
		reclaim:      nodeTimeout,
	}
}

func (t memberlistTiming) apply(mc *memberlist.Config) {
	mc.ProbeInterval = t.probe
	mc.ProbeTimeout = t.probeTimeout
	mc.GossipInterval = t.gossip
	mc.TCPTimeout = t.stream
	mc.DeadNodeReclaimTime = t.reclaim
}

func clampDur(d, lo, hi time.Duration) time.Duration {
	if d < lo {
		return lo
	}
	if d > hi {
		return hi
	}
	return d
}

// streamTimeout keeps memberlist's stream timeout in step with CONFIG SET
// cluster-node-timeout. memberlist reads its Config only at Create, so a
// running instance keeps the TCPTimeout it was created with; the guard
// transport under it swaps that for the current one where memberlist uses
// it: the dial of a message or push/pull stream (memberlist passes exactly
// its TCPTimeout; a TCP ping passes what is left of its probe deadline,
// which is kept) and the deadline of an accepted stream (memberlist arms
// now + TCPTimeout on it, and nothing else). The probe timers stay as
// created: they only refresh the liveness hints used to re-join peers, and
// a CLUSTER RESET creates memberlist again with the current ones.
type streamTimeout struct {
	created time.Duration // the TCPTimeout this memberlist instance was created with
	current *atomic.Int64 // the bus's current stream timeout, ns (0: created)
}

func (s streamTimeout) now() time.Duration {
	if s.current != nil {
		if d := time.Duration(s.current.Load()); d > 0 {
			return d
		}
	}
	return s.created
}

// dial is the timeout for a dial memberlist asked to make within d.
func (s streamTimeout) dial(d time.Duration) time.Duration {
	if d == s.created {
		return s.now()
	}
	return d
}

// acceptedConn is a stream memberlist accepted: the deadline it arms is
// moved to the current stream timeout.
type acceptedConn struct {
	net.Conn
	timeout streamTimeout
}

func (c acceptedConn) SetDeadline(t time.Time) error {
	if !t.IsZero() {
		t = time.Now().Add(c.timeout.now())
	}
	return c.Conn.SetDeadline(t)
}
