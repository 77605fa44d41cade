package testharness

import (
	"testing"
	"time"
)

// pollEvery is how often WaitFor and WaitUntil check their condition.
const pollEvery = 50 * time.Millisecond

// WaitFor checks cond every 50 ms until it holds and returns how long that
// took; when it still does not hold after d, the test fails with what.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	if !poll(d, pollEvery, func() string { return reasonOf(cond()) }) {
		t.Fatalf("timed out after %s waiting for %s", d, what)
	}
	return time.Since(start)
}

// WaitUntil checks cond every 50 ms until it holds (true) or d passes
// (false): for a test that reports the failure itself.
func WaitUntil(d time.Duration, cond func() bool) bool {
	return poll(d, pollEvery, func() string { return reasonOf(cond()) })
}

// WaitForReason checks cond every interval until it returns "" (the
// condition holds); when it does not after d, the test fails with what and
// cond's last answer (why not).
func WaitForReason(t testing.TB, d, interval time.Duration, what string, cond func() string) {
	t.Helper()
	var why string
	if !poll(d, interval, func() string { why = cond(); return why }) {
		t.Fatalf("timed out after %v waiting for %s: %s", d, what, why)
	}
}

// poll checks cond (which returns "" when it holds) every interval; it is
// checked once more at the deadline, so a condition met while the last
// sleep ran still counts.
func poll(d, interval time.Duration, cond func() string) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() == "" {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
}

func reasonOf(ok bool) string {
	if ok {
		return ""
	}
	return "not yet"
}
