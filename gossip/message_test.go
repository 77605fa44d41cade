package gossip

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"

	"github.com/shoal-db/shoal/slots"
	"github.com/stretchr/testify/require"
)

func sampleMessage() *Message {
	m := &Message{Type: MsgPing, Sender: strings.Repeat("a", 40), To: strings.Repeat("b", 40),
		CurrentEpoch: 7, ConfigEpoch: 5, Offset: 12345, Flags: FlagMaster, MFlags: MFlagPaused,
		IP: "127.0.0.1", Port: 7000, CPort: 17000, Hostname: "host-1"}
	m.Slots.SetRange(0, 5460)
	m.Slots.Set(10923)
	m.Gossip = []GossipEntry{{ID: strings.Repeat("c", 40), PingSent: 1, PongReceived: 2, IP: "::1", Port: 1, CPort: 2, Flags: FlagSlave | FlagPFail}}
	return m
}

func TestMessageRoundTrip(t *testing.T) {
	m := sampleMessage()
	got, err := Decode(m.Encode())
	require.NoError(t, err)
	require.Equal(t, m, got)

	for _, x := range []*Message{
		{Type: MsgFail, Sender: m.Sender, About: strings.Repeat("d", 40)},
		{Type: MsgUpdate, Sender: m.Sender, Update: &Update{ID: strings.Repeat("e", 40), ConfigEpoch: 9}},
		{Type: MsgPublish, Sender: m.Sender, Channel: []byte("ch"), Payload: []byte("hello")},
		{Type: MsgAuthRequest, Sender: m.Sender, MFlags: MFlagForceAck},
	} {
		got, err := Decode(x.Encode())
		require.NoError(t, err)
		require.Equal(t, x, got)
	}
	// A full bitmap of alternating slots is sent raw (2 KiB), not as ranges.
	alt := &Message{Type: MsgPong, Sender: m.Sender}
	for s := 0; s < 16384; s += 2 {
		alt.Slots.Set(s)
	}
	enc := alt.Encode()
	require.Less(t, len(enc), headerFixedLen+2048+64)
	got, err = Decode(enc)
	require.NoError(t, err)
	require.Equal(t, alt.Slots, got.Slots)
}

// Decoding into a message used before (the Bus reuses the ones it
// decoded) leaves nothing of the earlier message: each decode equals a
// fresh Decode, whatever came before, and a gossip section no larger than
// the last one's is decoded into the same array.
func TestDecodeIntoAReusedMessageKeepsNothingOfTheLastOne(t *testing.T) {
	big := sampleMessage()
	for i := range 3 {
		e := big.Gossip[0]
		e.ID = strings.Repeat(string(rune('f'+i)), 40)
		big.Gossip = append(big.Gossip, e)
	}
	sender := big.Sender
	seq := []*Message{
		big,
		{Type: MsgUpdate, Sender: sender, Update: &Update{ID: strings.Repeat("e", 40), ConfigEpoch: 9}},
		sampleMessage(),
		{Type: MsgPublish, Sender: sender, Channel: []byte("ch"), Payload: []byte("hello")},
		{Type: MsgPong, Sender: sender, Master: strings.Repeat("9", 40)},
		{Type: MsgFail, Sender: sender, About: strings.Repeat("d", 40)},
		big,
	}
	var m Message
	for i, x := range seq {
		before := m.Gossip
		require.NoError(t, decodeInto(&m, x.Encode()), "message %d", i)
		fresh, err := Decode(x.Encode())
		require.NoError(t, err)
		require.Equal(t, fresh, &m, "message %d", i)
		if len(m.Gossip) > 0 && len(m.Gossip) <= cap(before) {
			require.Same(t, &before[:1][0], &m.Gossip[0], "message %d: a new gossip array", i)
		}
	}
	// A malformed message after a good one is refused.
	require.Error(t, decodeInto(&m, big.Encode()[:headerFixedLen]))
}

