package node

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shoal-db/shoal/internal/testharness"
	"github.com/shoal-db/shoal/resp"
	"github.com/stretchr/testify/require"
)

// countingConn counts the socket writes under a TLS connection.
type countingConn struct {
	net.Conn
	writes atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// tlsPipe is a handshaken server/client TLS pair over net.Pipe, the server
// side on a recordGatherer over a countingConn, as the tls-port listener
// wraps sockets.
func tlsPipe(t *testing.T) (srv *tls.Conn, cli *tls.Conn, sock *countingConn) {
	t.Helper()
	certs := testharness.GenCerts(t)
	kp, err := tls.LoadX509KeyPair(certs.ServerCert, certs.ServerKey)
	require.NoError(t, err)
	a, b := net.Pipe()
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	sock = &countingConn{Conn: a}
	srv = tls.Server(&recordGatherer{Conn: sock}, &tls.Config{Certificates: []tls.Certificate{kp}})
	cli = tls.Client(b, certs.ClientTLS(t, false))
	require.NoError(t, srv.SetDeadline(time.Now().Add(30*time.Second)))
	require.NoError(t, cli.SetDeadline(time.Now().Add(30*time.Second)))
	errc := make(chan error, 1)
	go func() { errc <- cli.Handshake() }()
	require.NoError(t, srv.Handshake())
	require.NoError(t, <-errc)
	return srv, cli, sock
}

// A reply of many TLS records reaches the socket in one write (crypto/tls
// alone writes each record with its own: 13 for 200 KiB), whole and in
// order; a reply of one record is written as it is.
func TestTLSReplyRecordsGathered(t *testing.T) {
	srv, cli, sock := tlsPipe(t)
	for _, size := range []int{100, tlsRecordPlaintext + 1, 200 << 10, outputWriteChunk} {
		reply := bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
		before := sock.writes.Load()
		errc := make(chan error, 1)
		go func() { errc <- writeConn(srv, reply) }()
		got := make([]byte, size)
		_, err := io.ReadFull(cli, got)
		require.NoError(t, err)
		require.NoError(t, <-errc)
		require.Equal(t, reply, got, "size %d", size)
		require.Equal(t, int64(1), sock.writes.Load()-before, "socket writes for a %d-byte reply", size)
	}
}

// Writers on two goroutines (a client's own replies and its push writer)
// each get their reply through whole, one after the other, while one of
// them gathers.
func TestTLSGatheredWritesInterleaveWhole(t *testing.T) {
	srv, cli, _ := tlsPipe(t)
	big := bytes.Repeat([]byte("B"), 100<<10)
	small := bytes.Repeat([]byte("s"), 200)
	const rounds = 20
	var wg sync.WaitGroup
	errs := make(chan error, 2*rounds)
	wg.Add(2)
	go func() {
		defer wg.Done()
		for range rounds {
			errs <- writeConn(srv, big)
		}
	}()
	go func() {
		defer wg.Done()
		for range rounds {
			errs <- writeConn(srv, small)
		}
	}()
	got := make([]byte, rounds*(len(big)+len(small)))
	_, err := io.ReadFull(cli, got)
	require.NoError(t, err)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	// Every run of B's is a whole number of big replies, every run of s's
	// of small ones.
	for len(got) > 0 {
		c := got[0]
		n := bytes.IndexFunc(got, func(r rune) bool { return byte(r) != c })
		if n < 0 {
			n = len(got)
		}
		unit := len(small)
		if c == 'B' {
			unit = len(big)
		}
		require.Zero(t, n%unit, "a run of %d %q bytes", n, c)
		got = got[n:]
	}
}

// A gathered reply to a client that does not read ends when the client is
// killed: kill closes the socket under the tls.Conn (no close_notify), and
// the blocked write returns at once.
func TestTLSGatheredWriteEndsOnKill(t *testing.T) {
	srv, _, sock := tlsPipe(t)
	before := sock.writes.Load()
	errc := make(chan error, 1)
	go func() { errc <- writeConn(srv, bytes.Repeat([]byte("x"), 200<<10)) }()
	deadline := time.Now().Add(30 * time.Second)
	for sock.writes.Load() == before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // the gathered write is under way (net.Pipe blocks it)
	}
	require.Greater(t, sock.writes.Load(), before)
	c := &Client{guard: resp.NewRequestReader(srv, nil)}
	c.kill()
	select {
	case err := <-errc:
		require.Error(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the write did not end when the client was killed")
	}
}
