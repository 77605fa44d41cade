package migrate

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-db/shoal/resp"
)

// stream is the source's side of the connection to the target: a queue of
// RESP-encoded commands filled by the job goroutine (images) and by
// writers (effects, under their slot locks), a sender goroutine draining
// it to the socket, and a receiver goroutine counting the replies.
//
// Concurrency: enqueue may be called from any goroutine and never blocks
// on the network (it only takes mu for the time of an append); the queue
// grows without bound in principle, which is why the job throttles its
// images on queued() and fails the job when effects alone outgrow
// maxQueued.
type stream struct {
	conn net.Conn

	mu      sync.Mutex
	buf     []byte // encoded commands not yet handed to the sender
	cmds    int64  // commands ever enqueued
	failed  error  // the first failure; nothing is sent after it
	wake    chan struct{}
	maxSize int

	sentBytes atomic.Int64 // bytes written to the socket
	acked     atomic.Int64 // replies received
	errReply  atomic.Pointer[string]
	ackWake   chan struct{} // signalled (non-blocking) on every batch of replies
	lastAck   atomic.Int64  // unix ms of the last reply

	done chan struct{}
	wg   sync.WaitGroup
}

var errQueueOverflow = errors.New("the stream to the target outgrew its buffer limit (the target is too slow)")

func newStream(conn net.Conn, maxSize int) *stream {
	st := &stream{conn: conn, wake: make(chan struct{}, 1), ackWake: make(chan struct{}, 1),
		done: make(chan struct{}), maxSize: maxSize}
	st.wg.Add(2)
	go st.sender()
	go st.receiver()
	return st
}

// enqueue queues commands; it reports false once the stream failed.
func (st *stream) enqueue(cmds ...[][]byte) bool {
	st.mu.Lock()
	if st.failed != nil {
		st.mu.Unlock()
		return false
	}
	for _, argv := range cmds {
		st.buf = resp.AppendCommand(st.buf, argv...)
		st.cmds++
	}
	if len(st.buf) > st.maxSize {
		st.failLocked(errQueueOverflow)
	}
	st.mu.Unlock()
	select {
	case st.wake <- struct{}{}:
	default:
	}
	return true
}

// queued returns the bytes waiting to be written.
func (st *stream) queued() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.buf)
}

// enqueued returns how many commands were ever enqueued.
func (st *stream) enqueued() int64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.cmds
}

// err returns the stream's failure, if any.
func (st *stream) err() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.failed
}

func (st *stream) fail(err error) {
	st.mu.Lock()
	st.failLocked(err)
	st.mu.Unlock()
}

func (st *stream) failLocked(err error) {
	if st.failed == nil {
		st.failed = err
		st.buf = nil
		close(st.done)
		_ = st.conn.Close()
	}
}

// close ends the stream (idempotent) and waits for its goroutines.
func (st *stream) close() {
	st.fail(errors.New("stream closed"))
	st.wg.Wait()
}

func (st *stream) sender() {
	defer st.wg.Done()
	var out []byte
	for {
		select {
		case <-st.done:
			return
		case <-st.wake:
		}
		for {
			st.mu.Lock()
			if st.failed != nil {
				st.mu.Unlock()
				return
			}
			out, st.buf = st.buf, out[:0]
			st.mu.Unlock()
			if len(out) == 0 {
				break
			}
			if _, err := st.conn.Write(out); err != nil {
				st.fail(fmt.Errorf("writing to the target: %w", err))
				return
			}
			st.sentBytes.Add(int64(len(out)))
			if cap(out) > 4<<20 {
				out = nil // do not keep an image's big buffer
			}
		}
	}
}

func (st *stream) receiver() {
	defer st.wg.Done()
	r := resp.NewReplyReader(st.conn, 64<<10)
	for {
		isErr, msg, err := r.SkipReply()
		if err != nil {
			st.fail(fmt.Errorf("reading from the target: %w", err))
			return
		}
		if isErr && st.errReply.Load() == nil {
			st.errReply.Store(&msg)
			st.fail(fmt.Errorf("the target answered an error: %s", msg))
		}
		st.acked.Add(1)
		st.lastAck.Store(time.Now().UnixMilli())
		if r.Buffered() == 0 {
			select {
			case st.ackWake <- struct{}{}:
			default:
			}
		}
	}
}

// waitAcked waits until at least n replies arrived, the stream failed, or
// the deadline passed.
func (st *stream) waitAcked(n int64, deadline time.Time) error {
	for st.acked.Load() < n {
		if err := st.err(); err != nil {
			return err
		}
		d := time.Until(deadline)
		if d <= 0 {
			return fmt.Errorf("the target acknowledged %d of %d commands in time", st.acked.Load(), n)
		}
		t := time.NewTimer(min(d, 50*time.Millisecond))
		select {
		case <-st.ackWake:
		case <-st.done:
		case <-t.C:
		}
		t.Stop()
	}
	return nil
}
