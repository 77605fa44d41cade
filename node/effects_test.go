package node

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// recordingFeed keeps every propagated command as "db:ARG ARG ...".
type recordingFeed struct {
	mu   sync.Mutex
	cmds []string
}

func (f *recordingFeed) Propagate(db int, cmds [][][]byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, argv := range cmds {
		parts := make([]string, len(argv))
		for i, a := range argv {
			parts[i] = string(a)
		}
		f.cmds = append(f.cmds, string(rune('0'+db))+":"+strings.Join(parts, " "))
	}
}

func (f *recordingFeed) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.cmds
	f.cmds = nil
	return out
}

func TestEffectFeedCarriesWritesOnly(t *testing.T) {
	s := startTestServer(t)
	feed := &recordingFeed{}
	s.AddEffectFeed(feed)
	tc := dialTest(t, s)

	tc.do("set", "k", "v")
	tc.do("get", "k")            // a read: nothing
	tc.do("lpush", "k", "x")     // WRONGTYPE: nothing
	tc.do("select", "2")         // not a write
	tc.do("sadd", "s", "a", "b") // in db 2
	require.Equal(t, []string{"0:set k v", "2:sadd s a b"}, feed.take())
	tc.do("multi") // queued writes propagate when EXEC runs them
	tc.do("incr", "n")
	require.Empty(t, feed.take())
	tc.do("exec")
	tc.do("blpop", "nolist", "0.05") // blocks, times out: no effect
	require.Equal(t, []string{"2:incr n"}, feed.take())

	// A key deleted by expiry propagates as DEL.
	tc.do("set", "gone", "v", "px", "1")
	time.Sleep(10 * time.Millisecond)
	require.Equal(t, "$-1\r\n", tc.do("get", "gone"))
	// SET ... PX propagates with an absolute time, as Redis 7.0 does.
	got := feed.take()
	require.Len(t, got, 2)
	require.Regexp(t, `^2:SET gone v PXAT \d{13}$`, got[0])
	require.Equal(t, "2:DEL gone", got[1])

	s.RemoveEffectFeed(feed)
	tc.do("set", "k", "v2")
	require.Empty(t, feed.take())
}
