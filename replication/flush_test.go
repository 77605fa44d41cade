package replication

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/shoal-db/shoal/internal/rawsock"
	"github.com/stretchr/testify/require"
)

// tcpPair returns the two ends of a loopback TCP connection, the master's
// wrapped as the server wraps clients' (rawsock: WriteNow).
func tcpPair(t *testing.T) (master net.Conn, replica net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	replica, err = net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	m, err := ln.Accept()
	require.NoError(t, err)
	master = rawsock.Wrap(m)
	t.Cleanup(func() { _ = replica.Close(); _ = master.Close() })
	return master, replica
}

// What PropagateLater queues reaches the replica only at FlushOwed, in the
// stream's order with what Propagate sent meanwhile, also when the socket
// takes only part of it and the writer writes the rest.
func TestPropagateLaterIsWrittenByFlushOwedInOrder(t *testing.T) {
	m := NewMaster(Config{BacklogSize: func() int { return 64 << 20 }})
	mc, rc := tcpPair(t)
	l, full := m.Attach(mc, PsyncRequest{ReplID: "?", From: -1})
	require.True(t, full)
	m.StartStreamAt([]*Link{l})
	l.StartStream()
	if l.writeNow == nil {
		t.Skip("no WriteNow on this system")
	}
	r := bufio.NewReader(rc)
	expect := func(key string, size int) {
		t.Helper()
		_ = rc.SetReadDeadline(time.Now().Add(10 * time.Second))
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		if line == "*2\r\n" { // the stream's SELECT
			for range 4 {
				_, err = r.ReadString('\n')
				require.NoError(t, err)
			}
			line, err = r.ReadString('\n')
			require.NoError(t, err)
		}
		require.Equal(t, "*3\r\n", line)
		for _, want := range []string{"SET", key} {
			_, err = r.ReadString('\n')
			require.NoError(t, err)
			got, err := r.ReadString('\n')
			require.NoError(t, err)
			require.Equal(t, want+"\r\n", got)
		}
		hdr, err := r.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "$"+strconv.Itoa(size)+"\r\n", hdr)
		_, err = io.CopyN(io.Discard, r, int64(size)+2)
		require.NoError(t, err)
	}
	// Once this is read, the writer has taken the wake-ups so far.
	m.Propagate(0, [][][]byte{{[]byte("SET"), []byte("first"), []byte("v")}})
	expect("first", 1)

	// PropagateLater does not wake the writer: the caller writes at
	// FlushOwed. Checked on the wake-up channel, not on the socket: a
	// wake-up the writer had not taken yet (StartStream's, or the first
	// Propagate's when the writer took both batches in one write) may
	// still write k0 early, in order, and CI once saw exactly that. Such a
	// wake-up carries no bytes once "first" is read, so it is taken here.
	select {
	case <-l.wake:
	default:
	}
	m.PropagateLater(0, [][][]byte{{[]byte("SET"), []byte("k0"), []byte("v")}})
	require.Zero(t, len(l.wake), "PropagateLater woke the writer")

	// Enough to fill the socket: the rest goes to the writer, before what
	// Propagate adds after.
	big := make([]byte, 64<<10)
	const later = 64
	for i := 1; i <= later; i++ {
		m.PropagateLater(0, [][][]byte{{[]byte("SET"), []byte("k" + strconv.Itoa(i)), big}})
	}
	m.FlushOwed()
	m.Propagate(0, [][][]byte{{[]byte("SET"), []byte("last"), []byte("v")}})
	m.FlushOwed() // nothing owed: a no-op

	expect("k0", 1)
	for i := 1; i <= later; i++ {
		expect("k"+strconv.Itoa(i), len(big))
	}
	expect("last", 1)
	require.Equal(t, m.Offset(), m.BytesOut())
}
