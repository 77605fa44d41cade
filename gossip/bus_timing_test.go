package gossip

import (
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/stretchr/testify/require"
)

// timingTransport is a MemTransport that reports the timeout of every
// stream dial and, for every stream it hands to memberlist, how far ahead
// the deadline memberlist arms on it lies.
type timingTransport struct {
	*MemTransport
	dials     chan time.Duration
	deadlines chan time.Duration
	streams   chan net.Conn
}

func newTimingTransport(mt *MemTransport) *timingTransport {
	t := &timingTransport{MemTransport: mt, dials: make(chan time.Duration, 64),
		deadlines: make(chan time.Duration, 64), streams: make(chan net.Conn)}
	go func() {
		for {
			select {
			case c := <-mt.StreamCh():
				select {
				case t.streams <- deadlineConn{Conn: c, armed: t.deadlines}:
				case <-mt.done:
					_ = c.Close()
					return
				}
			case <-mt.done:
				return
			}
		}
	}()
	return t
}

func record(ch chan time.Duration, d time.Duration) {
	select {
	case ch <- d:
	default: // the test reads the first few only
	}
}

func (t *timingTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	record(t.dials, timeout)
	return t.MemTransport.DialTimeout(addr, timeout)
}

func (t *timingTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	record(t.dials, timeout)
	return t.MemTransport.DialAddressTimeout(a, timeout)
}

func (t *timingTransport) StreamCh() <-chan net.Conn { return t.streams }

type deadlineConn struct {
	net.Conn
	armed chan time.Duration
}

func (c deadlineConn) SetDeadline(t time.Time) error {
	if !t.IsZero() {
		record(c.armed, time.Until(t))
	}
	return c.Conn.SetDeadline(t)
}

// TestBusStreamTimeoutFollowsConfigSet: memberlist's Config is read once,
// at Create, so CONFIG SET cluster-node-timeout used to leave its stream
// timeout (5 s for the default 15 s) in place: after lowering the timeout
// to 1 s a reliable send (MEET, UPDATE, a vote) to an unreachable peer
// still held a sender for 5 s, and after raising it an accepted stream was
// still cut at the old bound. Both now follow the node timeout (500 ms for
// 1 s).
func TestBusStreamTimeoutFollowsConfigSet(t *testing.T) {
	network := &MemNetwork{}
	trs := []*timingTransport{newTimingTransport(network.NewTransport()), newTimingTransport(network.NewTransport())}
	opts := DefaultOptions()
	opts.NodeTimeout = 15 * time.Second
	buses := make([]*Bus, len(trs))
	defer func() { stopAll(buses) }()
	for i, tr := range trs {
		b, err := New(Config{Options: opts, IP: "127.0.0.1", Port: 7000 + i, ClusterPort: tr.Port(), Transport: tr,
			MemberName: fmt.Sprintf("timing%d", i), Seed: uint64(i + 1)})
		require.NoError(t, err)
		require.NoError(t, b.Start())
		buses[i] = b
	}
	lowered := opts
	lowered.NodeTimeout = time.Second
	want := 500 * time.Millisecond
	for _, b := range buses {
		b.SetOptions(lowered)
	}
	peer := buses[1].Myself()
	require.NoError(t, buses[0].Meet([]byte(peer.IP), []byte(strconv.Itoa(peer.Port)), []byte(strconv.Itoa(peer.CPort))))

	select {
	case d := <-trs[0].dials:
		require.Equal(t, want, d, "the first stream dial after CONFIG SET cluster-node-timeout 1000")
	case <-time.After(20 * time.Second):
		t.Fatal("no stream dialed for MEET")
	}
	select {
	case d := <-trs[1].deadlines:
		require.LessOrEqual(t, d, want, "the deadline armed on the accepted MEET stream")
	case <-time.After(20 * time.Second):
		t.Fatal("no deadline armed on the accepted stream")
	}
}

// TestStreamTimeoutKeepsProbeDeadlines: only memberlist's own TCPTimeout
// is swapped for the current one; a TCP ping's dial (what is left of its
// probe deadline) keeps its timeout.
func TestStreamTimeoutKeepsProbeDeadlines(t *testing.T) {
	var current atomic.Int64
	st := streamTimeout{created: 5 * time.Second, current: &current}
	require.Equal(t, 5*time.Second, st.dial(5*time.Second), "nothing set yet")
	current.Store(int64(500 * time.Millisecond))
	require.Equal(t, 500*time.Millisecond, st.dial(5*time.Second))
	require.Equal(t, 347*time.Millisecond, st.dial(347*time.Millisecond), "a ping's remaining probe time")
}
