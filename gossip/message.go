package gossip

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/shoal-db/shoal/slots"
)

// MsgType is a bus message type; the numbers are Redis's (cluster.h), so the
// CLUSTER INFO counters line up with Redis's names.
type MsgType uint8

const (
	MsgPing         MsgType = 0
	MsgPong         MsgType = 1
	MsgMeet         MsgType = 2
	MsgFail         MsgType = 3
	MsgPublish      MsgType = 4
	MsgAuthRequest  MsgType = 5 // FAILOVER_AUTH_REQUEST
	MsgAuthAck      MsgType = 6 // FAILOVER_AUTH_ACK
	MsgUpdate       MsgType = 7
	MsgMFStart      MsgType = 8
	MsgModule       MsgType = 9 // reserved (modules are not supported)
	MsgPublishShard MsgType = 10
	msgTypeCount            = 11
)

// String is the name CLUSTER INFO uses (clusterGetMessageTypeString).
func (t MsgType) String() string {
	switch t {
	case MsgPing:
		return "ping"
	case MsgPong:
		return "pong"
	case MsgMeet:
		return "meet"
	case MsgFail:
		return "fail"
	case MsgPublish:
		return "publish"
	case MsgPublishShard:
		return "publishshard"
	case MsgAuthRequest:
		return "auth-req"
	case MsgAuthAck:
		return "auth-ack"
	case MsgUpdate:
		return "update"
	case MsgMFStart:
		return "mfstart"
	case MsgModule:
		return "module"
	}
	return "unknown"
}

// Message flags (mflags), Redis's CLUSTERMSG_FLAG0_*.
const (
	MFlagPaused   uint8 = 1 << 0 // master paused for a manual failover
	MFlagForceAck uint8 = 1 << 1 // vote even if the master is not failing
	// MFlagDataLost is shoal's own (Redis has no such flag): the sender
	// restarted as a master without its data and waits for a replica that
	// holds it to take over (failover/datalost.go).
	MFlagDataLost uint8 = 1 << 7
	// MFlagLoadedData is shoal's own too: the sender restarted from its own
	// data set file with keys and has not synced from a master since (its
	// replication offset, 0, does not show that it holds data).
	MFlagLoadedData uint8 = 1 << 6
)

// GossipEntry is what a PING/PONG/MEET says about one other node.
type GossipEntry struct {
	ID           string
	PingSent     uint32 // unix seconds, 0 = no ping pending
	PongReceived uint32 // unix seconds
	IP           string
	Port, CPort  uint16
	PPort        uint16 // plaintext client port in a TLS cluster, 0 = none
	Flags        Flags
}

// Update is the body of an UPDATE: the newest known configuration of a node.
type Update struct {
	ID          string
	ConfigEpoch uint64
	Slots       slots.Bitmap
}

// Message is one cluster bus message. Every message carries the sender's
// header (like Redis's clusterMsg): its id, epochs, flags, master, replication
// offset, address and the slots it (or, for a replica, its master) serves.
type Message struct {
	Type MsgType
	// Sender is the sender's id.
	Sender string
	// To is the id the sender knows the receiver by ("" when it does not
	// know it). A PONG answering a PING/MEET echoes the request's To: that
	// is how the pinger finds the node it pinged, even a handshake node that
	// still has a made-up id.
	To           string
	CurrentEpoch uint64
	ConfigEpoch  uint64 // the sender's, or its master's for a replica
	Offset       int64  // replication offset
	Flags        Flags
	MFlags       uint8
	Master       string // "" for a master
	IP           string
	Port, CPort  uint16
	// PPort is the sender's plaintext client port in a TLS cluster (Port
	// is then its TLS port), 0 = none, as Redis's clusterMsg.pport.
	PPort    uint16
	Hostname string
	// ToIP is the address the sender sent this message to (the receiver's
	// IP as the sender knows it): a node without cluster-announce-ip learns
	// its own address from it, as Redis reads the local address of the
	// bus connection a MEET arrived on.
	ToIP  string
	Slots slots.Bitmap // served by the sender (its master for a replica)

	Gossip []GossipEntry // PING, PONG, MEET
	About  string        // FAIL: the failing node
	Update *Update       // UPDATE
	// Channel and Payload are the body of PUBLISH / PUBLISHSHARD.
	Channel, Payload []byte
}

