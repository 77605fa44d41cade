package gossip

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/shoal-db/shoal/internal/testharness"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// testMap encodes a msgpack map of string keys; values are uint64, int
// (small non-negative), string, []byte (as bin), []int (array) or nil.
func testMap(kv ...any) []byte {
	b := []byte{0x80 | byte(len(kv)/2)}
	for i := 0; i < len(kv); i += 2 {
		b = testStr(b, kv[i].(string))
		switch v := kv[i+1].(type) {
		case uint64:
			b = append(b, 0xcf)
			b = binary.BigEndian.AppendUint64(b, v)
		case int:
			b = append(b, 0xce)
			b = binary.BigEndian.AppendUint32(b, uint32(v))
		case string:
			b = testStr(b, v)
		case []byte:
			b = append(b, 0xc4, byte(len(v)))
			b = append(b, v...)
		case []int:
			b = append(b, 0x90|byte(len(v)))
			for _, x := range v {
				b = append(b, byte(x))
			}
		case nil:
			b = append(b, 0xc0)
		}
	}
	return b
}

func testStr(b []byte, s string) []byte {
	b = append(b, 0xa0|byte(len(s)))
	return append(b, s...)
}

// userMsgBomb is the attack of issue 15: a stream message of type userMsg
// whose header claims 1 TiB. memberlist v0.6.0 allocated the claimed length
// at once: fatal error: runtime: out of memory.
func userMsgBomb() []byte {
	return append([]byte{mlUser}, testMap("UserMsgLen", uint64(1)<<40)...)
}

func nodeState(vsn []byte) []byte {
	return testMap("Name", "evil", "Addr", []byte{127, 0, 0, 1}, "Port", 7000, "Meta", []byte("x"),
		"Incarnation", 1, "State", 0, "Vsn", vsn)
}

// hostileStreams are stream messages that crashed or could crash a node
// through memberlist, each with what it does there.
func hostileStreams() map[string][]byte {
	pp := func(nodes, userState uint64, states ...[]byte) []byte {
		b := append([]byte{mlPushPull}, testMap("Nodes", nodes, "UserStateLen", userState, "Join", nil)...)
		for _, s := range states {
			b = append(b, s...)
		}
		return b
	}
	return map[string][]byte{
		"userMsg 1 TiB":        userMsgBomb(),
		"pushPull 2^40 nodes":  pp(1<<40, 0),
		"pushPull 1M nodes":    pp(1<<20, 0), // within memberlist's cap: 1M states allocated at once
		"pushPull user state":  pp(0, 1<<40),
		"pushPull short Vsn":   pp(1, 0, nodeState([]byte{1})), // verifyProtocol indexes Vsn[1..4]: panic
		"compressed":           append([]byte{mlCompress}, testMap("Algo", 0, "Buf", []byte{1, 2, 3})...),
		"labelled":             {mlHasLabel, 3, 'a', 'b', 'c'},
		"unknown type":         {200, 1, 2, 3},
		"encrypted, no secret": {mlEncrypt, 0xff, 0xff, 0xff, 0xff},
	}
}

// hostilePackets are UDP payloads memberlist would act on badly.
func hostilePackets() map[string][]byte {
	alive := func(vsn []byte) []byte {
		return append([]byte{mlAlive}, testMap("Incarnation", 9, "Node", "evil", "Addr", []byte{127, 0, 0, 1},
			"Port", 7000, "Vsn", vsn)...)
	}
	return map[string][]byte{
		"alive short Vsn": alive([]byte{1, 2}),
		"compressed":      append([]byte{mlCompress}, testMap("Algo", 0, "Buf", []byte{1, 2, 3})...),
		"bad user msg":    {mlUser, 'S', 'B', 1, 0, 0, 0, 0, 9},
		"compound lies":   {mlCompound, 2, 0, 5, 0xff, 0xff, mlPing, 0x80},
		"nested compound": {mlCompound, 1, 0, 3, mlCompound, 0, 0},
	}
}

