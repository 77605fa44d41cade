package gossip

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A queue hands items out in order, refuses them past its limit, and
// ready fires after a push.
func TestQueueOrderAndLimit(t *testing.T) {
	q := newQueue[int](3)
	_, ok := q.pop()
	require.False(t, ok)
	for i := range 3 {
		require.True(t, q.push(i))
	}
	require.False(t, q.push(3), "past the limit")
	require.Equal(t, 3, q.len())
	select {
	case <-q.ready:
	default:
		t.Fatal("ready did not fire after a push")
	}
	for i := range 3 {
		v, ok := q.pop()
		require.True(t, ok)
		require.Equal(t, i, v)
	}
	_, ok = q.pop()
	require.False(t, ok)
	require.True(t, q.push(9), "room again once taken")
}

// Its array follows its length: one item at a time, a queue that has
// carried ten thousand never grows past one; a burst's large array is
// dropped once drained.
func TestQueueMemoryFollowsItsLength(t *testing.T) {
	q := newQueue[[]byte](4096)
	for range 10000 {
		q.push([]byte("x"))
		_, ok := q.pop()
		require.True(t, ok)
	}
	require.LessOrEqual(t, cap(q.items), 1)
	for range 3000 {
		q.push([]byte("x"))
	}
	require.Greater(t, cap(q.items), queueKeepCap)
	for range 3000 {
		_, ok := q.pop()
		require.True(t, ok)
	}
	require.Zero(t, cap(q.items), "a burst's array kept after it drained")
}

// Many producers, one consumer woken by ready: every item arrives once,
// and each producer's in its order.
func TestQueueManyProducersOneConsumer(t *testing.T) {
	const producers, each = 4, 2000
	q := newQueue[[2]int](producers * each)
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				require.True(t, q.push([2]int{p, i}))
			}
		}()
	}
	next := make([]int, producers)
	got := 0
	deadline := time.After(30 * time.Second)
	for got < producers*each {
		select {
		case <-q.ready:
		case <-deadline:
			t.Fatalf("only %d of %d items arrived", got, producers*each)
		}
		for {
			v, ok := q.pop()
			if !ok {
				break
			}
			require.Equal(t, next[v[0]], v[1], "producer %d out of order", v[0])
			next[v[0]]++
			got++
		}
	}
	wg.Wait()
	require.Zero(t, q.len())
}
