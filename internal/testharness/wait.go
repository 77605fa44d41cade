package testharness

import (
	"os"
	"strconv"
	"sync"
	"testing"
	"time"
)

// SlackEnv names the factor every deadline of WaitFor, WaitUntil and
// WaitForReason is multiplied by (default 1; make test sets 3). The
// deadlines bound how long a test may wait for a condition, never how fast
// the code must be: on a loaded machine they stretch, and a test that
// passes waits no longer than before.
const SlackEnv = "SHOAL_TEST_SLACK"

var slack = sync.OnceValue(func() float64 { return parseSlack(os.Getenv(SlackEnv)) })

// parseSlack reads $SHOAL_TEST_SLACK: a factor from 1 to 100, else 1.
func parseSlack(v string) float64 {
	if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 1 && f <= 100 {
		return f
	}
	return 1
}

// Slack stretches a test deadline by $SHOAL_TEST_SLACK.
func Slack(d time.Duration) time.Duration { return time.Duration(float64(d) * slack()) }

// pollEvery is how often WaitFor and WaitUntil check their condition.
const pollEvery = 50 * time.Millisecond

// WaitFor checks cond every 50 ms until it holds and returns how long that
// took; when it still does not hold after d, the test fails with what.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	d = Slack(d)
	if !poll(d, pollEvery, func() string { return reasonOf(cond()) }) {
		t.Fatalf("timed out after %s waiting for %s", d, what)
	}
	return time.Since(start)
}

// WaitUntil checks cond every 50 ms until it holds (true) or d passes
// (false): for a test that reports the failure itself.
func WaitUntil(d time.Duration, cond func() bool) bool {
	return poll(Slack(d), pollEvery, func() string { return reasonOf(cond()) })
}

// WaitForReason checks cond every interval until it returns "" (the
// condition holds); when it does not after d, the test fails with what and
// cond's last answer (why not).
func WaitForReason(t testing.TB, d, interval time.Duration, what string, cond func() string) {
	t.Helper()
	var why string
	d = Slack(d)
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