func TestGuardUserMsgBombIs22Bytes(t *testing.T) {
	require.Len(t, userMsgBomb(), 22)
}

func TestGuardValidators(t *testing.T) {
	good := sampleMessage().Encode()
	okStreams := map[string][]byte{
		"ping":     append([]byte{mlPing}, testMap("SeqNo", 7, "Node", "n1")...),
		"user":     append(append([]byte{mlUser}, testMap("UserMsgLen", len(good))...), good...),
		"pushPull": append(append(append([]byte{mlPushPull}, testMap("Nodes", 2, "UserStateLen", 0, "Join", nil)...), nodeState([]byte{1, 5, 2, 0, 0, 0})...), nodeState(nil)...),
		"ack":      append([]byte{mlAckResp}, testMap("SeqNo", 7, "Payload", []byte{})...),
		"vsn array": append(append([]byte{mlPushPull}, testMap("Nodes", 1, "UserStateLen", 0)...),
			testMap("Name", "a", "Vsn", []int{1, 5, 2, 0, 0, 0})...),
	}
	for name, msg := range okStreams {
		src := &sliceStreamSource{b: msg, budget: 1}
		require.NoError(t, validateStreamMessage(src, false), name)
		require.Empty(t, src.b, name)
	}
	for name, msg := range hostileStreams() {
		require.Error(t, validateStreamMessage(&sliceStreamSource{b: msg, budget: 1}, false), name)
	}
	ping := append([]byte{mlPing}, testMap("SeqNo", 1, "Node", "n")...)
	okPackets := map[string][]byte{
		"ping":     ping,
		"alive":    append([]byte{mlAlive}, testMap("Incarnation", 1, "Node", "n", "Vsn", []byte{1, 5, 2, 0, 0, 0})...),
		"user":     append([]byte{mlUser}, good...),
		"compound": append(append([]byte{mlCompound, 2, 0, byte(len(ping)), 0, byte(len(ping))}, ping...), ping...),
		"crc":      append([]byte{mlHasCrc, 0, 0, 0, 0}, ping...),
	}
	for name, p := range okPackets {
		require.NoError(t, validatePacket(p), name)
	}
	for name, p := range hostilePackets() {
		require.Error(t, validatePacket(p), name)
	}
	// A repeated length field (in another letter case) is refused: the
	// value checked must be the value memberlist uses.
	dup := append([]byte{mlUser}, testMap("UserMsgLen", 3, "usermsglen", 5)...)
	require.Error(t, validateStreamMessage(&sliceStreamSource{b: append(dup, 1, 2, 3, 4, 5), budget: 1}, false))
}

// sliceStreamSource is a stream source over memory with a budget, as the
// connection's streamSource has.
type sliceStreamSource struct {
	b      []byte
	budget int
}

func (s *sliceStreamSource) grant(n int) { s.budget += n }

func (s *sliceStreamSource) take(n int) ([]byte, error) {
	if n < 0 || n > s.budget {
		return nil, errGuardBudget
	}
	if n > len(s.b) {
		return nil, errGuardTruncated
	}
	s.budget -= n
	p := s.b[:n]
	s.b = s.b[n:]
	return p, nil
}

// TestGuardConnStreamsMessageByMessage: a connection carrying two valid
// messages then garbage yields exactly the two messages' bytes, then an
// error; the in-flight budget is returned.
func TestGuardConnStreamsMessageByMessage(t *testing.T) {
	ping := append([]byte{mlPing}, testMap("SeqNo", 1)...)
	ack := append([]byte{mlAckResp}, testMap("SeqNo", 1)...)
	a, b := net.Pipe()
	defer a.Close()
	g := newBusGuard(zap.NewNop())
	c := g.wrap(b, nil)
	go func() {
		_, _ = a.Write(append(append(append([]byte{}, ping...), ack...), userMsgBomb()...))
	}()
	r := bufio.NewReader(c)
	got := make([]byte, len(ping)+len(ack))
	_, err := io.ReadFull(r, got)
	require.NoError(t, err)
	require.Equal(t, append(append([]byte{}, ping...), ack...), got)
	_, err = r.ReadByte()
	require.ErrorIs(t, err, errGuardRejected)
	require.Equal(t, uint64(1), g.rejected.Load())
	require.Zero(t, g.inflight.Load())
	_ = c.Close()
}

