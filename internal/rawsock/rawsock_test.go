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