// TestDecodeNeverPanics feeds truncated, corrupted and random inputs.
func TestDecodeNeverPanics(t *testing.T) {
	enc := sampleMessage().Encode()
	for i := 0; i < len(enc); i++ {
		_, err := Decode(enc[:i])
		require.Error(t, err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		b := append([]byte(nil), enc...)
		for k := 0; k < 1+rng.IntN(4); k++ {
			b[rng.IntN(len(b))] = byte(rng.Uint32())
		}
		_, _ = Decode(b)
	}
	// A gossip count far larger than the bytes that follow is refused
	// before anything is allocated.
	m := &Message{Type: MsgPing, Sender: strings.Repeat("a", 40)}
	b := m.Encode()
	b[len(b)-2], b[len(b)-1] = 0xff, 0xff
	_, err := Decode(b)
	require.Error(t, err)
	_, err = Decode(nil)
	require.Error(t, err)
	// An address or hostname that would corrupt nodes.conf is refused.
	for _, bad := range []func(m *Message){
		func(m *Message) { m.Hostname = "a b" },
		func(m *Message) { m.Hostname = "h\nx" },
		func(m *Message) { m.IP = "1.2.3.4 x" },
		func(m *Message) { m.Gossip[0].IP = "10.0.0.1@1" },
	} {
		m := sampleMessage()
		bad(m)
		_, err := Decode(m.Encode())
		require.Error(t, err)
	}
	v2 := sampleMessage().Encode()
	v2[2] = 2
	_, err = Decode(v2)
	require.ErrorContains(t, err, "version")
}

// TestSizeHintCoversEncoding: a link's send buffer counts messages by
// sizeHint (they are encoded later, by the sender): their encoded size.
func TestSizeHintCoversEncoding(t *testing.T) {
	var bm slots.Bitmap
	bm.SetRange(0, 5460)
	bm.Set(9000)
	msgs := []*Message{
		{Type: MsgPing, Sender: strings.Repeat("a", 40), IP: "127.0.0.1", ToIP: "10.0.0.2", Hostname: "h.example", Slots: bm,
			Gossip: []GossipEntry{{ID: strings.Repeat("b", 40), IP: "127.0.0.1"}, {ID: strings.Repeat("c", 40), IP: "fd00::2"}}},
		{Type: MsgPublish, Sender: strings.Repeat("a", 40), Channel: []byte("ch"), Payload: make([]byte, 128<<10)},
		{Type: MsgUpdate, Sender: strings.Repeat("a", 40), Update: &Update{ID: strings.Repeat("d", 40), Slots: bm}},
		{Type: MsgFail, Sender: strings.Repeat("a", 40), About: strings.Repeat("e", 40)},
	}
	for _, m := range msgs {
		require.Equal(t, len(m.Encode()), m.sizeHint(), "%s", m.Type)
	}
}

// The three ways a message is decoded agree: checked only (the guard),
// with its strings interned (the Bus) and plainly. The same input is
// refused or accepted by all three, and an accepted one decodes to the
// same message with and without interning, over every message type and
// 20000 corrupted encodings.
func TestDecodeModesAgree(t *testing.T) {
	sender := strings.Repeat("a", 40)
	seq := []*Message{
		sampleMessage(),
		{Type: MsgUpdate, Sender: sender, Update: &Update{ID: strings.Repeat("e", 40), ConfigEpoch: 9}},
		{Type: MsgPublish, Sender: sender, Channel: []byte("ch"), Payload: []byte("hello")},
		{Type: MsgPublishShard, Sender: sender, Channel: []byte("ch")},
		{Type: MsgPong, Sender: sender, Master: strings.Repeat("9", 40), IP: "10.0.0.1", ToIP: "10.0.0.2"},
		{Type: MsgFail, Sender: sender, About: strings.Repeat("d", 40)},
		{Type: MsgAuthRequest, Sender: sender},
	}
	var strs stringTable
	var interned, checked Message
	agree := func(b []byte) error {
		plain, err := Decode(b)
		ierr := decode(&interned, b, reader{strs: &strs})
		cerr := decode(&checked, b, reader{check: true})
		require.Equal(t, err == nil, ierr == nil, "interned decode's verdict: %v vs %v", ierr, err)
		require.Equal(t, err == nil, cerr == nil, "checked decode's verdict: %v vs %v", cerr, err)
		if err == nil {
			require.Equal(t, plain, &interned)
		}
		return err
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, m := range seq {
		enc := m.Encode()
		require.NoError(t, agree(enc), "%s", m.Type)
		for range 20000 / len(seq) {
			b := append([]byte(nil), enc...)
			for range 1 + rng.IntN(3) {
				b[rng.IntN(len(b))] = byte(rng.Uint32())
			}
			_ = agree(b)
		}
	}
	// Only checked, nothing is copied out of the buffer.
	enc := seq[2].Encode()
	require.NoError(t, decode(&checked, enc, reader{check: true}))
	require.Nil(t, checked.Payload)
}

// A node id, an address or a hostname decoded before is not made again:
// a PING decoded a second time into the same message allocates nothing,
// and its strings are those of the first decode.
func TestInternedDecodeAllocatesNothingTheSecondTime(t *testing.T) {
	enc := sampleMessage().Encode()
	var strs stringTable
	var m Message
	require.NoError(t, decode(&m, enc, reader{strs: &strs}))
	first := m.Sender
	allocs := testing.AllocsPerRun(20, func() {
		if err := decode(&m, enc, reader{strs: &strs}); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
	require.Same(t, unsafe.StringData(first), unsafe.StringData(m.Sender))
	// A table full of made-up ids starts again rather than grow.
	for i := range maxInterned + 10 {
		strs.intern([]byte(fmt.Sprintf("%040d", i)))
	}
	require.LessOrEqual(t, len(strs.m), maxInterned)
}

// AppendEncoded appends: what was in the buffer stays, and the message
// after it is Encode's, length field included.
func TestAppendEncodedKeepsWhatWasThere(t *testing.T) {
	m := sampleMessage()
	got := m.AppendEncoded([]byte("prefix"))
	require.Equal(t, append([]byte("prefix"), m.Encode()...), got)
}

// A message given back to the pool is cleared at once, and the pool hands
// out only cleared messages; a nil pool allocates.
func TestMessagePoolHandsOutClearedMessages(t *testing.T) {
	var mp MessagePool
	for range 10 {
		m := sampleMessage()
		mp.Put(m)
		require.Equal(t, Message{}, *m)
		require.Equal(t, Message{}, *mp.get())
	}
	var none *MessagePool
	require.NotNil(t, none.get())
	none.Put(sampleMessage()) // nothing to give back to
}

// The guard's check of a PING allocates nothing: it keeps no string, no
// body and no gossip entry.
func TestCheckedDecodeAllocatesNothing(t *testing.T) {
	enc := sampleMessage().Encode()
	allocs := testing.AllocsPerRun(20, func() {
		if err := checkBusMessage(enc); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
}
