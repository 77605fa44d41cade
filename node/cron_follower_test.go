package node

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCronFollowerRunsOnKicks: a follower runs at the cron's kick, long
// before its own timer would fire.
func TestCronFollowerRunsOnKicks(t *testing.T) {
	f := newCronFollower(time.Hour)
	stop := make(chan struct{})
	defer close(stop)
	ran := make(chan struct{}, 10)
	go f.run(stop, func() { ran <- struct{}{} })
	for i := 0; i < 3; i++ {
		f.last = time.Time{}
		f.due(time.Now(), 100*time.Millisecond)
		select {
		case <-ran:
		case <-time.After(10 * time.Second):
			t.Fatalf("kick %d: the follower did not run", i)
		}
	}
}

// TestCronFollowerRunsAloneWithoutKicks: with no cron kicking it (DEBUG
// PAUSE-CRON, a low hz) a follower still runs on its own timer.
func TestCronFollowerRunsAloneWithoutKicks(t *testing.T) {
	f := newCronFollower(20 * time.Millisecond)
	stop := make(chan struct{})
	defer close(stop)
	var runs atomic.Int64
	go f.run(stop, func() { runs.Add(1) })
	deadline := time.Now().Add(20 * time.Second)
	for runs.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	require.GreaterOrEqual(t, runs.Load(), int64(3))
}

// TestCronFollowerDueOncePerPeriod: a cron running every 100 ms kicks a
// one-second follower once every ten runs (within half a cron period).
func TestCronFollowerDueOncePerPeriod(t *testing.T) {
	f := newCronFollower(time.Second)
	start := time.Unix(1_700_000_000, 0)
	kicks := 0
	for i := 0; i < 50; i++ {
		f.due(start.Add(time.Duration(i)*100*time.Millisecond), 100*time.Millisecond)
		select {
		case <-f.kicks:
			kicks++
		default:
		}
	}
	require.Equal(t, 5, kicks)
}
