package node

import (
	"encoding/binary"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-db/shoal/rdb"
	"github.com/stretchr/testify/require"
)

// payloadWithFooter wraps object bytes in a DUMP footer of the given RDB
// version with a correct CRC64.
func payloadWithFooter(obj []byte, version uint16) string {
	p := append([]byte(nil), obj...)
	p = binary.LittleEndian.AppendUint16(p, version)
	return string(binary.LittleEndian.AppendUint64(p, rdb.CRC64(p)))
}

// TestDumpRestoreErrorsMatchRedis sends the same requests to a real
// redis-server and to shoal and compares the replies byte for byte.
func TestDumpRestoreErrorsMatchRedis(t *testing.T) {
	addr := startRealRedis(t)
	s := startTestServer(t)
	redis := dialTestAddr(t, addr)
	shoal := dialTest(t, s)
	good := payloadWithFooter([]byte("\x00\x03bar"), 10)
	// A port with nothing listening: MIGRATE cannot connect.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadPort := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	require.NoError(t, l.Close())

	cases := [][]string{
		{"SET", "exists", "v"},
		{"DUMP", "nokey"},
		{"DUMP"},
		{"DUMP", "a", "b"},
		{"RESTORE", "k", "0"},
		{"RESTORE", "k", "0", good},
		{"GET", "k"},
		{"RESTORE", "exists", "0", good},
		{"RESTORE", "exists", "0", good, "REPLACE"},
		{"RESTORE", "k2", "-1", good},
		{"RESTORE", "k2", "abc", good},
		{"RESTORE", "k2", "0", "short"},
		{"RESTORE", "k2", "0", good[:len(good)-1] + "x"},
		{"RESTORE", "k2", "0", payloadWithFooter([]byte("\x00\x03bar"), 11)},
		{"RESTORE", "k2", "0", payloadWithFooter([]byte("\x00\x03bar"), 9)},
		{"RESTORE", "k2", "0", payloadWithFooter([]byte("\x00\x05ba"), 10)},
		{"RESTORE", "k2", "0", payloadWithFooter([]byte("\x12\x00"), 10)},           // empty list
		{"RESTORE", "k2", "0", payloadWithFooter([]byte("\x02\x02\x01a\x01a"), 10)}, // duplicate set member
		{"RESTORE", "k2", "0", payloadWithFooter([]byte("\x07\x00"), 10)},           // module
		{"RESTORE", "k2", "0", payloadWithFooter([]byte("\x63"), 10)},               // unknown type
		{"RESTORE", "k2", "0", good, "FOO"},
		{"RESTORE", "k2", "0", good, "IDLETIME"},
		{"RESTORE", "k2", "0", good, "IDLETIME", "-1"},
		{"RESTORE", "k2", "0", good, "IDLETIME", "x"},
		{"RESTORE", "k2", "0", good, "FREQ", "256"},
		{"RESTORE", "k2", "0", good, "FREQ", "-1"},
		{"RESTORE", "k2", "0", good, "IDLETIME", "10", "FREQ", "5"},
		{"RESTORE", "k2", "0", good, "FREQ", "5", "IDLETIME", "10"},
		{"RESTORE", "k2", "1", good, "ABSTTL"},
		{"EXISTS", "k2"},
		{"RESTORE", "exists", "1", good, "ABSTTL", "REPLACE"},
		{"EXISTS", "exists"},
		{"RESTORE", "k3", "100000", good, "REPLACE", "IDLETIME", "5"},
		{"OBJECT", "IDLETIME", "k3"},
		{"RESTORE-ASKING", "k4", "0", good},
		{"GET", "k4"},
		{"MIGRATE", "127.0.0.1", deadPort, "nokey", "0", "100"},
		{"MIGRATE", "127.0.0.1", deadPort, "k", "0", "100"},
		{"MIGRATE", "127.0.0.1", deadPort, "k", "0", "abc"},
		{"MIGRATE", "127.0.0.1", deadPort, "k", "x", "100"},
		{"MIGRATE", "127.0.0.1", deadPort, "k", "0", "100", "KEYS", "a"},
		{"MIGRATE", "127.0.0.1", deadPort, "", "0", "100", "KEYS", "nokey1", "nokey2"},
		{"MIGRATE", "127.0.0.1", deadPort, "k", "0", "100", "AUTH"},
		{"MIGRATE", "127.0.0.1", deadPort, "k", "0", "100", "AUTH2", "u"},
		{"MIGRATE", "127.0.0.1", deadPort, "k", "0", "100", "BOGUS"},
		{"MIGRATE", "127.0.0.1", deadPort, "k", "0"},
	}
	for _, c := range cases {
		want, got := redis.do(c...), shoal.do(c...)
		require.Equal(t, want, got, "%q", c)
	}
}