// Wire format, version 1 (all integers big-endian):
//
//	magic "SB" | version u8 | type u8 | total length u32
//	sender [40] | to [40] (zeros = none) | currentEpoch u64 | configEpoch u64
//	offset i64 | flags u16 | mflags u8 | master [40] (zeros = none)
//	ip (u8 len + bytes) | port u16 | cport u16 | pport u16 | hostname (u8 len + bytes)
//	toip (u8 len + bytes)
//	slots: u8 encoding (0 = u16 count of ranges + count × (u16 start, u16 end),
//	       1 = raw 2048-byte bitmap, whichever is shorter)
//	body:  PING/PONG/MEET: u16 count + count × gossip entry
//	         (id [40] | ping u32 | pong u32 | ip | port u16 | cport u16 | pport u16 | flags u16)
//	       FAIL: id [40]
//	       UPDATE: id [40] | configEpoch u64 | slots
//	       PUBLISH(SHARD): u32 len + channel | u32 len + payload
//	       AUTH_REQUEST, AUTH_ACK, MFSTART: empty (the header says it all)
//
// Every length is checked against the bytes left before anything is
// allocated, and the total length must equal the buffer's.
const (
	wireVersion    = 1
	idLen          = 40
	headerFixedLen = 2 + 1 + 1 + 4 + idLen + idLen + 8 + 8 + 8 + 2 + 1 + idLen
	// MaxMessageSize bounds a decoded message (a PUBLISH payload is the only
	// big part; larger ones are refused).
	MaxMessageSize = 64 << 20
	maxIPLen       = 46 // NET_IP_STR_LEN
	gossipEntryMin = idLen + 4 + 4 + 1 + 2 + 2 + 2 + 2
)

var errBadMessage = errors.New("gossip: malformed bus message")

// Encode serializes m.
func (m *Message) Encode() []byte { return m.AppendEncoded(make([]byte, 0, m.sizeHint())) }

// AppendEncoded appends m's encoding to dst (a sender reuses one buffer).
func (m *Message) AppendEncoded(dst []byte) []byte {
	start := len(dst)
	b := append(dst, 'S', 'B', wireVersion, byte(m.Type), 0, 0, 0, 0)
	b = appendID(b, m.Sender)
	b = appendID(b, m.To)
	b = binary.BigEndian.AppendUint64(b, m.CurrentEpoch)
	b = binary.BigEndian.AppendUint64(b, m.ConfigEpoch)
	b = binary.BigEndian.AppendUint64(b, uint64(m.Offset))
	b = binary.BigEndian.AppendUint16(b, uint16(m.Flags))
	b = append(b, m.MFlags)
	b = appendID(b, m.Master)
	b = appendStr8(b, m.IP)
	b = binary.BigEndian.AppendUint16(b, m.Port)
	b = binary.BigEndian.AppendUint16(b, m.CPort)
	b = binary.BigEndian.AppendUint16(b, m.PPort)
	b = appendStr8(b, m.Hostname)
	b = appendStr8(b, m.ToIP)
	b = appendSlots(b, &m.Slots)
	switch m.Type {
	case MsgPing, MsgPong, MsgMeet:
		n := len(m.Gossip)
		if n > 0xffff {
			n = 0xffff
		}
		b = binary.BigEndian.AppendUint16(b, uint16(n))
		for _, g := range m.Gossip[:n] {
			b = appendID(b, g.ID)
			b = binary.BigEndian.AppendUint32(b, g.PingSent)
			b = binary.BigEndian.AppendUint32(b, g.PongReceived)
			b = appendStr8(b, g.IP)
			b = binary.BigEndian.AppendUint16(b, g.Port)
			b = binary.BigEndian.AppendUint16(b, g.CPort)
			b = binary.BigEndian.AppendUint16(b, g.PPort)
			b = binary.BigEndian.AppendUint16(b, uint16(g.Flags))
		}
	case MsgFail:
		b = appendID(b, m.About)
	case MsgUpdate:
		u := m.Update
		if u == nil {
			u = &Update{}
		}
		b = appendID(b, u.ID)
		b = binary.BigEndian.AppendUint64(b, u.ConfigEpoch)
		b = appendSlots(b, &u.Slots)
	case MsgPublish, MsgPublishShard:
		b = binary.BigEndian.AppendUint32(b, uint32(len(m.Channel)))
		b = append(b, m.Channel...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(m.Payload)))
		b = append(b, m.Payload...)
	}
	binary.BigEndian.PutUint32(b[start+4:start+8], uint32(len(b)-start))
	return b
}

// sizeHint is the encoded size of m, computed without encoding it (the
// sender encodes later): a link's send buffer counts it.
func (m *Message) sizeHint() int {
	n := headerFixedLen + 1 + len(m.IP) + 6 + 1 + len(m.Hostname) + 1 + len(m.ToIP) + slotsSize(&m.Slots)
	switch m.Type {
	case MsgPing, MsgPong, MsgMeet:
		n += 2
		for i := range m.Gossip {
			n += gossipEntryMin + len(m.Gossip[i].IP)
		}
	case MsgFail:
		n += idLen
	case MsgUpdate:
		u := m.Update
		if u == nil {
			u = &Update{}
		}
		n += idLen + 8 + slotsSize(&u.Slots)
	case MsgPublish, MsgPublishShard:
		n += 8 + len(m.Channel) + len(m.Payload)
	}
	return n
}

