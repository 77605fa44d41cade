package clock

import (
	"sync"
	"testing"
	"time"
)

func TestFakeMovesOnlyWhenTold(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	c := NewFake(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("Now = %v, want %v", got, start)
	}
	c.Advance(1500 * time.Millisecond)
	if got := c.Now().Sub(start); got != 1500*time.Millisecond {
		t.Fatalf("after Advance: %v since start, want 1.5s", got)
	}
	c.Set(time.UnixMilli(42))
	if got := c.Now().UnixMilli(); got != 42 {
		t.Fatalf("after Set: %d ms, want 42", got)
	}
}

func TestFakeConcurrentUse(t *testing.T) {
	c := NewFake(time.Unix(0, 0))
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				c.Advance(time.Millisecond)
				_ = c.Now()
			}
		}()
	}
	wg.Wait()
	if got := c.Now().Sub(time.Unix(0, 0)); got != 400*time.Millisecond {
		t.Fatalf("400 advances of 1ms: %v", got)
	}
}

func TestSystemFollowsTime(t *testing.T) {
	before := time.Now()
	got := System{}.Now()
	if got.Before(before) {
		t.Fatalf("System.Now %v before time.Now %v", got, before)
	}
}