// TestGuardLogIsRateLimited: one line per peer host per interval, every
// rejection counted.
func TestGuardLogIsRateLimited(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	g := newBusGuard(zap.New(core))
	for i := 0; i < 100; i++ {
		g.reject(&net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 1000 + i}, "stream", errGuardBudget)
	}
	g.reject(&net.UDPAddr{IP: net.IPv4(10, 0, 0, 2), Port: 5}, "packet", errGuardBudget)
	require.Equal(t, uint64(101), g.rejected.Load())
	require.Equal(t, 2, logs.Len())
	require.Equal(t, "10.0.0.1:1000", logs.All()[0].ContextMap()["peer"])
}

// TestBusSurvivesHostileInput sends issue 15's 22-byte stream header, the
// push/pull variants and hostile packets to a real Bus on loopback: before
// the guard the first one killed the process (fatal out of memory), the
// short-Vsn push/pull panicked. The node must stay up, count every one, and
// go on talking to its peer.
func TestBusSurvivesHostileInput(t *testing.T) {
	if testing.Short() {
		t.Skip("real loopback sockets")
	}
	var buses [2]*Bus
	for i := range buses {
		buses[i] = loopbackBus(t, "", uint64(i+1), testharness.BusPort(t))
	}
	defer func() { stopAll(buses[:]) }()
	require.NoError(t, buses[0].AddSlotsRange([][]byte{[]byte("0"), []byte("16383")}))
	a := buses[0].Myself()
	require.NoError(t, buses[1].Meet([]byte("127.0.0.1"), []byte(strconv.Itoa(a.Port)), []byte(strconv.Itoa(a.CPort))))
	talking := func() bool { return allConnectedOK(buses[:]) }
	testharness.WaitFor(t, 20*time.Second, "2 nodes ok", talking)
	// Legitimate traffic (join push/pull, pings, acks, alive, user
	// messages, compounds) passes the guard.
	require.Zero(t, buses[0].Rejected()+buses[1].Rejected())

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(a.CPort))
	sent := 0
	for name, msg := range hostileStreams() {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err, name)
		_, err = c.Write(msg)
		require.NoError(t, err, name)
		// The guard drops the connection at once.
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err = io.Copy(io.Discard, c)
		require.False(t, isTimeout(err), "%s: connection not dropped", name)
		_ = c.Close()
		sent++
	}
	u, err := net.Dial("udp", addr)
	require.NoError(t, err)
	for _, p := range hostilePackets() {
		_, err = u.Write(p)
		require.NoError(t, err)
		sent++
	}
	_ = u.Close()
	testharness.WaitFor(t, 10*time.Second, "every hostile input counted", func() bool {
		return buses[0].Rejected() >= uint64(sent)
	})
	// Still alive and talking: both keep receiving from each other.
	_, r0, _ := buses[0].Traffic()
	_, r1, _ := buses[1].Traffic()
	testharness.WaitFor(t, 10*time.Second, "bus traffic after the attack", func() bool {
		_, n0, _ := buses[0].Traffic()
		_, n1, _ := buses[1].Traffic()
		return n0 > r0 && n1 > r1 && talking()
	})
	require.Equal(t, uint64(sent), buses[0].Rejected())
	require.Zero(t, buses[1].Rejected())
}