// slotsSize is what appendSlots writes for set.
func slotsSize(set *slots.Bitmap) int {
	if rs := set.Ranges(); 2+4*len(rs) < len(set)*8 {
		return 1 + 2 + 4*len(rs)
	}
	return 1 + len(set)*8
}

func appendID(b []byte, id string) []byte {
	if len(id) != idLen {
		var zero [idLen]byte
		return append(b, zero[:]...)
	}
	return append(b, id...)
}

func appendStr8(b []byte, s string) []byte {
	if len(s) > 255 {
		s = s[:255]
	}
	b = append(b, byte(len(s)))
	return append(b, s...)
}

func appendSlots(b []byte, set *slots.Bitmap) []byte {
	rs := set.Ranges()
	if 2+4*len(rs) < len(set)*8 {
		b = append(b, 0)
		b = binary.BigEndian.AppendUint16(b, uint16(len(rs)))
		for _, r := range rs {
			b = binary.BigEndian.AppendUint16(b, r.Start)
			b = binary.BigEndian.AppendUint16(b, r.End)
		}
		return b
	}
	b = append(b, 1)
	for _, w := range set {
		b = binary.BigEndian.AppendUint64(b, w)
	}
	return b
}

// reader consumes a buffer with bounds checks; the first failure sticks.
type reader struct {
	b   []byte
	bad bool
	// strs, when set, makes the strings of the message (ids, addresses,
	// hostnames): the same few recur in every PING and PONG.
	strs *stringTable
	// check: the message is only checked, not kept; no string or body is
	// copied out of b (a non-empty string stands for a non-empty field,
	// which is all the checks look at).
	check bool
}

// stringTable interns the strings of decoded messages: a lookup by the
// bytes does not allocate, so a node id or an address seen before costs
// nothing (a 40-byte id per sender, receiver and gossip entry was a tenth
// of an idle node's garbage). It forgets everything at maxInterned
// entries, so peers that keep making up ids cannot grow it. Not safe for
// concurrent use: the Bus's loop owns its table.
type stringTable struct{ m map[string]string }

const maxInterned = 4096

func (t *stringTable) intern(p []byte) string {
	if s, ok := t.m[string(p)]; ok {
		return s
	}
	if t.m == nil || len(t.m) >= maxInterned {
		t.m = make(map[string]string)
	}
	s := string(p)
	t.m[s] = s
	return s
}

// checkedString stands for a non-empty field of a message only checked.
const checkedString = "-"

func (r *reader) str(p []byte) string {
	switch {
	case len(p) == 0:
		return ""
	case r.check:
		return checkedString
	case r.strs != nil:
		return r.strs.intern(p)
	}
	return string(p)
}

// body is the next n bytes, copied (the message outlives the buffer); not
// copied when only checking.
func (r *reader) body(n int) []byte {
	p := r.take(n)
	if r.check || p == nil {
		return nil
	}
	return append([]byte(nil), p...)
}

