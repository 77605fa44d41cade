package node

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shoal-db/shoal/slots"
	"github.com/stretchr/testify/require"
)

// spinScript keeps running until TIME passes ARGV[1] milliseconds after its
// start (at most), on its declared key: TIME touches no key, so the run
// stays under KEYS[1]'s slot lock.
const spinScript = `
redis.call('SET', KEYS[1], 'running')
local t = redis.call('TIME')
local stop = t[1] * 1000 + math.floor(t[2] / 1000) + tonumber(ARGV[1])
local n = 0
while n < 100000000 do
  n = n + 1
  local now = redis.call('TIME')
  if now[1] * 1000 + math.floor(now[2] / 1000) >= stop then break end
end
return redis.call('SET', KEYS[1], 'done')`

// waitRunning waits (bounded) until a script runs on s.
func waitRunning(t *testing.T, s *Server) {
	t.Helper()
	for i := 0; s.tx.scripts.running.Load() == nil; i++ {
		require.Less(t, i, 2000, "the script never started")
		time.Sleep(5 * time.Millisecond)
	}
}

// TestScriptLockedRunsBesideOtherSlots: a script that declares its key runs
// under that key's slot lock, not the execution gate: another client's
// commands on other slots complete while it runs, and a command on its
// slot waits for its end.
func TestScriptLockedRunsBesideOtherSlots(t *testing.T) {
	s := startTestServer(t)
	sc, other, same := dialTest(t, s), dialTest(t, s), dialTest(t, s)
	sc.send("EVAL", spinScript, "1", "{a}k", "3000")
	waitRunning(t, s)
	require.Equal(t, "+OK\r\n", other.do("SET", "{b}k", "v"))
	require.Equal(t, "$1\r\nv\r\n", other.do("GET", "{b}k"))
	require.NotNil(t, s.tx.scripts.running.Load(), "SET on another slot waited for the script")
	// Its own slot waits: the reader sees the script's end, never the middle.
	require.Equal(t, "$4\r\ndone\r\n", same.do("GET", "{a}k"))
	require.Equal(t, "+OK\r\n", sc.read())
}

// TestScriptLockedAtomicity: readers of the script's slot never see half of
// a script's writes, while writers on other slots run beside it.
func TestScriptLockedAtomicity(t *testing.T) {
	s := startTestServer(t)
	setup := dialTest(t, s)
	sha := strings.Split(setup.do("SCRIPT", "LOAD",
		"local n = redis.call('INCR', KEYS[1]); redis.call('SET', KEYS[2], n); return n"), "\r\n")[1]
	const rounds = 300
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tc := dialTest(t, s)
			for i := 0; i < rounds; i++ {
				if r := tc.do("EVALSHA", sha, "2", "{t}a", "{t}b"); !strings.HasPrefix(r, ":") {
					t.Errorf("EVALSHA: %q", r)
					return
				}
			}
		}()
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		tc := dialTest(t, s)
		for i := 0; i < rounds; i++ {
			r := tc.do("MGET", "{t}a", "{t}b")
			parts := strings.Split(r, "\r\n")
			if len(parts) >= 5 && parts[2] != parts[4] {
				t.Errorf("partial script seen: %q", r)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		tc := dialTest(t, s)
		for i := 0; i < rounds; i++ {
			if r := tc.do("INCR", fmt.Sprintf("{o%d}", i%7)); !strings.HasPrefix(r, ":") {
				t.Errorf("INCR: %q", r)
				return
			}
		}
	}()
	wg.Wait()
	require.Equal(t, fmt.Sprintf("$3\r\n%d\r\n", 3*rounds), setup.do("GET", "{t}b"))
}

// TestScriptLockedUndeclaredKeys: what a script that declared keys gets
// when it reaches beyond their slots (node/script_locked.go).
func TestScriptLockedUndeclaredKeys(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	tc.do("SET", "{x}other", "42")

	// Only reads so far: the run starts again exclusive, invisibly.
	feed := &callFeed{}
	s.AddEffectFeed(feed)
	reads := "local v = redis.call('GET', KEYS[1]); return redis.call('GET', ARGV[1])"
	require.Equal(t, "$2\r\n42\r\n", tc.do("EVAL", reads, "1", "{y}k", "{x}other"))
	_, sc, _ := s.tx.scripts.load([]byte(reads))
	require.True(t, sc.roams.Load(), "the script is not marked as reaching beyond its keys")
	require.Equal(t, "$2\r\n42\r\n", tc.do("EVAL", reads, "1", "{y}k", "{x}other"), "exclusive from then on")
	keyspace := "redis.call('GET', KEYS[1]); return redis.call('DBSIZE')"
	require.Equal(t, ":1\r\n", tc.do("EVAL", keyspace, "1", "{y}k"))

	// After a write, a free undeclared slot is taken and kept to the end.
	writes := "redis.call('SET', KEYS[1], 'w'); redis.call('SET', ARGV[1], 'u'); return redis.call('GET', ARGV[1])"
	require.Equal(t, "$1\r\nu\r\n", tc.do("EVAL", writes, "1", "{y}k", "{z}u"))
	require.Equal(t, []string{"0:MULTI; SET {y}k w; SET {z}u u; EXEC"}, feed.take(), "one unit, in order")

	// After a write, a keyspace-wide command is refused the first time,
	// and the script runs exclusive from then on.
	wide := "redis.call('SET', KEYS[1], 'w2'); return redis.call('DBSIZE')"
	require.True(t, strings.HasPrefix(tc.do("EVAL", wide, "1", "{y}k"),
		"-ERR This command needs the whole keyspace; declare every key the script uses script: "))
	require.Equal(t, ":3\r\n", tc.do("EVAL", wide, "1", "{y}k"))
	require.Equal(t, "$2\r\nw2\r\n", tc.do("GET", "{y}k"))

	// A function reaching beyond its keys before writing runs again alone.
	tc.do("FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('peek', function(keys, args) redis.call('GET', keys[1]); return redis.call('GET', args[1]) end)")
	require.Equal(t, "$2\r\n42\r\n", tc.do("FCALL", "peek", "1", "{y}k", "{x}other"))
}