// migrateTarget is a server a MIGRATE can be sent to, with a connection
// for checking what arrived.
type migrateTarget struct {
	name string
	addr string
	conn *testConn
}

func (m migrateTarget) host() string { h, _, _ := net.SplitHostPort(m.addr); return h }
func (m migrateTarget) port() string { _, p, _ := net.SplitHostPort(m.addr); return p }

// TestMigrateInterop runs MIGRATE in every direction between a real
// redis-server and shoal nodes (redis->shoal, shoal->redis,
// shoal->shoal): one key, KEYS, COPY, REPLACE, AUTH and AUTH2, a target
// error (BUSYKEY) and a wrong password, comparing each source's reply with
// what Redis replies in the same situation.
func TestMigrateInterop(t *testing.T) {
	redisAddr := startRealRedis(t, "--requirepass", "pw", "--enable-debug-command", "yes")
	shoalSrc := startTestServer(t, "--enable-debug-command", "yes")
	shoalDst := startTestServer(t, "--requirepass", "pw", "--enable-debug-command", "yes")
	redisSrcAddr := startRealRedis(t, "--enable-debug-command", "yes")

	redisConn := dialTestAddr(t, redisAddr)
	require.Equal(t, "+OK\r\n", redisConn.do("AUTH", "pw"))
	shoalDstConn := dialTest(t, shoalDst)
	require.Equal(t, "+OK\r\n", shoalDstConn.do("AUTH", "pw"))
	redisTarget := migrateTarget{"redis", redisAddr, redisConn}
	shoalTarget := migrateTarget{"shoal", shoalDst.Addr().String(), shoalDstConn}

	sources := []struct {
		name string
		conn *testConn
	}{
		{"shoal", dialTest(t, shoalSrc)},
		{"redis", dialTestAddr(t, redisSrcAddr)},
	}
	for _, src := range sources {
		for _, dst := range []migrateTarget{redisTarget, shoalTarget} {
			t.Run(src.name+"->"+dst.name, func(t *testing.T) {
				sc, dc := src.conn, dst.conn
				sc.do("FLUSHALL")
				dc.do("FLUSHALL")
				sc.do("SET", "s", "value", "PX", "100000")
				sc.do("RPUSH", "l", "a", "b", "c")
				sc.do("HSET", "h", "f", "v")
				sc.do("ZADD", "z", "1.5", "m")
				sc.do("XADD", "x", "1-1", "f", "v")
				want := map[string]string{}
				for _, k := range []string{"s", "l", "h", "z", "x"} {
					want[k] = sc.do("DUMP", k)
				}
				// One key, COPY, AUTH2 with the default user, db 0.
				require.Equal(t, "+OK\r\n", sc.do("MIGRATE", dst.host(), dst.port(), "s", "0", "5000", "COPY", "AUTH2", "default", "pw"))
				require.Equal(t, ":1\r\n", sc.do("EXISTS", "s"))
				ttl, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(dc.do("PTTL", "s"), ":")))
				require.NoError(t, err)
				require.True(t, ttl > 90000 && ttl <= 100000, "ttl %d", ttl)
				// The same key again: BUSYKEY from the target.
				require.Equal(t, "-ERR Target instance replied with error: BUSYKEY Target key name already exists.\r\n",
					sc.do("MIGRATE", dst.host(), dst.port(), "s", "0", "5000", "COPY", "AUTH", "pw"))
				// REPLACE + KEYS moves (deletes) everything, including a missing key.
				require.Equal(t, "+OK\r\n", sc.do("MIGRATE", dst.host(), dst.port(), "", "0", "5000", "REPLACE", "AUTH", "pw", "KEYS", "s", "l", "h", "nokey", "z", "x"))
				require.Equal(t, ":0\r\n", sc.do("EXISTS", "s", "l", "h", "z", "x"))
				require.Equal(t, "$5\r\nvalue\r\n", dc.do("GET", "s"))
				delete(want, "s") // its digest includes the TTL
				for k, d := range want {
					require.Equal(t, "+OK\r\n", sc.do("RESTORE", "cmp:"+k, "0", bulkBody(t, d)))
					require.Equal(t, sc.do("DEBUG", "DIGEST-VALUE", "cmp:"+k), dc.do("DEBUG", "DIGEST-VALUE", k), k)
				}
				// A wrong password: the target's error, nothing deleted.
				require.Equal(t, "-ERR Target instance replied with error: WRONGPASS invalid username-password pair or user is disabled.\r\n",
					sc.do("MIGRATE", dst.host(), dst.port(), "cmp:l", "0", "5000", "AUTH", "wrong"))
				require.Equal(t, ":1\r\n", sc.do("EXISTS", "cmp:l"))
				// No AUTH at all on a fresh connection is NOAUTH; a cached
				// connection stays authenticated, as in Redis.
				require.Contains(t, sc.do("INFO", "stats"), "migrate_cached_sockets:")
			})
		}
	}
}