// TestGuardInflightBudget: a stream message cannot hold more than the
// guard's in-flight budget, and what it held is returned when it fails.
func TestGuardInflightBudget(t *testing.T) {
	g := newBusGuard(zap.NewNop())
	g.inflight.Store(guardMaxInflight - 10)
	var held atomic.Int64
	body := bytes.Repeat([]byte{0}, 100)
	src := &streamSource{r: bufio.NewReader(bytes.NewReader(body)), budget: 100, g: g, held: &held}
	_, err := src.take(100)
	require.True(t, errors.Is(err, errGuardBusy))
	require.Equal(t, int64(guardMaxInflight-10), g.inflight.Load())
}

// BenchmarkGuardPacket: the check of a typical gossip packet (a PING with
// one gossip entry, as memberlist's user message).
func BenchmarkGuardPacket(b *testing.B) {
	p := append([]byte{mlUser}, sampleMessage().Encode()...)
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		if err := validatePacket(p); err != nil {
			b.Fatal(err)
		}
	}
}

// TestGuardTransportDialsFromSourceAddr: with bind-source-addr set, the
// bus's outgoing TCP connections leave from it.
func TestGuardTransportDialsFromSourceAddr(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	from := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		from <- c.RemoteAddr().(*net.TCPAddr).IP.String()
		_ = c.Close()
	}()
	gt := &guardTransport{g: newBusGuard(zap.NewNop()), source: func() string { return "127.0.0.2" }}
	c, bound, err := gt.dialFromSource(ln.Addr().String(), 5*time.Second)
	require.NoError(t, err)
	require.True(t, bound)
	_ = c.Close()
	require.Equal(t, "127.0.0.2", <-from)

	gt.source = func() string { return "" }
	_, bound, _ = gt.dialFromSource(ln.Addr().String(), time.Second)
	require.False(t, bound, "no source address: the inner transport dials")
}

// takerTransport is a transport whose packets go to a handler.
type takerTransport struct {
	memberlist.Transport
	handler packetHandler
}

func (t *takerTransport) setPacketHandler(fn packetHandler) { t.handler = fn }

// TestGuardDeliversBusPacketsDirectly: a checked plaintext user message
// (a bus PING) goes from the inner transport's reader straight to the
// bus's handler, not through memberlist; a memberlist packet (a probe's
// ping) still goes to memberlist, and a sealed one too while a cluster
// secret is set.
func TestGuardDeliversBusPacketsDirectly(t *testing.T) {
	inner := &takerTransport{Transport: (&MemNetwork{}).NewTransport()}
	keys := [][]byte(nil)
	gt := newGuardTransport(inner, newBusGuard(zap.NewNop()), func() ([][]byte, bool) { return keys, false }, streamTimeout{})
	defer gt.Shutdown()
	require.NotNil(t, inner.handler, "the guard takes the packets on the reader")
	var got [][]byte
	gt.setUserHandler(func(p []byte) { got = append(got, bytes.Clone(p)) })
	from := netip.MustParseAddrPort("127.0.0.1:1")

	msg := sampleMessage().Encode()
	inner.handler(append([]byte{mlUser}, msg...), from, time.Now())
	require.Len(t, got, 1)
	require.Equal(t, msg, got[0])

	// The reader's buffer is lent: what goes to memberlist is a copy.
	toMemberlist := func(buf []byte) {
		lent := bytes.Clone(buf)
		done := make(chan struct{})
		go func() {
			inner.handler(lent, from, time.Now())
			clear(lent) // the reader reads the next packet into it
			close(done)
		}()
		select {
		case p := <-gt.PacketCh():
			<-done
			require.Equal(t, buf, p.Buf)
			require.Equal(t, net.UDPAddrFromAddrPort(from).String(), p.From.String())
		case <-time.After(10 * time.Second):
			t.Fatal("the packet did not reach memberlist")
		}
	}
	toMemberlist(append([]byte{mlPing}, testMap("SeqNo", 7, "Node", "n1")...))
	require.Len(t, got, 1)

	// With a secret set, a plaintext packet is memberlist's to judge.
	keys = [][]byte{bytes.Repeat([]byte{1}, 16)}
	toMemberlist(append([]byte{mlUser}, msg...))
	require.Len(t, got, 1)
}
