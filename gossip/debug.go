package gossip

import (
	"strings"
	"time"
)

// The cluster side of Redis's DEBUG subcommands, used by Redis's own test
// suites to break the bus on purpose.

// dropNone is the drop filter that matches no message (Redis's -1).
const dropNone = -1

// SetDropFilter is DEBUG DROP-CLUSTER-PACKET-FILTER t: every received
// message of type t is counted in CLUSTER INFO's received statistics and
// then ignored, as if it had never arrived (-1, or any number that is no
// message type, drops nothing). The numbers are Redis's message types (0
// PING, 1 PONG, 2 MEET, 3 FAIL, 4 PUBLISH, 5 FAILOVER_AUTH_REQUEST, 6
// FAILOVER_AUTH_ACK, 7 UPDATE, 8 MFSTART, 9 MODULE, 10 PUBLISHSHARD), which
// are shoal's MsgType values. memberlist's own probes are not bus messages
// and are never filtered: they only feed the liveness hints and the
// discovery of peers of the membership.
func (s *State) SetDropFilter(t int64) { s.dropType = t }

// dropped reports whether the drop filter swallows a received message.
func (s *State) dropped(m *Message) bool {
	if s.dropType < 0 || int64(m.Type) != s.dropType {
		return false
	}
	s.log.Warn("Dropping packet that matches debug drop filter")
	return true
}

// KillLink is DEBUG CLUSTERLINK KILL to|from|all id: it frees this node's
// link(s) with a peer, as Redis's freeClusterLink does.
//
// The cluster links are real streams (gossip/link.go), and the State's
// bookkeeping stands for them:
//   - "to" (our outbound link): it is closed at the next cron tick, and every
//     message for the peer is dropped until that tick creates a new
//     link and opens it with a PING (clusterCron reconnects the same way; in
//     Redis a node without a link is skipped by broadcasts); the old link's
//     send buffer is dropped with it.
//   - "from" (the peer's link to us): the connection is closed (Bus.KillLink);
//     the peer notices and its next cron tick connects again, a new link
//     with a new creation time, as in Redis.
func (s *State) KillLink(dir, id string) error {
	n := s.lookup(id)
	if n == nil {
		return errorf("Unknown node %s", id)
	}
	kind := strings.ToLower(dir)
	if kind != "to" && kind != "from" && kind != "all" {
		return errorf("Unknown direction %s", dir)
	}
	if n == s.myself {
		return nil // no link with myself (Redis would dereference a NULL link)
	}
	if kind == "to" || kind == "all" {
		n.linkTime = time.Time{}
		n.linkKilled = true
	}
	if kind == "from" || kind == "all" {
		n.inboundTime = time.Time{}
	}
	return nil
}

// SetDropFilter is DEBUG DROP-CLUSTER-PACKET-FILTER (see State.SetDropFilter).
func (b *Bus) SetDropFilter(t int64) {
	_ = b.do(func(s *State) error { s.SetDropFilter(t); return nil })
}

// KillLink is DEBUG CLUSTERLINK KILL (see State.KillLink).
func (b *Bus) KillLink(dir, id string) error {
	err := b.do(func(s *State) error { return s.KillLink(dir, id) })
	if err == nil && !strings.EqualFold(dir, "to") {
		b.links.killInbound(id) // "to" closes at the next cron (State.linkPeers)
	}
	return err
}
