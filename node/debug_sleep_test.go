package node

import "testing"

// DEBUG SLEEP reads its time as Redis does, with C's strtod: the number
// its argument begins with. "0_100000" is no sleep at all (strtod stops at
// the underscore), not the 100000 seconds Go's float syntax reads; the
// read deadline (testIOTimeout) fails the test if the server sleeps.
func TestDebugSleepParsesLikeStrtod(t *testing.T) {
	s := startTestServer(t, "--enable-debug-command", "yes")
	c := dialTest(t, s)
	for _, arg := range []string{"0_100000", "0x0", "abc"} {
		if got := c.do("DEBUG", "SLEEP", arg); got != "+OK\r\n" {
			t.Fatalf("DEBUG SLEEP %s = %q", arg, got)
		}
	}
	if got := c.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING after DEBUG SLEEP = %q", got)
	}
}
