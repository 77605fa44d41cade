//go:build linux

package rawsock

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// loopRun runs p on its own goroutine, sending each turn's tokens to the
// returned channel; the test's cleanup stops it.
func loopRun(t *testing.T, p *Poller) <-chan []uint64 {
	t.Helper()
	turns := make(chan []uint64, 64)
	done := make(chan error, 1)
	go func() {
		done <- p.Run(func(tokens []uint64, woken bool) bool {
			if len(tokens) > 0 || woken {
				turns <- append([]uint64(nil), tokens...)
			}
			return false
		})
	}()
	t.Cleanup(func() {
		p.Stop()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after Stop")
		}
	})
	return turns
}

// waitToken waits (bounded) for a turn that reports token.
func waitToken(t *testing.T, turns <-chan []uint64, token uint64) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case got := <-turns:
			for _, tk := range got {
				if tk == token {
					return
				}
			}
		case <-deadline:
			t.Fatalf("token %d never reported", token)
		}
	}
}

func loopConn(t *testing.T) (*Conn, net.Conn) {
	t.Helper()
	w, client := pair(t)
	c := w.(*Conn)
	if !c.EnterLoop() {
		t.Fatal("EnterLoop refused a fresh connection")
	}
	return c, client
}

func TestPollerReportsInputAndLoopReadsDoNotWait(t *testing.T) {
	p, err := NewPoller()
	if err != nil {
		t.Fatal(err)
	}
	c, client := loopConn(t)
	if err := p.Add(c, 7); err != nil {
		t.Fatal(err)
	}
	turns := loopRun(t, p)
	buf := make([]byte, 64)
	if _, err := c.Read(buf); !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("read of an empty socket: %v, want ErrWouldBlock", err)
	}
	for round := range 3 {
		if _, err := client.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		waitToken(t, turns, 7)
		n, err := c.Read(buf)
		if err != nil || string(buf[:n]) != "hello" {
			t.Fatalf("round %d: read %q, %v", round, buf[:n], err)
		}
		if !c.Drained() {
			t.Fatalf("round %d: a read of everything sent is not drained", round)
		}
		if _, err := c.Read(buf); !errors.Is(err, ErrWouldBlock) {
			t.Fatalf("round %d: read after draining: %v, want ErrWouldBlock", round, err)
		}
	}
	// The end of the stream is reported too.
	_ = client.Close()
	waitToken(t, turns, 7)
	if _, err := c.Read(buf); err != io.EOF {
		t.Fatalf("read after the peer closed: %v, want EOF", err)
	}
	c.ExitLoop()
}

func TestCloseOfALoopConnectionIsReportedToTheLoop(t *testing.T) {
	p, err := NewPoller()
	if err != nil {
		t.Fatal(err)
	}
	c, client := loopConn(t)
	if err := p.Add(c, 9); err != nil {
		t.Fatal(err)
	}
	turns := loopRun(t, p)
	// Another goroutine's Close shuts the socket down: the loop holds its
	// read side and is the one to close the descriptor.
	go func() { _ = c.Close() }()
	waitToken(t, turns, 9)
	if _, err := c.Read(make([]byte, 8)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("loop read after Close: %v, want net.ErrClosed", err)
	}
	if _, err := c.TryWrite([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("TryWrite after Close: %v, want net.ErrClosed", err)
	}
	c.ExitLoop()
	_ = c.Close()
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := client.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("the peer sees %v, want EOF", err)
	}
}

func TestTryWriteStopsWhenTheSocketIsFull(t *testing.T) {
	c, client := loopConn(t)
	big := make([]byte, 64<<20)
	n, err := c.TryWrite(big)
	if err != nil {
		t.Fatal(err)
	}
	if n <= 0 || n >= len(big) {
		t.Fatalf("TryWrite of %d bytes to a peer that does not read wrote %d", len(big), n)
	}
	c.ExitLoop()
	// The rest goes out the ordinary way, waiting for the peer.
	go func() {
		_, _ = io.CopyN(io.Discard, client, int64(len(big)))
	}()
	if _, err := c.Write(big[n:]); err != nil {
		t.Fatal(err)
	}
}

func TestReadsAfterExitLoopWaitForInput(t *testing.T) {
	c, client := loopConn(t)
	buf := make([]byte, 16)
	if _, err := c.Read(buf); !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("loop read of an empty socket: %v", err)
	}
	c.ExitLoop()
	go func() {
		time.Sleep(20 * time.Millisecond)
		_, _ = client.Write([]byte("late"))
	}()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := c.Read(buf)
	if err != nil || string(buf[:n]) != "late" {
		t.Fatalf("ordinary read after ExitLoop: %q, %v", buf[:n], err)
	}
	// Back to loop mode between ordinary reads: the suspended ordinary
	// read ends, and loop reads do not wait.
	if !c.EnterLoop() {
		t.Fatal("EnterLoop refused a connection read the ordinary way, between reads")
	}
	if _, err := c.Read(buf); !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("loop read of an empty socket after EnterLoop: %v", err)
	}
	if _, err := client.Write([]byte("again")); err != nil {
		t.Fatal(err)
	}
	for range 1000 {
		n, err = c.Read(buf)
		if !errors.Is(err, ErrWouldBlock) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err != nil || string(buf[:n]) != "again" {
		t.Fatalf("loop read after EnterLoop: %q, %v", buf[:n], err)
	}
}
