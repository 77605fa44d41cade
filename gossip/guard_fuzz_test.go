package gossip

import (
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

// Fuzz targets for everything that reads the bus port:
//
//	go test -run '^$' -fuzz '^FuzzGuardStream$' -fuzztime 10m -parallel 1 ./gossip
//	go test -run '^$' -fuzz '^FuzzGuardPacket$' -fuzztime 10m -parallel 1 ./gossip
//	go test -run '^$' -fuzz '^FuzzBusMessageDecode$' -fuzztime 10m -parallel 1 ./gossip

// memConn is a net.Conn whose reads come from a buffer.
type memConn struct {
	r      io.Reader
	closed bool
}

func (c *memConn) Read(p []byte) (int, error)         { return c.r.Read(p) }
func (c *memConn) Write(p []byte) (int, error)        { return len(p), nil }
func (c *memConn) Close() error                       { c.closed = true; return nil }
func (c *memConn) LocalAddr() net.Addr                { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (c *memConn) RemoteAddr() net.Addr               { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2} }
func (c *memConn) SetDeadline(t time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(t time.Time) error { return nil }

func streamSeeds() [][]byte {
	good := sampleMessage().Encode()
	seeds := [][]byte{
		append([]byte{mlPing}, testMap("SeqNo", 7, "Node", "n1")...),
		append(append([]byte{mlUser}, testMap("UserMsgLen", len(good))...), good...),
		append(append(append([]byte{mlPushPull}, testMap("Nodes", 1, "UserStateLen", 0, "Join", nil)...),
			nodeState([]byte{1, 5, 2, 0, 0, 0})...), append([]byte{mlAckResp}, testMap("SeqNo", 7)...)...),
		append([]byte{mlErr}, testMap("Error", "boom")...),
	}
	for _, h := range hostileStreams() {
		seeds = append(seeds, h)
	}
	return seeds
}

// FuzzGuardStream: whatever a connection carries, the guard hands
// memberlist a prefix of it (whole checked messages, byte for byte), never
// holds more than arrived, and returns its in-flight budget.
func FuzzGuardStream(f *testing.F) {
	for _, s := range streamSeeds() {
		f.Add(s, false)
	}
	f.Add(append([]byte{mlEncrypt, 0, 0, 0, 3}, 1, 2, 3), true)
	f.Fuzz(func(t *testing.T, data []byte, encrypted bool) {
		g := newBusGuard(zap.NewNop())
		enc := noEncryption
		if encrypted {
			enc = func() ([][]byte, bool) { return [][]byte{make([]byte, 16)}, true }
		}
		conn := &memConn{r: bytes.NewReader(data)}
		c := g.wrap(conn, enc)
		out, err := io.ReadAll(io.LimitReader(c, int64(len(data))+1))
		if err != nil && err != errGuardRejected {
			t.Fatalf("unexpected error %v", err)
		}
		if !bytes.Equal(out, data[:len(out)]) {
			t.Fatalf("replayed bytes differ from the input")
		}
		if err == errGuardRejected && (!conn.closed || g.rejected.Load() != 1) {
			t.Fatalf("rejected stream not closed or not counted")
		}
		_ = c.Close()
		if n := g.inflight.Load(); n != 0 {
			t.Fatalf("%d in-flight bytes not returned", n)
		}
	})
}

// FuzzGuardPacket: the packet check never panics, and a packet it passes
// has only checked parts.
func FuzzGuardPacket(f *testing.F) {
	ping := append([]byte{mlPing}, testMap("SeqNo", 1, "Node", "n")...)
	f.Add(ping)
	f.Add(append([]byte{mlAlive}, testMap("Incarnation", 1, "Node", "n", "Vsn", []byte{1, 5, 2, 0, 0, 0})...))
	f.Add(append([]byte{mlUser}, sampleMessage().Encode()...))
	f.Add(append(append([]byte{mlCompound, 2, 0, byte(len(ping)), 0, byte(len(ping))}, ping...), ping...))
	f.Add(append([]byte{mlHasCrc, 0, 0, 0, 0}, ping...))
	f.Add(userMsgBomb())
	for _, h := range hostilePackets() {
		f.Add(h)
	}
	for _, h := range hostileStreams() {
		f.Add(h)
	}
	key := [][]byte{make([]byte, 16)}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := validatePacket(data)
		if err == nil && len(data) > 0 && (data[0] == mlCompress || data[0] == mlHasLabel) {
			t.Fatalf("type %d passed", data[0])
		}
		_ = authenticPacket(key, data)
	})
}

// FuzzBusMessageDecode: shoal's own decoder never panics, and what it
// accepts survives an encode/decode round trip unchanged.
func FuzzBusMessageDecode(f *testing.F) {
	m := sampleMessage()
	f.Add(m.Encode())
	for _, x := range []*Message{
		{Type: MsgFail, Sender: m.Sender, About: strings.Repeat("d", 40)},
		{Type: MsgUpdate, Sender: m.Sender, Update: &Update{ID: strings.Repeat("e", 40), ConfigEpoch: 9}},
		{Type: MsgPublish, Sender: m.Sender, Channel: []byte("ch"), Payload: []byte("hello")},
		{Type: MsgAuthRequest, Sender: m.Sender, MFlags: MFlagForceAck},
	} {
		f.Add(x.Encode())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := Decode(data)
		if err != nil {
			return
		}
		again, err := Decode(got.Encode())
		if err != nil {
			t.Fatalf("re-encoded message refused: %v", err)
		}
		if !messagesEqual(got, again) {
			t.Fatalf("round trip changed the message:\n%+v\n%+v", got, again)
		}
	})
}

func messagesEqual(a, b *Message) bool {
	ea, eb := a.Encode(), b.Encode()
	return bytes.Equal(ea, eb)
}