func (r *reader) take(n int) []byte {
	if r.bad || n < 0 || n > len(r.b) {
		r.bad = true
		return nil
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *reader) u8() uint8 {
	if p := r.take(1); p != nil {
		return p[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if p := r.take(2); p != nil {
		return binary.BigEndian.Uint16(p)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if p := r.take(4); p != nil {
		return binary.BigEndian.Uint32(p)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if p := r.take(8); p != nil {
		return binary.BigEndian.Uint64(p)
	}
	return 0
}

// id reads a 40-byte id: all zeros means none; anything else must be a
// valid node id.
func (r *reader) id() string {
	p := r.take(idLen)
	if p == nil {
		return ""
	}
	zero := true
	for _, c := range p {
		if c != 0 {
			zero = false
			break
		}
	}
	if zero {
		return ""
	}
	if !validID(p) {
		r.bad = true
		return ""
	}
	return r.str(p)
}

// str8 reads a length-prefixed string of at most max bytes, each of which
// must satisfy ok: addresses and hostnames end up in nodes.conf and CLUSTER
// NODES, where a space or a newline would corrupt the file (a node that
// cannot load it does not start).
func (r *reader) str8(max int, ok func(byte) bool) string {
	n := int(r.u8())
	if n > max {
		r.bad = true
		return ""
	}
	p := r.take(n)
	for _, c := range p {
		if !ok(c) {
			r.bad = true
			return ""
		}
	}
	return r.str(p)
}

// hostnameChar is Redis's cluster-announce-hostname character set.
func hostnameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.'
}

// addrChar admits IPv4 and IPv6 addresses, with a zone.
func addrChar(c byte) bool { return hostnameChar(c) || c == ':' || c == '%' || c == '_' }

func (r *reader) slots(dst *slots.Bitmap) {
	switch r.u8() {
	case 0:
		n := int(r.u16())
		if n*4 > len(r.b) {
			r.bad = true
			return
		}
		for i := 0; i < n; i++ {
			s, e := int(r.u16()), int(r.u16())
			if s > e || e >= slots.Count {
				r.bad = true
				return
			}
			dst.SetRange(s, e)
		}
	case 1:
		for i := range dst {
			dst[i] = r.u64()
		}
	default:
		r.bad = true
	}
}

// Decode parses a message. It never panics and allocates nothing beyond
// what the checked lengths allow.
func Decode(buf []byte) (*Message, error) {
	m := &Message{}
	if err := decodeInto(m, buf); err != nil {
		return nil, err
	}
	return m, nil
}

// decodeInto parses a message into m, which it overwrites whole; the
// gossip section reuses m.Gossip's array when it is large enough. m is
// left in an unspecified state on error. The Bus decodes into messages it
// reuses (a fresh 2 KB Message per received PING and PONG was most of an
// idle cluster node's garbage), and the guard's check decodes into one on
// its stack.
func decodeInto(m *Message, buf []byte) error { return decode(m, buf, reader{}) }

// decode is decodeInto with a reader set up for how the message is used
// (its strings interned, or only checked).
func decode(m *Message, buf []byte, r reader) error {
	if len(buf) < headerFixedLen || len(buf) > MaxMessageSize {
		return errBadMessage
	}
	if buf[0] != 'S' || buf[1] != 'B' {
		return errBadMessage
	}
	if buf[2] != wireVersion {
		return fmt.Errorf("gossip: unsupported bus message version %d", buf[2])
	}
	if int(binary.BigEndian.Uint32(buf[4:8])) != len(buf) {
		return errBadMessage
	}
	gossip := m.Gossip[:0]
	*m = Message{Type: MsgType(buf[3])}
	r.b = buf[8:]
	m.Sender = r.id()
	m.To = r.id()
	m.CurrentEpoch = r.u64()
	m.ConfigEpoch = r.u64()
	m.Offset = int64(r.u64())
	m.Flags = Flags(r.u16())
	m.MFlags = r.u8()
	m.Master = r.id()
	m.IP = r.str8(maxIPLen, addrChar)
	m.Port = r.u16()
	m.CPort = r.u16()
	m.PPort = r.u16()
	m.Hostname = r.str8(255, hostnameChar)
	m.ToIP = r.str8(maxIPLen, addrChar)
	r.slots(&m.Slots)
	if m.Sender == "" {
		r.bad = true
	}
	switch m.Type {
	case MsgPing, MsgPong, MsgMeet:
		n := int(r.u16())
		if n*gossipEntryMin > len(r.b) {
			return errBadMessage
		}
		if n > 0 && !r.check { // a check reads every entry into one
			if cap(gossip) >= n {
				m.Gossip = gossip[:n] // every field is set below
			} else {
				m.Gossip = make([]GossipEntry, n)
			}
		}
		var checked GossipEntry
		for i := 0; i < n && !r.bad; i++ {
			g := &checked
			if !r.check {
				g = &m.Gossip[i]
			}
			g.ID = r.id()
			g.PingSent = r.u32()
			g.PongReceived = r.u32()
			g.IP = r.str8(maxIPLen, addrChar)
			g.Port = r.u16()
			g.CPort = r.u16()
			g.PPort = r.u16()
			g.Flags = Flags(r.u16())
			if g.ID == "" {
				r.bad = true
			}
		}
	case MsgFail:
		m.About = r.id()
		if m.About == "" {
			r.bad = true
		}
	case MsgUpdate:
		u := &Update{}
		u.ID = r.id()
		u.ConfigEpoch = r.u64()
		r.slots(&u.Slots)
		if u.ID == "" {
			r.bad = true
		}
		m.Update = u
	case MsgPublish, MsgPublishShard:
		m.Channel = r.body(int(r.u32()))
		m.Payload = r.body(int(r.u32()))
	case MsgAuthRequest, MsgAuthAck, MsgMFStart:
	default:
		return fmt.Errorf("gossip: unknown bus message type %d", m.Type)
	}
	if r.bad || len(r.b) != 0 {
		return errBadMessage
	}
	return nil
}

// ValidID reports whether id is a node id: 40 characters of [a-z0-9]
// (Redis's verifyClusterNodeId; ids it generates are lowercase hex).
func ValidID(id string) bool { return validID(id) }

func validID[T string | []byte](id T) bool {
	if len(id) != idLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
