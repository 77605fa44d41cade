package gossip

import "sync"

// MessagePool recycles outgoing messages. A Message carries a whole slot
// bitmap (2 KB) by value, and an idle node sends one per PING or PONG:
// built new each time they were two fifths of the garbage of a 3+3
// cluster's idle node (1.1 MB per 28 s at cluster-node-timeout 1000),
// and the garbage is what its resident memory rises with between
// collections.
//
// The State takes the messages it sends from the pool (State.header); the
// Bus gives one back once it is encoded (sendPacket, linkFrame), the only
// point at which nothing refers to it any more. A message that is dropped
// instead (a full queue, a freed link) is left to the collector. Safe for
// concurrent use; a nil pool allocates and recycles nothing (a State
// driven by a test, whose messages the test reads).
type MessagePool struct{ p sync.Pool }

// get returns a zeroed message.
func (mp *MessagePool) get() *Message {
	if mp != nil {
		if m, _ := mp.p.Get().(*Message); m != nil {
			return m
		}
	}
	return &Message{}
}

// Put gives m back. m must not be used afterwards, by anyone: its fields
// are cleared at once, Gossip's array with them (a copy of a message may
// share it, so it is never kept for reuse).
func (mp *MessagePool) Put(m *Message) {
	if mp == nil || m == nil {
		return
	}
	*m = Message{}
	mp.p.Put(m)
}