// TestMigrateCachesConnectionsAndTimesOut checks the connection cache
// (INFO migrate_cached_sockets, SELECT sent once per connection) and the
// IOERR texts of a target that accepts but never answers, compared with
// Redis's.
func TestMigrateCachesConnectionsAndTimesOut(t *testing.T) {
	s := startTestServer(t)
	dst := startTestServer(t)
	tc := dialTest(t, s)
	dc := dialTest(t, dst)
	require.Contains(t, tc.do("INFO", "stats"), "migrate_cached_sockets:0\r\n")
	tc.do("SET", "a", "1")
	tc.do("SET", "b", "2")
	_, port, _ := net.SplitHostPort(dst.Addr().String())
	require.Equal(t, "+OK\r\n", tc.do("MIGRATE", "127.0.0.1", port, "a", "3", "1000"))
	require.Contains(t, tc.do("INFO", "stats"), "migrate_cached_sockets:1\r\n")
	require.Equal(t, "+OK\r\n", tc.do("MIGRATE", "127.0.0.1", port, "b", "3", "1000"))
	require.Contains(t, tc.do("INFO", "stats"), "migrate_cached_sockets:1\r\n")
	dc.do("SELECT", "3")
	require.Equal(t, ":2\r\n", dc.do("EXISTS", "a", "b"))
	require.Equal(t, ":0\r\n", tc.do("EXISTS", "a", "b"))
	// One connection, so the target saw one client besides dc.
	require.Equal(t, 2, strings.Count(dc.do("CLIENT", "LIST"), "id="))

	// A silent target: it accepts and never replies.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	defer func() {
		for {
			select {
			case c := <-accepted:
				c.Close()
			default:
				return
			}
		}
	}()
	_, silentPort, _ := net.SplitHostPort(l.Addr().String())
	redis := dialTestAddr(t, startRealRedis(t))
	tc.do("SET", "c", "3")
	redis.do("SET", "c", "3")
	start := time.Now()
	got := tc.do("MIGRATE", "127.0.0.1", silentPort, "c", "0", "200")
	require.Less(t, time.Since(start), 3*time.Second)
	require.Equal(t, redis.do("MIGRATE", "127.0.0.1", silentPort, "c", "0", "200"), got)
	require.Equal(t, "-IOERR error or timeout reading to target instance\r\n", got)
	require.Equal(t, ":1\r\n", tc.do("EXISTS", "c"))
}

// TestRestoreAndMigrateEffects checks what RESTORE and MIGRATE put on the
// write-effect feed: a relative TTL becomes the absolute one + ABSTTL, an
// absolute one and no TTL stay verbatim, an expired RESTORE ... REPLACE
// is a DEL, and MIGRATE is the DEL of the keys the target acknowledged
// (nothing with COPY).
func TestRestoreAndMigrateEffects(t *testing.T) {
	s := startTestServer(t)
	dst := startTestServer(t)
	feed := &recordingFeed{}
	s.AddEffectFeed(feed)
	tc := dialTest(t, s)
	good := payloadWithFooter([]byte("\x00\x03bar"), 10)

	before := time.Now().UnixMilli()
	require.Equal(t, "+OK\r\n", tc.do("RESTORE", "k", "5000", good))
	after := time.Now().UnixMilli()
	fx := feed.take()
	require.Len(t, fx, 1)
	parts := strings.Split(fx[0], " ")
	require.Equal(t, []string{"0:RESTORE", "k"}, parts[:2])
	require.Equal(t, "ABSTTL", parts[len(parts)-1])
	abs, err := strconv.ParseInt(parts[2], 10, 64)
	require.NoError(t, err)
	require.True(t, abs >= before+5000 && abs <= after+5000)
	pexp := tc.do("PEXPIRETIME", "k")
	require.Equal(t, ":"+parts[2]+"\r\n", pexp)

	require.Equal(t, "+OK\r\n", tc.do("RESTORE", "k2", "0", good))
	require.Equal(t, []string{"0:RESTORE k2 0 " + good}, feed.take())
	far := strconv.FormatInt(time.Now().UnixMilli()+100000, 10)
	require.Equal(t, "+OK\r\n", tc.do("RESTORE", "k3", far, good, "ABSTTL"))
	require.Equal(t, []string{"0:RESTORE k3 " + far + " " + good + " ABSTTL"}, feed.take())
	require.Equal(t, "+OK\r\n", tc.do("RESTORE", "k3", "1", good, "ABSTTL", "REPLACE"))
	require.Equal(t, []string{"0:DEL k3"}, feed.take())
	require.Equal(t, "+OK\r\n", tc.do("RESTORE", "k3", "1", good, "ABSTTL"))
	require.Empty(t, feed.take())
	require.Equal(t, "-BUSYKEY Target key name already exists.\r\n", tc.do("RESTORE", "k2", "0", good))
	require.Empty(t, feed.take())

	_, port, _ := net.SplitHostPort(dst.Addr().String())
	require.Equal(t, "+OK\r\n", tc.do("MIGRATE", "127.0.0.1", port, "", "0", "1000", "COPY", "KEYS", "k", "k2"))
	require.Empty(t, feed.take())
	dc := dialTest(t, dst)
	dc.do("DEL", "k")
	// k2 is now busy on the target: only k is moved and deleted.
	require.Equal(t, "-ERR Target instance replied with error: BUSYKEY Target key name already exists.\r\n",
		tc.do("MIGRATE", "127.0.0.1", port, "", "0", "1000", "KEYS", "k", "k2"))
	require.Equal(t, []string{"0:DEL k"}, feed.take())
	require.Equal(t, ":0\r\n", tc.do("EXISTS", "k"))
	require.Equal(t, ":1\r\n", tc.do("EXISTS", "k2"))
	require.Equal(t, "+OK\r\n", tc.do("MIGRATE", "127.0.0.1", port, "", "0", "1000", "REPLACE", "KEYS", "k2"))
	require.Equal(t, []string{"0:DEL k2"}, feed.take())
	require.Equal(t, "+NOKEY\r\n", tc.do("MIGRATE", "127.0.0.1", port, "k2", "0", "1000"))
	require.Empty(t, feed.take())
}

