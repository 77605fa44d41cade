package gossip

import "sync"

// queue is a bounded FIFO whose memory follows its length. The bus's
// inbox and packet queue were channels, and a channel's buffer is a ring
// whose every page becomes resident as the sends go round it, however
// short the queue stays: an idle node's inbox (4096 entries) and packet
// queue (2048) went round in a few minutes of pings, 192 KB of its memory
// for a queue that holds one or two messages at a time. This one starts
// again at the front of its array whenever it empties, so the array is as
// large as the longest burst, and one grown past queueKeepCap by a burst
// is dropped once drained.
//
// Any number of goroutines may push; one goroutine takes (pop), woken by
// ready.
type queue[T any] struct {
	mu    sync.Mutex
	items []T // items[head:] are queued
	head  int
	limit int
	ready chan struct{} // cap 1: something was pushed since the last wake
}

// queueKeepCap is the largest array a drained queue keeps.
const queueKeepCap = 256

func newQueue[T any](limit int) *queue[T] {
	return &queue[T]{limit: limit, ready: make(chan struct{}, 1)}
}

// push queues v; false (v dropped) when limit items are queued.
func (q *queue[T]) push(v T) bool {
	q.mu.Lock()
	if len(q.items)-q.head >= q.limit {
		q.mu.Unlock()
		return false
	}
	q.items = append(q.items, v)
	q.mu.Unlock()
	q.wake()
	return true
}

// wake makes ready fire (once, however many wakes are pending).
func (q *queue[T]) wake() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// pop takes the oldest item; false when the queue is empty.
func (q *queue[T]) pop() (T, bool) {
	var zero T
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.items) {
		return zero, false
	}
	v := q.items[q.head]
	q.items[q.head] = zero // the queue keeps no reference to what it handed out
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
		if cap(q.items) > queueKeepCap {
			q.items = nil
		}
	}
	return v, true
}

// len is the number of items queued.
func (q *queue[T]) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) - q.head
}
