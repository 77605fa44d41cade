package replication

import (
	"bytes"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"
)

func TestBacklogRingKeepsTheNewestBytes(t *testing.T) {
	b := NewBacklog(8, 100)
	if b.First() != 101 || b.End() != 100 || !b.Contains(101) || b.Contains(100) {
		t.Fatalf("empty: first %d end %d", b.First(), b.End())
	}
	b.Write([]byte("abcde"))
	if got := b.AppendFrom(nil, 101); string(got) != "abcde" {
		t.Fatalf("got %q", got)
	}
	b.Write([]byte("fghij")) // wraps: holds "cdefghij"
	if b.First() != 103 || b.End() != 110 || b.Histlen() != 8 {
		t.Fatalf("first %d end %d hist %d", b.First(), b.End(), b.Histlen())
	}
	if b.Contains(102) || !b.Contains(103) || !b.Contains(111) || b.Contains(112) {
		t.Fatal("Contains bounds")
	}
	if got := b.AppendFrom(nil, 103); string(got) != "cdefghij" {
		t.Fatalf("got %q", got)
	}
	if got := b.AppendFrom(nil, 108); string(got) != "hij" {
		t.Fatalf("got %q", got)
	}
	b.Write([]byte("0123456789xyz")) // longer than the ring
	if got := b.AppendFrom(nil, b.First()); string(got) != "56789xyz" {
		t.Fatalf("got %q", got)
	}
	b.Resize(4)
	if got := b.AppendFrom(nil, b.First()); string(got) != "9xyz" || b.End() != 123 {
		t.Fatalf("after resize %q end %d", got, b.End())
	}
}

// A ring of several blocks matches a plain copy of the stream across
// block boundaries, wraps and resizes, and allocates a block only when a
// byte lands in it: a quiet master's 1 MB backlog costs one 16 KB block.
func TestBacklogBlocksHoldTheStreamAndAreAllocatedWhenWritten(t *testing.T) {
	size := 3*backlogChunk + 100
	b := NewBacklog(size, 0)
	b.Write([]byte("*1\r\n$4\r\nPING\r\n"))
	for i, c := range b.chunks {
		if (c != nil) != (i == 0) {
			t.Fatalf("after 14 bytes block %d allocated: %v", i, c != nil)
		}
	}
	stream := []byte("*1\r\n$4\r\nPING\r\n")
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		p := make([]byte, rng.IntN(2*backlogChunk+backlogChunk/2))
		for j := range p {
			p[j] = byte(rng.Uint32())
		}
		b.Write(p)
		stream = append(stream, p...)
		if i == 120 {
			size = backlogChunk + 7
			b.Resize(size)
		}
		want := stream[max(0, len(stream)-size):]
		if b.End() != int64(len(stream)) || b.Histlen() != len(want) {
			t.Fatalf("write %d: end %d histlen %d, want %d %d", i, b.End(), b.Histlen(), len(stream), len(want))
		}
		if got := b.AppendFrom(nil, b.First()); !bytes.Equal(got, want) {
			t.Fatalf("write %d: the ring's %d bytes differ from the stream's last %d", i, len(got), len(want))
		}
		from := b.First() + int64(rng.IntN(b.Histlen()+1))
		if got := b.AppendFrom([]byte("x"), from); !bytes.Equal(got[1:], stream[from-1:]) || got[0] != 'x' {
			t.Fatalf("write %d: bytes from %d differ", i, from)
		}
	}
}

// blockedConn is a net.Conn whose writes never complete until it is
// closed (a replica that stopped reading).
type blockedConn struct {
	net.Conn
	closed chan struct{}
	once   sync.Once
}

func (c *blockedConn) Write(p []byte) (int, error) {
	<-c.closed
	return 0, net.ErrClosed
}
func (c *blockedConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}
func (c *blockedConn) SetWriteDeadline(time.Time) error { return nil }

func TestLinkOverOutputLimitIsDropped(t *testing.T) {
	dropped := make(chan string, 1)
	m := NewMaster(Config{
		BacklogSize: func() int { return 1 << 10 },
		OutputLimit: func() (uint64, uint64, int64) { return 4 << 10, 0, 0 },
		OnDrop:      func(_ *Link, reason string) { dropped <- reason },
	})
	conn := &blockedConn{closed: make(chan struct{})}
	l, full := m.Attach(conn, PsyncRequest{ReplID: "?", From: -1})
	if !full {
		t.Fatal("a first sync must be full")
	}
	// The stream is queued from the sync's instant on, held while the RDB
	// would be sent: the output limit applies to it all the same.
	m.StartStreamAt([]*Link{l})
	// The writer is stuck: the writes pile up until the hard limit drops
	// the link, and Propagate never waits.
	start := time.Now()
	for i := 0; i < 200 && m.NumLinks() == 1; i++ {
		m.Propagate(0, [][][]byte{{[]byte("SET"), []byte("k"), bytes.Repeat([]byte("v"), 100)}})
	}
	if m.NumLinks() != 0 {
		t.Fatal("the link was not dropped")
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Propagate blocked for %v", d)
	}
	select {
	case <-l.Done():
	case <-time.After(time.Second):
		t.Fatal("Done not closed")
	}
	select {
	case r := <-dropped:
		if r != "output buffer limit" {
			t.Fatalf("reason %q", r)
		}
	case <-time.After(time.Second):
		t.Fatal("OnDrop not called")
	}
	// The backlog still took every write: another replica may continue.
	if off := m.Offset(); off == 0 {
		t.Fatal("offset did not advance")
	}
}
