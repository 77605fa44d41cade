package node

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shoal-db/shoal/gossip"
	"github.com/stretchr/testify/require"
)

// trackingTranscript runs one multi-connection tracking session against
// addr and returns every reply and push the tracking sides read, raw.
func trackingTranscript(t *testing.T, addr string) []string {
	var out []string
	c1, c2 := dialTestAddr(t, addr), dialTestAddr(t, addr)
	rec := func(s string) { out = append(out, s) }
	c1.do("HELLO", "3")
	rec(c1.do("CLIENT", "TRACKING", "on"))
	rec(c1.do("GET", "a"))
	rec(c2.do("SET", "a", "1"))
	rec(c1.read()) // invalidate a
	rec(c1.do("CLIENT", "TRACKINGINFO"))
	// NOLOOP: its own write is not sent back; another client's is.
	rec(c1.do("CLIENT", "TRACKING", "on", "NOLOOP"))
	rec(c1.do("GET", "c"))
	rec(c1.do("SET", "c", "1"))
	rec(c1.do("PING")) // a push would come before this reply
	rec(c1.do("GET", "c"))
	rec(c2.do("SET", "c", "2"))
	rec(c1.read())
	// Own write without NOLOOP: the invalidation follows the reply.
	rec(c1.do("CLIENT", "TRACKING", "off"))
	rec(c1.do("CLIENT", "TRACKING", "on"))
	rec(c1.do("GET", "e"))
	rec(c1.do("INCR", "e"))
	rec(c1.read())
	// OPTIN: only a read after CLIENT CACHING yes is tracked.
	rec(c1.do("CLIENT", "TRACKING", "off"))
	rec(c1.do("CLIENT", "TRACKING", "on", "OPTIN"))
	rec(c1.do("GET", "b"))
	rec(c2.do("SET", "b", "1"))
	rec(c1.do("CLIENT", "CACHING", "yes"))
	rec(c1.do("CLIENT", "TRACKINGINFO"))
	rec(c1.do("GET", "b"))
	rec(c2.do("SET", "b", "2"))
	rec(c1.read())
	rec(c1.do("CLIENT", "CACHING", "no")) // only with OPTOUT
	// BCAST with prefixes, overlap refused.
	rec(c1.do("CLIENT", "TRACKING", "off"))
	rec(c1.do("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "p:", "PREFIX", "p"))
	rec(c1.do("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "p:", "PREFIX", "q:"))
	rec(c2.do("SET", "p:1", "x"))
	rec(c1.read())
	rec(c2.do("MSET", "q:2", "y", "p:3", "z", "r:1", "w"))
	first, second := c1.read(), c1.read() // one message per prefix, in either order
	if first > second {
		first, second = second, first
	}
	rec(first)
	rec(second)
	rec(c1.do("CLIENT", "TRACKINGINFO"))
	// FLUSHALL: a null invalidation.
	rec(c1.do("CLIENT", "TRACKING", "off"))
	rec(c1.do("CLIENT", "TRACKING", "on"))
	rec(c1.do("GET", "a"))
	rec(c2.do("FLUSHALL"))
	rec(c1.read())
	// RESP2 redirect to a subscriber of __redis__:invalidate.
	c3, c4 := dialTestAddr(t, addr), dialTestAddr(t, addr)
	id := strings.TrimSuffix(strings.TrimPrefix(c3.do("CLIENT", "ID"), ":"), "\r\n")
	rec(c3.do("SUBSCRIBE", "__redis__:invalidate"))
	rec(c4.do("CLIENT", "TRACKING", "on", "REDIRECT", id))
	require.Equal(t, ":"+id+"\r\n", c4.do("CLIENT", "GETREDIR"))
	rec(c4.do("GET", "d"))
	rec(c2.do("SET", "d", "1"))
	rec(c3.read())
	rec(c4.do("CLIENT", "TRACKING", "on", "REDIRECT", "999999"))
	rec(c4.do("CLIENT", "TRACKING", "on", "OPTIN", "OPTOUT"))
	rec(c4.do("CLIENT", "TRACKING", "on", "PREFIX", "x"))
	return out
}

// TestTrackingMatchesRedis: a session covering default tracking, NOLOOP,
// an own write, OPTIN with CLIENT CACHING, BCAST prefixes, FLUSHALL and a
// RESP2 redirect reads byte for byte what redis-server 7.0 sends.
func TestTrackingMatchesRedis(t *testing.T) {
	want := trackingTranscript(t, startRealRedis(t))
	s := startTestServer(t)
	got := trackingTranscript(t, s.Addr().String())
	require.Equal(t, len(want), len(got))
	for i := range want {
		require.Equal(t, want[i], got[i], "step %d", i)
	}
}

// TestTrackedIDsAddMatchesASet: add reports a new id as new and a known one
// as known, with ids that share their seen bit (id%64), across the switch
// from the short list to the map.
func TestTrackedIDsAddMatchesASet(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	for round := range 200 {
		var s trackedIDs
		want := map[int64]bool{}
		limit := 1 + rng.IntN(3*trackedIDsSmall)
		for range 4 * limit {
			id := int64(rng.IntN(limit)) * int64(1+round%3*64) // round%3 > 0: ids collide mod 64
			if got := s.add(id); got == want[id] {
				t.Fatalf("round %d: add(%d) = %v with the set holding it: %v", round, id, got, want[id])
			}
			want[id] = true
		}
		if s.len() != len(want) {
			t.Fatalf("round %d: len %d, want %d", round, s.len(), len(want))
		}
		seen := map[int64]bool{}
		s.each(func(id int64) { seen[id] = true })
		if len(seen) != len(want) {
			t.Fatalf("round %d: each gave %d ids, want %d", round, len(seen), len(want))
		}
	}
}

// BenchmarkTrackedIDsAdd: 50 tracking clients reading 10,000 keys at random,
// each key's set dropped now and then (an invalidation), as in
// scripts/bench-tracking.sh.
func BenchmarkTrackedIDsAdd(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	sets := make([]trackedIDs, 10000)
	for i := range b.N {
		k := rng.IntN(len(sets))
		sets[k].add(int64(100 + rng.IntN(50)))
		if i%40 == 0 {
			sets[rng.IntN(len(sets))] = trackedIDs{}
		}
	}
}

// Slots lost to the master they were migrating to keep their keys (the
// migration moves them) but are no longer served here: clients tracking
// their keys are told to forget them.
func TestSlotsMovedOutKeepKeysAndInvalidateTracking(t *testing.T) {
	s := startTestServer(t)
	c1, c2 := dialTest(t, s), dialTest(t, s)
	c2.do("SET", "a", "1") // slot 15495
	c2.do("SET", "b", "1") // slot 3300
	c1.do("HELLO", "3")
	require.Equal(t, "+OK\r\n", c1.do("CLIENT", "TRACKING", "on"))
	c1.do("GET", "a")
	c1.do("GET", "b")
	s.onClusterChange(gossip.Change{MovedOutSlots: []int{15495}})
	require.Equal(t, ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\na\r\n", c1.read())
	require.Equal(t, ":2\r\n", c2.do("DBSIZE"))
	require.Equal(t, "+PONG\r\n", c1.do("PING"), "b, in a slot still served, was invalidated")
}