// TestMigrateFromClusterSendsRestoreAsking: a cluster-mode source sends
// RESTORE-ASKING (what a target with the slot IMPORTING accepts), a
// standalone source plain RESTORE, as Redis does; the empty key argument
// of the KEYS form names no key (no slot of "" is routed).
func TestMigrateFromClusterSendsRestoreAsking(t *testing.T) {
	src := startTestServer(t, "--cluster-enabled", "yes", "--cluster-config-file", t.TempDir()+"/nodes.conf")
	dst := startTestServer(t)
	tc := dialTest(t, src)
	dc := dialTest(t, dst)
	serveSlots(t, tc)
	require.Equal(t, "+OK\r\n", tc.do("MSET", "{t}a", "1", "{t}b", "2"))
	_, port, _ := net.SplitHostPort(dst.Addr().String())
	require.Equal(t, "+OK\r\n", tc.do("MIGRATE", "127.0.0.1", port, "", "0", "1000", "KEYS", "{t}a", "{t}b"))
	require.Equal(t, "*2\r\n$1\r\n1\r\n$1\r\n2\r\n", dc.do("MGET", "{t}a", "{t}b"))
	stats := bulkBody(t, dc.do("INFO", "commandstats"))
	require.Contains(t, stats, "cmdstat_restore-asking:calls=2,")
	require.NotContains(t, stats, "cmdstat_restore:")
	require.Equal(t, "-CROSSSLOT Keys in request don't hash to the same slot\r\n",
		tc.do("MIGRATE", "127.0.0.1", port, "", "0", "1000", "KEYS", "a", "b"))
}

// TestMigrateLargeValue moves a 200k-element list (a ~2 MB payload, many
// 64 KiB writes) from shoal to a real redis-server and back.
func TestMigrateLargeValue(t *testing.T) {
	s := startTestServer(t, "--enable-debug-command", "yes")
	tc := dialTest(t, s)
	redisAddr := startRealRedis(t, "--enable-debug-command", "yes")
	redis := dialTestAddr(t, redisAddr)
	require.Empty(t, pipelineDo(t, tc, batched([]string{"RPUSH", "big"}, 200_000, func(i int) []string {
		return []string{"element-" + strconv.Itoa(i)}
	})))
	want := tc.do("DEBUG", "DIGEST-VALUE", "big")
	rh, rp, _ := net.SplitHostPort(redisAddr)
	require.Equal(t, "+OK\r\n", tc.do("MIGRATE", rh, rp, "big", "0", "5000"))
	require.Equal(t, ":0\r\n", tc.do("EXISTS", "big"))
	require.Equal(t, want, redis.do("DEBUG", "DIGEST-VALUE", "big"))
	sh, sp, _ := net.SplitHostPort(s.Addr().String())
	require.Equal(t, "+OK\r\n", redis.do("MIGRATE", sh, sp, "big", "0", "5000"))
	require.Equal(t, want, tc.do("DEBUG", "DIGEST-VALUE", "big"))
	require.Equal(t, ":200000\r\n", tc.do("LLEN", "big"))
}
