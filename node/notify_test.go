package node

import (
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoal-db/shoal/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Keyspace notifications compared with a live redis-server 7.0: each case
// runs the same commands on both servers with two subscribers listening to
// every __keyspace@ and __keyevent@ channel (one RESP2, one RESP3), and the
// replies and the subscribers' streams must be byte-identical.

// notifySyncChannel ends a case's stream: its message follows every event
// the case raised.
const notifySyncChannel = "notify-sync"

type notifyCase struct {
	name  string
	flags string     // notify-keyspace-events
	steps [][]string // commands; "@dbsize0" polls DBSIZE until the database is empty; "@bg" cmd... sends cmd on a second connection and waits until it blocks, "@bgread" reads its reply; "@dumprestore" src dst restores DUMP src as dst with REPLACE
}

// runNotifyCase runs c against the server at addr and returns the writer's
// replies and the RESP2 and RESP3 subscribers' streams, one raw message per
// element (compared whole, they are the byte streams).
func runNotifyCase(t *testing.T, addr string, c notifyCase) (replies []string, streams [][]string) {
	t.Helper()
	w := dialTestAddr(t, addr)
	w.do("FLUSHALL")
	w.do("CONFIG", "SET", "notify-keyspace-events", c.flags)
	defer w.do("CONFIG", "SET", "notify-keyspace-events", "")
	var subs []*testConn
	for _, proto := range []string{"2", "3"} {
		sub := dialTestAddr(t, addr)
		sub.do("HELLO", proto)
		sub.do("PSUBSCRIBE", "__key*__:*")
		sub.do("SUBSCRIBE", notifySyncChannel)
		subs = append(subs, sub)
	}
	var bg *testConn // "@bg" sends a command there without reading its reply
	for _, st := range c.steps {
		switch st[0] {
		case "@bg":
			if bg == nil {
				bg = dialTestAddr(t, addr)
			}
			bg.send(st[1:]...)
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(w.do("INFO", "clients"), "blocked_clients:1\r\n") {
				require.True(t, time.Now().Before(deadline), "the client did not block")
				time.Sleep(10 * time.Millisecond)
			}
			continue
		case "@dumprestore": // RESTORE st[2] 0 <DUMP st[1]> REPLACE
			payload := bulkBody(t, w.do("DUMP", st[1]))
			replies = append(replies, w.do("RESTORE", st[2], "0", payload, "REPLACE"))
			continue
		case "@bgread":
			replies = append(replies, bg.read())
			continue
		}
		if st[0] == "@dbsize0" {
			deadline := time.Now().Add(10 * time.Second)
			for w.do("DBSIZE") != ":0\r\n" {
				require.True(t, time.Now().Before(deadline), "the database did not empty")
				time.Sleep(10 * time.Millisecond)
			}
			continue
		}
		replies = append(replies, w.do(st...))
	}
	w.do("PUBLISH", notifySyncChannel, "end")
	for _, sub := range subs {
		streams = append(streams, readUntilSync(sub))
	}
	return replies, streams
}

func ncmd(args ...string) []string { return args }

// readUntilSync returns the raw messages a subscriber receives before the
// message on notifySyncChannel (at most 10000).
func readUntilSync(sub *testConn) []string {
	var msgs []string
	for range 10000 {
		m := sub.read()
		if strings.Contains(m, notifySyncChannel) {
			break
		}
		msgs = append(msgs, m)
	}
	return msgs
}

func TestKeyspaceNotificationsMatchRedis(t *testing.T) {
	realAddr := startRealRedis(t, "--enable-debug-command", "yes")
	s := startTestServer(t, "--enable-debug-command", "yes")
	cases := []notifyCase{
		{name: "generic", flags: "KEA", steps: [][]string{
			ncmd("SET", "a", "1"), ncmd("SET", "b", "2"), ncmd("DEL", "a", "b", "nokey"), ncmd("UNLINK", "nokey"),
			ncmd("SET", "r", "1"), ncmd("RENAME", "r", "r2"), ncmd("SET", "r3", "x"), ncmd("RENAME", "r2", "r3"),
			ncmd("RENAMENX", "r3", "r3"), ncmd("SET", "r4", "y"), ncmd("RENAMENX", "r3", "r4"), ncmd("RENAMENX", "r3", "r5"),
			ncmd("EXPIRE", "r5", "100"), ncmd("PEXPIRE", "r5", "200000", "GT"), ncmd("EXPIRE", "r5", "1", "NX"),
			ncmd("PERSIST", "r5"), ncmd("PERSIST", "r5"), ncmd("EXPIRE", "r5", "-1"), ncmd("EXPIRE", "nokey", "10"),
			ncmd("SET", "p", "1"), ncmd("PEXPIREAT", "p", "1"),
			ncmd("SET", "m", "1"), ncmd("MOVE", "m", "1"), ncmd("MOVE", "m", "1"),
			ncmd("SET", "c", "1"), ncmd("COPY", "c", "c2"), ncmd("COPY", "c", "c2"), ncmd("COPY", "c", "c2", "REPLACE"),
			ncmd("COPY", "c", "c2", "DB", "2"),
			ncmd("SET", "d", "v"), ncmd("EXPIRE", "d", "100"),
			ncmd("SELECT", "1"), ncmd("DEL", "m"), ncmd("SELECT", "2"), ncmd("DEL", "c2"), ncmd("SELECT", "0"),
		}},
		{name: "string", flags: "KEA", steps: [][]string{
			ncmd("SET", "s", "v"), ncmd("SET", "s", "v", "NX"), ncmd("SET", "s", "w", "XX", "GET"),
			ncmd("SET", "s", "x", "EX", "100"), ncmd("SET", "s", "y", "KEEPTTL"), ncmd("SETNX", "s", "z"),
			ncmd("SETNX", "s2", "z"), ncmd("SETEX", "s3", "100", "v"), ncmd("PSETEX", "s4", "100000", "v"),
			ncmd("MSET", "m1", "a", "m2", "b"), ncmd("MSETNX", "m1", "a", "m3", "b"), ncmd("MSETNX", "m4", "a", "m5", "b"),
			ncmd("GETSET", "s", "g"), ncmd("GETDEL", "s"), ncmd("GETDEL", "s"),
			ncmd("SET", "e", "v"), ncmd("GETEX", "e", "EX", "100"), ncmd("GETEX", "e", "PERSIST"), ncmd("GETEX", "e", "PERSIST"),
			ncmd("GETEX", "e"), ncmd("GETEX", "e", "PXAT", "1"),
			ncmd("APPEND", "ap", "x"), ncmd("APPEND", "ap", "y"), ncmd("SETRANGE", "sr", "2", "ab"), ncmd("SETRANGE", "sr", "0", ""),
			ncmd("SETRANGE", "sr2", "0", ""), ncmd("SETRANGE", "sr", "1", "z"),
			ncmd("INCR", "n"), ncmd("DECR", "n"), ncmd("INCRBY", "n", "5"), ncmd("DECRBY", "n", "2"), ncmd("INCRBYFLOAT", "f", "1.5"),
			ncmd("INCR", "ap"),
		}},
		{name: "list", flags: "KEA", steps: [][]string{
			ncmd("LPUSH", "l", "a", "b", "c"), ncmd("RPUSH", "l", "d"), ncmd("LPUSHX", "l", "e"), ncmd("RPUSHX", "l", "f"),
			ncmd("LPUSHX", "nol", "e"), ncmd("LINSERT", "l", "BEFORE", "a", "x"), ncmd("LINSERT", "l", "AFTER", "zz", "x"),
			ncmd("LSET", "l", "0", "y"), ncmd("LPOP", "l"), ncmd("RPOP", "l", "2"), ncmd("LREM", "l", "0", "a"), ncmd("LREM", "l", "0", "q"),
			ncmd("LTRIM", "l", "0", "1"), ncmd("RPOPLPUSH", "l", "l2"), ncmd("LMOVE", "l", "l2", "LEFT", "RIGHT"),
			ncmd("RPUSH", "l3", "a", "b"), ncmd("LMPOP", "2", "nol", "l3", "LEFT", "COUNT", "5"),
			ncmd("RPUSH", "l4", "a"), ncmd("LTRIM", "l4", "1", "0"), ncmd("RPUSH", "l5", "a"), ncmd("LREM", "l5", "0", "a"),
			ncmd("RPUSH", "l6", "a"), ncmd("BLPOP", "l6", "1"), ncmd("RPUSH", "l7", "a", "b"), ncmd("BLMOVE", "l7", "l7", "LEFT", "RIGHT", "1"),
			ncmd("BRPOPLPUSH", "l7", "l8", "1"), ncmd("BLMPOP", "1", "1", "l7", "RIGHT"),
		}},
		{name: "hash", flags: "KEA", steps: [][]string{
			ncmd("HSET", "h", "a", "1", "b", "2"), ncmd("HSETNX", "h", "a", "1"), ncmd("HSETNX", "h", "c", "3"),
			ncmd("HMSET", "h", "d", "4"), ncmd("HINCRBY", "h", "a", "2"), ncmd("HINCRBYFLOAT", "h", "b", "1.5"),
			ncmd("HDEL", "h", "zz"), ncmd("HDEL", "h", "a", "b"), ncmd("HDEL", "h", "c", "d"), ncmd("HGET", "h", "a"),
		}},
		{name: "set", flags: "KEA", steps: [][]string{
			// Integer members: an intset replies in order on both servers.
			ncmd("SADD", "s", "1", "2", "3", "4"), ncmd("SADD", "s", "1"), ncmd("SREM", "s", "99"), ncmd("SREM", "s", "1"),
			ncmd("SMOVE", "s", "t", "2"), ncmd("SMOVE", "s", "t", "99"), ncmd("SADD", "u", "3"), ncmd("SMOVE", "u", "t", "3"),
			ncmd("SADD", "one", "7"), ncmd("SPOP", "one"), ncmd("SPOP", "t", "5"),
			ncmd("SADD", "x", "1", "2", "3"), ncmd("SADD", "y", "2", "3", "4"),
			ncmd("SINTERSTORE", "d", "x", "y"), ncmd("SUNIONSTORE", "d", "x", "y"), ncmd("SDIFFSTORE", "d", "x", "y"),
			ncmd("SDIFFSTORE", "d", "x", "x"), ncmd("SINTERSTORE", "d2", "x", "nokey"), ncmd("SREM", "x", "1", "2", "3"),
			ncmd("SPOP", "y", "0"), ncmd("SPOP", "s", "10"),
		}},
		{name: "zset", flags: "KEA", steps: [][]string{
			ncmd("ZADD", "z", "1", "a", "2", "b", "3", "c"), ncmd("ZADD", "z", "1", "a"), ncmd("ZADD", "z", "INCR", "5", "a"),
			ncmd("ZINCRBY", "z", "1", "b"), ncmd("ZREM", "z", "zz"), ncmd("ZREM", "z", "a"),
			ncmd("ZADD", "z", "1", "a", "2", "d", "7", "e"), ncmd("ZREMRANGEBYSCORE", "z", "0", "1"), ncmd("ZREMRANGEBYRANK", "z", "0", "0"),
			ncmd("ZREMRANGEBYLEX", "z", "-", "+"), ncmd("ZADD", "w", "1", "a", "2", "b"), ncmd("ZADD", "v", "1", "b"),
			ncmd("ZUNIONSTORE", "o", "2", "w", "v"), ncmd("ZINTERSTORE", "o", "2", "w", "v"), ncmd("ZDIFFSTORE", "o", "2", "w", "w"),
			ncmd("ZRANGESTORE", "o2", "w", "0", "-1"), ncmd("ZPOPMIN", "w"), ncmd("ZPOPMAX", "w", "3"), ncmd("ZPOPMIN", "w"),
			ncmd("ZADD", "q", "1", "a"), ncmd("BZPOPMIN", "q", "1"), ncmd("ZADD", "q", "1", "a", "2", "b"), ncmd("ZMPOP", "1", "q", "MAX"),
			ncmd("BZMPOP", "1", "1", "q", "MIN"), ncmd("ZSCORE", "nokey", "a"),
		}},
		{name: "keymiss-new", flags: "KEAmn", steps: [][]string{
			ncmd("GET", "nokey"), ncmd("SET", "k", "v"), ncmd("SET", "k", "w"), ncmd("EXISTS", "nokey", "k"), ncmd("TYPE", "nokey"),
			ncmd("TTL", "nokey"), ncmd("LRANGE", "nolist", "0", "-1"), ncmd("HGET", "noh", "f"), ncmd("SMEMBERS", "nos"),
			ncmd("ZRANGE", "noz", "0", "-1"), ncmd("MGET", "k", "nokey"), ncmd("OBJECT", "ENCODING", "nokey"),
			ncmd("LPUSH", "l", "a"), ncmd("SADD", "s", "a"), ncmd("HSET", "h", "f", "v"), ncmd("ZADD", "z", "1", "a"),
			ncmd("RENAME", "k", "k2"), ncmd("COPY", "k2", "k3"), ncmd("INCR", "n"), ncmd("APPEND", "ap", "x"),
			// Redis deletes an existing destination and adds the key again: "new" each time.
			ncmd("COPY", "k2", "k3", "REPLACE"), ncmd("RENAME", "k3", "k2"), ncmd("MOVE", "k2", "1"),
			ncmd("SET", "k2", "v"), ncmd("@dumprestore", "k2", "k2"), ncmd("@dumprestore", "k2", "k4"),
		}},
		{name: "only-keyevent-generic", flags: "Eg", steps: [][]string{
			ncmd("SET", "a", "1"), ncmd("EXPIRE", "a", "100"), ncmd("LPUSH", "l", "a"), ncmd("DEL", "a", "l"),
		}},
		{name: "only-keyspace-list", flags: "Kl", steps: [][]string{
			ncmd("SET", "a", "1"), ncmd("LPUSH", "l", "a"), ncmd("DEL", "a", "l"),
		}},
		{name: "expired-lazy-and-active", flags: "KEA", steps: [][]string{
			ncmd("DEBUG", "SET-ACTIVE-EXPIRE", "0"),
			ncmd("SET", "x", "1", "PX", "1"), ncmd("DEBUG", "SLEEP", "0.01"), ncmd("GET", "x"),
			ncmd("SET", "y", "1", "PX", "1"), ncmd("DEBUG", "SLEEP", "0.01"), ncmd("SET", "y", "2"), ncmd("DEL", "y"),
			ncmd("DEBUG", "SET-ACTIVE-EXPIRE", "1"),
			ncmd("SET", "z", "1", "PX", "1"), ncmd("@dbsize0"),
		}},
		{name: "evicted", flags: "KEA", steps: [][]string{
			ncmd("SET", "big", strings.Repeat("x", 1000)),
			ncmd("CONFIG", "SET", "maxmemory-policy", "allkeys-lru"), ncmd("CONFIG", "SET", "maxmemory", "1"),
			ncmd("@dbsize0"), ncmd("CONFIG", "SET", "maxmemory", "0"), ncmd("CONFIG", "SET", "maxmemory-policy", "noeviction"),
		}},
		{name: "multi-exec", flags: "KEA", steps: [][]string{
			ncmd("MULTI"), ncmd("SET", "a", "1"), ncmd("LPUSH", "l", "x"), ncmd("DEL", "a"), ncmd("INCR", "n"), ncmd("EXEC"),
		}},
		{name: "script", flags: "KEA", steps: [][]string{
			ncmd("EVAL", "redis.call('set',KEYS[1],'1') redis.call('sadd',KEYS[2],'m') redis.call('del',KEYS[1]) return 1", "2", "{t}a", "{t}s"),
		}},
		{name: "blocked-clients-served", flags: "KEA", steps: [][]string{
			ncmd("@bg", "BLPOP", "bl", "0"), ncmd("RPUSH", "bl", "a"), ncmd("@bgread"),
			ncmd("@bg", "BLMOVE", "bl", "bl2", "LEFT", "RIGHT", "0"), ncmd("LPUSH", "bl", "x", "y"), ncmd("@bgread"),
			ncmd("@bg", "BLMPOP", "0", "1", "bl3", "LEFT", "COUNT", "5"), ncmd("RPUSH", "bl3", "a", "b"), ncmd("@bgread"),
			ncmd("@bg", "BZPOPMAX", "bz", "0"), ncmd("ZADD", "bz", "1", "a"), ncmd("@bgread"),
			ncmd("XADD", "bs", "1-1", "f", "v"), ncmd("XGROUP", "CREATE", "bs", "g", "$"),
			ncmd("@bg", "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "bs", ">"), ncmd("XADD", "bs", "2-1", "f", "v"), ncmd("@bgread"),
		}},
		{name: "sort-store", flags: "KEA", steps: [][]string{
			ncmd("RPUSH", "src", "3", "1", "2"), ncmd("SORT", "src", "STORE", "dst"), ncmd("SORT", "nokey", "STORE", "dst"),
		}},
		{name: "stream", flags: "KEA", steps: [][]string{
			ncmd("XADD", "st", "1-1", "f", "v"), ncmd("XADD", "st", "2-1", "f", "v"), ncmd("XADD", "st2", "NOMKSTREAM", "*", "f", "v"),
			ncmd("XGROUP", "CREATE", "st", "g", "0"), ncmd("XGROUP", "CREATE", "st", "g", "0"), ncmd("XGROUP", "CREATECONSUMER", "st", "g", "c1"),
			ncmd("XREADGROUP", "GROUP", "g", "c2", "COUNT", "1", "STREAMS", "st", ">"), ncmd("XACK", "st", "g", "1-1"),
			ncmd("XCLAIM", "st", "g", "c3", "0", "1-1"), ncmd("XAUTOCLAIM", "st", "g", "c4", "0", "0"),
			ncmd("XSETID", "st", "5-0"), ncmd("XGROUP", "SETID", "st", "g", "0"), ncmd("XGROUP", "DELCONSUMER", "st", "g", "c1"),
			ncmd("XDEL", "st", "1-1"), ncmd("XDEL", "st", "9-9"), ncmd("XTRIM", "st", "MAXLEN", "0"), ncmd("XTRIM", "st", "MAXLEN", "0"),
			ncmd("XGROUP", "DESTROY", "st", "g"), ncmd("XGROUP", "DESTROY", "st", "g"),
		}},
		{name: "misc-types", flags: "KEA", steps: [][]string{
			ncmd("SETBIT", "b", "7", "1"), ncmd("SETBIT", "b", "7", "1"), ncmd("BITOP", "OR", "b2", "b", "b"), ncmd("BITOP", "AND", "b3", "nokey"),
			ncmd("BITFIELD", "bf", "SET", "u8", "0", "1"), ncmd("BITFIELD", "bf", "GET", "u8", "0"),
			ncmd("PFADD", "hl", "a"), ncmd("PFADD", "hl", "a"), ncmd("PFADD", "hl2"), ncmd("PFMERGE", "hl3", "hl", "hl2"), ncmd("PFCOUNT", "hl", "hl3"),
			ncmd("GEOADD", "g", "13.361389", "38.115556", "p"), ncmd("GEOSEARCHSTORE", "g2", "g", "FROMLONLAT", "13", "38", "BYRADIUS", "500", "km"),
			ncmd("GEORADIUS", "g", "13", "38", "500", "km", "STORE", "g3"), ncmd("GEOSEARCHSTORE", "g2", "g", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km"),
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantReplies, wantStreams := runNotifyCase(t, realAddr, c)
			require.NotEmpty(t, wantStreams[0], "the case raises events on redis-server")
			gotReplies, gotStreams := runNotifyCase(t, s.Addr().String(), c)
			assert.Equal(t, wantReplies, gotReplies, "replies")
			assert.Equal(t, wantStreams[0], gotStreams[0], "RESP2 subscriber's stream")
			assert.Equal(t, wantStreams[1], gotStreams[1], "RESP3 subscriber's stream")
		})
	}
}

// On a replica, the full sync raises nothing, the commands applied from the
// master's stream raise their events as on the master, and a key expires
// only by the master's DEL: the replica's subscribers see "del", never
// "expired" (Redis 7.0).
func TestKeyspaceNotificationsOnReplicaMatchRedis(t *testing.T) {
	run := func(t *testing.T, masterAddr, replicaAddr string) []string {
		m, r := dialTestAddr(t, masterAddr), dialTestAddr(t, replicaAddr)
		m.do("DEBUG", "SET-ACTIVE-EXPIRE", "0") // the master expires k lazily, below
		m.do("SET", "before-sync", "1")
		m.do("RPUSH", "before-sync-list", "a", "b")
		// The full sync loads the master's data without events ("new"
		// included), as Redis's RDB load.
		r.do("CONFIG", "SET", "notify-keyspace-events", "KEAn")
		sub := dialTestAddr(t, replicaAddr)
		sub.do("PSUBSCRIBE", "__key*__:*")
		sub.do("SUBSCRIBE", notifySyncChannel)
		host, port, _ := strings.Cut(masterAddr, ":")
		require.Equal(t, "+OK\r\n", r.do("REPLICAOF", host, port))
		waitInSync(t, m, r)
		for _, st := range [][]string{
			ncmd("SET", "a", "1"), ncmd("LPUSH", "l", "x", "y"), ncmd("RPOP", "l"), ncmd("EXPIRE", "a", "100"),
			ncmd("MULTI"), ncmd("INCR", "n"), ncmd("DEL", "a"), ncmd("EXEC"),
			ncmd("SET", "k", "v", "PX", "20"),
		} {
			m.do(st...)
		}
		waitInSync(t, m, r)
		time.Sleep(100 * time.Millisecond) // k is past its deadline on both
		r.do("GET", "k")                   // the replica neither deletes it nor raises anything
		m.do("GET", "k")                   // the master expires it: DEL reaches the replica
		waitInSync(t, m, r)
		r.do("PUBLISH", notifySyncChannel, "end")
		return readUntilSync(sub)
	}
	want := run(t, startRealRedis(t, "--enable-debug-command", "yes"), startRealRedis(t))
	require.NotEmpty(t, want)
	got := run(t, startTestServer(t, "--enable-debug-command", "yes").Addr().String(), startTestServer(t).Addr().String())
	assert.Equal(t, want, got)
}

// In a cluster an event is raised and delivered on the node that owns the
// key only: notifications never cross the bus, unlike PUBLISH, which ends
// each stream here (the same as two redis-server cluster nodes).
func TestKeyspaceNotificationsStayOnTheOwnerInClusterMatchRedis(t *testing.T) {
	tag, _ := migrationTag() // a slot of the first master
	key := "{" + tag + "}k"
	run := func(real bool) (owner, other []string) {
		var aAddr, bAddr string
		var aPort, aCPort int
		if real {
			aAddr, aPort, aCPort = startRealClusterRedis(t)
			bAddr, _, _ = startRealClusterRedis(t)
		} else {
			a, b := startClusterTestServer(t, ""), startClusterTestServer(t, "")
			aAddr, aPort, aCPort, bAddr = a.addr, a.port, a.cport, b.addr
		}
		ac, bc := dialTestAddr(t, aAddr), dialTestAddr(t, bAddr)
		formMasters(t, ac, bc, aPort, aCPort, bulkBody(t, ac.do("CLUSTER", "MYID")), bulkBody(t, bc.do("CLUSTER", "MYID")))
		var subs []*testConn
		for _, c := range []*testConn{ac, bc} {
			c.do("CONFIG", "SET", "notify-keyspace-events", "KEA")
			sub := dialTestAddr(t, c.c.RemoteAddr().String())
			sub.do("PSUBSCRIBE", "__key*__:*")
			sub.do("SUBSCRIBE", notifySyncChannel)
			subs = append(subs, sub)
		}
		require.Equal(t, "+OK\r\n", ac.do("SET", key, "v"))
		require.Equal(t, ":1\r\n", ac.do("DEL", key))
		ac.do("PUBLISH", notifySyncChannel, "end") // reaches b over the bus
		var streams [2][]string
		for i, sub := range subs {
			streams[i] = readUntilSync(sub)
		}
		return streams[0], streams[1]
	}
	wantOwner, wantOther := run(true)
	gotOwner, gotOther := run(false)
	require.Len(t, wantOwner, 4, "set and del, keyspace and keyevent")
	assert.Equal(t, wantOwner, gotOwner)
	assert.Empty(t, wantOther)
	assert.Equal(t, wantOther, gotOther)
}

// An event costs no allocation per message once published (the encodings
// are built on the publisher's stack; the subscribers' queues grow by
// doubling), and nothing when its class is off. AllocsPerRun counts the
// whole process's allocations: many runs keep other goroutines' few below one
// per run.
func TestKeyspaceNotificationDoesNotAllocate(t *testing.T) {
	s := startTestServer(t, "--notify-keyspace-events", "KE$")
	for _, proto := range []string{"2", "3"} {
		sub := dialTest(t, s)
		sub.do("HELLO", proto)
		sub.do("PSUBSCRIBE", "__key*__:*")
	}
	key := []byte("some:key")
	for _, class := range []int64{config.NotifyString, config.NotifyList} { // on, off
		got := testing.AllocsPerRun(2000, func() { s.notifyKeyspaceEvent(nil, class, "set", key, 0) })
		assert.Zero(t, got, "class %d", class)
	}
}

// A RESP3 client subscribed to its own writes' events gets each push where
// Redis adds it to the client's output: before or after the command's reply,
// as the command notifies before or after replying.
func TestKeyspaceNotificationsToTheWriterItselfMatchRedis(t *testing.T) {
	run := func(addr string) string {
		c := dialTestAddr(t, addr)
		c.do("CONFIG", "SET", "notify-keyspace-events", "KEA")
		c.do("HELLO", "3")
		c.do("PSUBSCRIBE", "__keyevent@*")
		for _, cmd := range [][]string{
			ncmd("SET", "a", "1"), ncmd("LPUSH", "l", "x"), ncmd("HSET", "h", "f", "v"), ncmd("SADD", "s", "m"),
			ncmd("ZADD", "z", "1", "m"), ncmd("INCR", "n"), ncmd("EXPIRE", "a", "100"), ncmd("RPOP", "l"),
			ncmd("DEL", "a", "h", "s", "z", "n"), ncmd("PUBLISH", "__keyevent@0__:own", "x"),
			ncmd("HSET", "h", "a", "1", "b", "2"), ncmd("HSETNX", "h", "c", "3"), ncmd("HINCRBY", "h", "a", "1"),
			ncmd("HINCRBYFLOAT", "h", "a", "1.5"), ncmd("HDEL", "h", "a", "b", "c"),
			ncmd("SADD", "s", "1", "2", "3"), ncmd("SREM", "s", "1"), ncmd("SMOVE", "s", "s2", "2"), ncmd("SPOP", "s"),
			ncmd("SADD", "s3", "1"), ncmd("SINTERSTORE", "s4", "s2", "s3"), ncmd("SUNIONSTORE", "s4", "s2", "s3"),
			ncmd("ZADD", "z", "1", "a", "2", "b", "3", "c"), ncmd("ZINCRBY", "z", "1", "a"), ncmd("ZREM", "z", "a"),
			ncmd("ZPOPMIN", "z"), ncmd("ZUNIONSTORE", "z2", "1", "z"), ncmd("ZREMRANGEBYRANK", "z2", "0", "-1"),
			ncmd("ZINTERSTORE", "z3", "1", "nokey"),
			ncmd("RPUSH", "l", "a", "b", "c"), ncmd("LSET", "l", "0", "x"), ncmd("LINSERT", "l", "BEFORE", "x", "w"),
			ncmd("LREM", "l", "0", "w"), ncmd("LTRIM", "l", "0", "0"), ncmd("LMOVE", "l", "l2", "LEFT", "RIGHT"),
			ncmd("SET", "s1", "v"), ncmd("APPEND", "s1", "w"), ncmd("SETRANGE", "s1", "0", "x"), ncmd("GETSET", "s1", "y"),
			ncmd("MSET", "m1", "1", "m2", "2"), ncmd("INCRBYFLOAT", "f", "1.5"), ncmd("GETDEL", "s1"),
			ncmd("SET", "e", "v", "EX", "100"), ncmd("PERSIST", "e"), ncmd("GETEX", "e", "EX", "100"), ncmd("EXPIRE", "e", "-1"),
			ncmd("SET", "r", "v"), ncmd("RENAME", "r", "r2"), ncmd("COPY", "r2", "r3"), ncmd("SETBIT", "b", "1", "1"),
			ncmd("PFADD", "hl", "a"), ncmd("XADD", "x", "1-1", "f", "v"), ncmd("XDEL", "x", "1-1"),
			ncmd("RPUSH", "so", "2", "1"), ncmd("SORT", "so", "STORE", "so2"),
			ncmd("MULTI"), ncmd("SET", "t", "1"), ncmd("LPUSH", "tl", "a"), ncmd("PUBLISH", "__keyevent@0__:own", "y"), ncmd("EXEC"),
			ncmd("EVAL", "redis.call('set', KEYS[1], '1') return redis.call('lpush', KEYS[2], 'a')", "2", "{e}a", "{e}b"),
		} {
			c.send(cmd...)
		}
		c.send("PING", "end")
		var b strings.Builder
		for range 100 {
			m := c.read()
			b.WriteString(m)
			if m == "$3\r\nend\r\n" {
				break
			}
		}
		c.do("CONFIG", "SET", "notify-keyspace-events", "")
		return b.String()
	}
	want := run(startRealRedis(t))
	got := run(startTestServer(t).Addr().String())
	if !assert.Equal(t, strings.Split(want, "\r\n"), strings.Split(got, "\r\n")) {
		t.Logf("redis: %q", want)
		t.Logf("shoal: %q", got)
	}
}

// BenchmarkNotifyToPatternSubscriber is the cost of one write's keyspace
// notifications (KEA) with one "__key*__:*" subscriber draining them, as in
// scripts/bench-notify.sh: two channels matched, two messages queued.
func BenchmarkNotifyToPatternSubscriber(b *testing.B) {
	s := startTestServer(b, "--notify-keyspace-events", "KEA")
	sub := dialTest(b, s)
	sub.do("PSUBSCRIBE", "__key*__:*")
	drained := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, sub.r); close(drained) }()
	key := []byte("key:000000123456")
	cpu0 := processCPU(b)
	b.ResetTimer()
	for range b.N {
		s.notifyKeyspaceEvent(nil, config.NotifyString, "set", key, 0)
	}
	b.StopTimer()
	// The process's CPU time (the subscriber's writer and the reader here
	// included) suffers less than wall time from other loads.
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
	_ = sub.c.Close()
	<-drained
}

// processCPU is the process's user+system CPU time in nanoseconds.
func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
