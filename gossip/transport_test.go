package gossip

import (
	"io"
	"log"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The bus transport hands each packet on in a buffer of its own, of the
// packet's size (it reads every datagram into one buffer it reuses), and
// carries streams both ways.
func TestBusTransportPacketsAndStreams(t *testing.T) {
	tr, err := newBusTransport("127.0.0.1", 0, log.New(io.Discard, "", 0))
	require.NoError(t, err)
	defer func() { _ = tr.Shutdown() }()
	ip, port, err := tr.FinalAdvertiseAddr("", 0)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", ip.String())
	require.Equal(t, tr.Port(), port)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(tr.Port()))

	peer, err := newBusTransport("127.0.0.1", 0, log.New(io.Discard, "", 0))
	require.NoError(t, err)
	defer func() { _ = peer.Shutdown() }()
	recv := func() []byte {
		select {
		case p := <-tr.PacketCh():
			require.Equal(t, peer.Port(), p.From.(*net.UDPAddr).Port)
			return p.Buf
		case <-time.After(10 * time.Second):
			t.Fatal("no packet")
			return nil
		}
	}
	_, err = peer.WriteTo([]byte("first packet"), addr)
	require.NoError(t, err)
	first := recv()
	_, err = peer.WriteTo([]byte("2nd"), addr)
	require.NoError(t, err)
	second := recv()
	require.Equal(t, "first packet", string(first))
	require.Equal(t, "2nd", string(second))
	require.Less(t, cap(first), 64, "a copy of the packet's size, not the 64 KiB read buffer")

	c, err := peer.DialTimeout(addr, 5*time.Second)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("stream"))
	require.NoError(t, err)
	select {
	case s := <-tr.StreamCh():
		defer s.Close()
		buf := make([]byte, 6)
		_, err = io.ReadFull(s, buf)
		require.NoError(t, err)
		require.Equal(t, "stream", string(buf))
	case <-time.After(10 * time.Second):
		t.Fatal("no stream")
	}
}
