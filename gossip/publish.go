package gossip

// Pub/Sub over the cluster bus (Redis's clusterPropagatePublish): a
// PUBLISH reaches every node, an SPUBLISH the nodes of the publisher's
// shard only (its master and that master's replicas). Receivers hand the
// message to the server through Change.Inbound (protocol.go).
//
// The messages go best effort: memberlist's UDP packets for small ones,
// its stream transport for those over the packet budget (Bus.sender).
// Redis's bus is TCP; here a message may be lost when the send queue is
// full or a packet is dropped, which Pub/Sub's at-most-once delivery
// allows.

// Publish sends PUBLISH channel payload to every other known node.
// channel and payload are copied: the messages leave after the call.
func (b *Bus) Publish(channel, payload []byte) {
	channel, payload = copyBody(channel, payload)
	_ = b.do(func(s *State) error {
		s.broadcast(&Message{Type: MsgPublish, Channel: channel, Payload: payload}, false)
		return nil
	})
}

// PublishShard sends SPUBLISH channel payload to the other nodes of this
// node's shard.
func (b *Bus) PublishShard(channel, payload []byte) {
	channel, payload = copyBody(channel, payload)
	_ = b.do(func(s *State) error {
		s.publishShard(channel, payload)
		return nil
	})
}

// publishShard queues a PUBLISHSHARD for the master of myself's shard and
// its replicas (clusterGetNodesServingMySlots), myself excluded.
func (s *State) publishShard(channel, payload []byte) {
	master := s.myself
	if s.myself.isSlave() && s.myself.master != nil {
		master = s.myself.master
	}
	hdr := s.header(MsgPublishShard)
	hdr.Channel, hdr.Payload = channel, payload
	for _, n := range append([]*node{master}, master.replicas...) {
		if n == s.myself || n.inHandshake() {
			continue
		}
		m := s.msgs.get()
		*m = *hdr
		m.To = n.id
		s.send(n, m, false)
	}
	s.msgs.Put(hdr) // only its copies are sent
}

// copyBody copies channel and payload into one allocation.
func copyBody(channel, payload []byte) ([]byte, []byte) {
	buf := make([]byte, len(channel)+len(payload))
	n := copy(buf, channel)
	copy(buf[n:], payload)
	return buf[:n:n], buf[n:]
}
