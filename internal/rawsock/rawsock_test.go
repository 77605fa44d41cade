package rawsock

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// pair returns a wrapped server side and a plain client side of a loopback
// TCP connection.
func pair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	w := Wrap(server)
	t.Cleanup(func() { _ = w.Close(); _ = client.Close() })
	if TCP(w) != server.(*net.TCPConn) {
		t.Fatal("TCP does not return the wrapped socket")
	}
	return w, client
}

// receiveWhole runs write on its own goroutine (it may need the reader to
// make room) and checks that client receives exactly want.
func receiveWhole(t *testing.T, client net.Conn, want []byte, write func() (int64, error)) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		n, err := write()
		if err == nil && n != int64(len(want)) {
			err = errors.New("short write")
		}
		done <- err
	}()
	got := make([]byte, len(want))
	_ = client.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.ReadFull(client, got); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("bytes differ")
	}
}

func TestReadWriteLikeTCPConn(t *testing.T) {
	w, client := pair(t)
	// A write bigger than the socket buffers completes only as the peer
	// reads: Write must wait for room and write all of it.
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	receiveWhole(t, client, big, func() (int64, error) {
		n, err := w.Write(big)
		return int64(n), err
	})

	if _, err := client.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	_ = w.SetReadDeadline(time.Now().Add(30 * time.Second))
	n, err := w.Read(buf)
	if err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}

	// A deadline ends a read that has nothing to read, as net's.
	_ = w.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := w.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v", err)
	}
	_ = w.SetReadDeadline(time.Time{})

	// The peer's close reads as io.EOF.
	_ = client.Close()
	if _, err := w.Read(buf); err != io.EOF {
		t.Fatalf("read after the peer closed: %v", err)
	}
}

func TestWriteBuffersWritesAllInOrder(t *testing.T) {
	w, client := pair(t)
	var want []byte
	var bufs net.Buffers
	for i := range 3000 { // more than one writev's 1024 buffers
		b := bytes.Repeat([]byte{byte('a' + i%26)}, 1+i%700)
		if i%100 == 0 {
			b = nil // empty buffers are skipped
		}
		want = append(want, b...)
		bufs = append(bufs, b)
	}
	receiveWhole(t, client, want, func() (int64, error) { return w.(*Conn).WriteBuffers(&bufs) })
	if len(bufs) != 0 {
		t.Fatalf("%d buffers left", len(bufs))
	}
}

func TestWriteToClosedPeerFails(t *testing.T) {
	w, client := pair(t)
	_ = client.(*net.TCPConn).SetLinger(0) // the close resets the connection
	_ = client.Close()
	var err error
	for i := 0; i < 100 && err == nil; i++ { // the reset arrives after a write or two
		_, err = w.Write([]byte("x"))
		time.Sleep(time.Millisecond)
	}
	var op *net.OpError
	if !errors.As(err, &op) {
		t.Fatalf("write to a reset connection: %v", err)
	}
}

// TestReadSeesEndAfterDataAndFINTogether: a peer that sends a request and
// closes its side at once has both in the socket before the first read;
// the read after the data must return io.EOF without any new arrival.
// (Skipping the read after a short one, waiting for new readiness instead,
// missed this end of stream: its readiness came before the data was read.)
func TestReadSeesEndAfterDataAndFINTogether(t *testing.T) {
	w, client := pair(t)
	if _, err := client.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = client.(*net.TCPConn).CloseWrite()
	time.Sleep(5 * time.Millisecond) // both in the socket before the first read
	if got := readWithin(t, w, 64); string(got) != "PING\r\n" {
		t.Fatalf("read %q", got)
	}
	_ = w.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := w.Read(make([]byte, 64)); err != io.EOF {
		t.Fatalf("the read after the data returned %v, want io.EOF", err)
	}
}

// readWithin reads once from c with a deadline and returns what it read.
func readWithin(t *testing.T, c net.Conn, size int) []byte {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, size)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return buf[:n]
}

// TestReadKeepsReadinessBetweenReads: after a read that emptied the socket
// the next Read waits without reading first, so bytes that arrived between
// the two Reads (a pipelined request sent while the server worked) must
// still wake it; bytes left behind by a read that filled its buffer must be
// read without any new arrival.
func TestReadKeepsReadinessBetweenReads(t *testing.T) {
	w, client := pair(t)
	for i := range 50 {
		msg := []byte{byte('a' + i%26), 'x'}
		if _, err := client.Write(msg); err != nil {
			t.Fatal(err)
		}
		// Wait until the bytes are in the socket, then read them all: the
		// socket is empty after the read (drained).
		time.Sleep(time.Millisecond)
		if got := readWithin(t, w, 64); !bytes.Equal(got, msg) {
			t.Fatalf("round %d: read %q, want %q", i, got, msg)
		}
		// The next bytes arrive before the next Read starts.
		next := []byte{'n', byte('0' + i%10)}
		if _, err := client.Write(next); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
		if got := readWithin(t, w, 64); !bytes.Equal(got, next) {
			t.Fatalf("round %d: read %q, want %q", i, got, next)
		}
	}
	// A read that fills its buffer leaves the rest in the socket.
	if _, err := client.Write([]byte("0123456789")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Millisecond)
	var got []byte
	for len(got) < 10 {
		got = append(got, readWithin(t, w, 4)...)
	}
	if string(got) != "0123456789" {
		t.Fatalf("read %q in 4-byte reads", got)
	}
}

// TestCloseEndsReads: a Conn closed between Reads frees its descriptor (the
// peer sees the end of the stream) and fails the next Read; a Read waiting
// when another goroutine closes it returns net.ErrClosed.
func TestCloseEndsReads(t *testing.T) {
	w, client := pair(t)
	if _, err := client.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	if got := readWithin(t, w, 64); string(got) != "ping" {
		t.Fatalf("read %q", got)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := client.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("the peer read %v after Close, want EOF", err)
	}
	if _, err := w.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Read after Close: %v", err)
	}

	w2, client2 := pair(t)
	done := make(chan error, 1)
	go func() {
		_, err := w2.Read(make([]byte, 16))
		done <- err
	}()
	time.Sleep(10 * time.Millisecond) // (either order is valid: Read checks closed first)
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("a waiting Read returned %v, want net.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a waiting Read did not return after Close")
	}
	_ = client2.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := client2.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("the peer read %v after Close, want EOF", err)
	}
}

// TestReadDeadlineThenReadAgain: a Read that timed out ends its RawConn
// call; with the deadline moved, the next Read gets the bytes.
func TestReadDeadlineThenReadAgain(t *testing.T) {
	w, client := pair(t)
	_ = w.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := w.Read(make([]byte, 8)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read past its deadline: %v", err)
	}
	if _, err := client.Write([]byte("late")); err != nil {
		t.Fatal(err)
	}
	if got := readWithin(t, w, 8); string(got) != "late" {
		t.Fatalf("read %q", got)
	}
}
