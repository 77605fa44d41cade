package gossip

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRawUDPRoundTrip: the bus's raw UDP reads and sends carry packets and
// peer addresses both ways, on an IPv4 socket and on a dual-stack wildcard
// one (where IPv4 peers are v4-mapped).
func TestRawUDPRoundTrip(t *testing.T) {
	for _, bind := range []string{"127.0.0.1", "0.0.0.0"} {
		t.Run(bind, func(t *testing.T) {
			a, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(bind)})
			require.NoError(t, err)
			defer a.Close()
			b, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			require.NoError(t, err)
			defer b.Close()
			ra, err := newRawUDP(a)
			require.NoError(t, err)
			aPort := uint16(a.LocalAddr().(*net.UDPAddr).Port)
			bAddr := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(b.LocalAddr().(*net.UDPAddr).Port))

			require.NoError(t, ra.writeTo([]byte("ping from a"), bAddr))
			_ = b.SetReadDeadline(time.Now().Add(10 * time.Second))
			buf := make([]byte, 64)
			n, from, err := b.ReadFromUDPAddrPort(buf)
			require.NoError(t, err)
			require.Equal(t, "ping from a", string(buf[:n]))
			require.Equal(t, aPort, from.Port())

			_, err = b.WriteToUDPAddrPort([]byte("pong from b"), netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), aPort))
			require.NoError(t, err)
			_ = a.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, from, err = ra.readFrom(buf)
			require.NoError(t, err)
			require.Equal(t, "pong from b", string(buf[:n]))
			require.Equal(t, bAddr, netip.AddrPortFrom(from.Addr().Unmap(), from.Port()))
		})
	}
}

// TestRawUDPReadEndsOnClose: a read waiting for a packet returns an error
// when the socket closes (the transport's Shutdown).
func TestRawUDPReadEndsOnClose(t *testing.T) {
	a, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	ra, err := newRawUDP(a)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, _, err := ra.readFrom(make([]byte, 16))
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, a.Close())
	select {
	case err := <-done:
		require.Error(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the read did not end when the socket closed")
	}
}

// TestRawUDPAllocatesNothingPerPacket: a send and a receive allocate
// nothing (a closure per call escaped to the heap: two allocations per
// packet of an idle node's gossip).
func TestRawUDPAllocatesNothingPerPacket(t *testing.T) {
	a, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer a.Close()
	ra, err := newRawUDP(a)
	require.NoError(t, err)
	self := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(a.LocalAddr().(*net.UDPAddr).Port))
	_ = a.SetReadDeadline(time.Now().Add(30 * time.Second))
	msg, buf := []byte("to myself"), make([]byte, 64)
	var (
		n          int
		from       netip.AddrPort
		werr, rerr error
	)
	allocs := testing.AllocsPerRun(50, func() {
		if werr = ra.writeTo(msg, self); werr == nil {
			n, from, rerr = ra.readFrom(buf)
		}
	})
	require.NoError(t, werr)
	require.NoError(t, rerr)
	require.Equal(t, "to myself", string(buf[:n]))
	require.Equal(t, self, from)
	require.Zero(t, allocs)
}