// TestScriptLockedBusyKill: a script under its keys' locks that runs past
// busy-reply-threshold makes other clients' commands -BUSY on any slot, and
// SCRIPT KILL stops it; before the threshold SCRIPT KILL does not see it.
func TestScriptLockedBusyKill(t *testing.T) {
	s := startTestServer(t, "--busy-reply-threshold", "200")
	sc, other := dialTest(t, s), dialTest(t, s)
	sc.send("EVAL", "redis.call('GET', KEYS[1]); while true do end", "1", "{a}k")
	waitRunning(t, s)
	busy := "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n"
	var r string
	for i := 0; i < 1000; i++ {
		if r = other.do("GET", "{b}k"); r == busy {
			break
		}
		require.Equal(t, "$-1\r\n", r)
		time.Sleep(5 * time.Millisecond)
	}
	require.Equal(t, busy, r)
	require.Equal(t, "+OK\r\n", other.do("SCRIPT", "KILL"))
	require.Contains(t, sc.read(), "Script killed by user with SCRIPT KILL")
	require.Equal(t, "$-1\r\n", other.do("GET", "{b}k"))
	require.Equal(t, "-NOTBUSY No scripts in execution right now.\r\n", other.do("SCRIPT", "KILL"))
}

// TestScriptLockedWatch: a script under its keys' locks touches the keys it
// writes: a WATCH on them fails the transaction.
func TestScriptLockedWatch(t *testing.T) {
	s := startTestServer(t)
	w, sc := dialTest(t, s), dialTest(t, s)
	require.Equal(t, "+OK\r\n", w.do("WATCH", "{a}k"))
	require.Equal(t, "+OK\r\n", sc.do("EVAL", "return redis.call('SET', KEYS[1], 'x')", "1", "{a}k"))
	require.Equal(t, "+OK\r\n", w.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", w.do("SET", "{a}k", "y"))
	require.Equal(t, "*-1\r\n", w.do("EXEC"))
}

// TestScriptLockedUndeclaredSlotHeld: after a write, an undeclared slot that
// another holds is not waited for (its holder may wait for the script's
// slots): the call is refused, and the script runs exclusive from then on.
func TestScriptLockedUndeclaredSlotHeld(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	db := s.ks.DB(0)
	slot := slots.KeySlot([]byte("{z}u"))
	db.Lock(slot)
	writes := "redis.call('SET', KEYS[1], 'w'); return redis.call('SET', ARGV[1], 'u')"
	r := tc.do("EVAL", writes, "1", "{y}k", "{z}u")
	require.True(t, strings.HasPrefix(r, "-ERR Script attempted to access a key outside its declared keys' slots after writing, "+
		"while another client held it; declare every key the script uses script: "), r)
	require.Equal(t, "$1\r\nw\r\n", tc.do("GET", "{y}k"), "the write before the refusal stays, as after any script error")
	db.Unlock(slot)
	require.Equal(t, "+OK\r\n", tc.do("EVAL", writes, "1", "{y}k", "{z}u"))
	require.Equal(t, "$1\r\nu\r\n", tc.do("GET", "{z}u"))
}

// TestScriptLockedNotifiesAndInvalidates: the writes of a script under its
// keys' locks raise keyspace events and invalidate tracked keys, as under
// the gate.
func TestScriptLockedNotifiesAndInvalidates(t *testing.T) {
	s := startTestServer(t)
	w, sub, trk := dialTest(t, s), dialTest(t, s), dialTest(t, s)
	w.do("CONFIG", "SET", "notify-keyspace-events", "KA")
	sub.do("SUBSCRIBE", "__keyspace@0__:{a}k")
	trk.do("HELLO", "3")
	require.Equal(t, "+OK\r\n", trk.do("CLIENT", "TRACKING", "on"))
	trk.do("GET", "{a}k")
	require.Equal(t, "+OK\r\n", w.do("EVAL", "return redis.call('SET', KEYS[1], 'x')", "1", "{a}k"))
	require.Equal(t, "*3\r\n$7\r\nmessage\r\n$19\r\n__keyspace@0__:{a}k\r\n$3\r\nset\r\n", sub.read())
	require.Equal(t, ">2\r\n$10\r\ninvalidate\r\n*1\r\n$4\r\n{a}k\r\n", trk.read())
}

// TestFunctionLockedRunsBesideOtherSlots: FCALL with declared keys runs
// under their slot locks too.
func TestFunctionLockedRunsBesideOtherSlots(t *testing.T) {
	s := startTestServer(t)
	fc, other := dialTest(t, s), dialTest(t, s)
	body := "#!lua name=spin\nredis.register_function('spin', function(KEYS, ARGV)\n" +
		strings.ReplaceAll(strings.TrimPrefix(spinScript, "\n"), "\n", "\n  ") + "\nend)"
	require.Equal(t, "$4\r\nspin\r\n", fc.do("FUNCTION", "LOAD", body))
	fc.send("FCALL", "spin", "1", "{a}k", "3000")
	waitRunning(t, s)
	require.Equal(t, "+OK\r\n", other.do("SET", "{b}k", "v"))
	require.NotNil(t, s.tx.scripts.running.Load(), "SET on another slot waited for the function")
	require.Equal(t, "+OK\r\n", fc.read())
}
