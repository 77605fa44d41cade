package node

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

// pipelineDo sends every command, then reads every reply; it returns the
// replies that were errors.
func pipelineDo(t *testing.T, tc *testConn, cmds [][]string) []string {
	t.Helper()
	var buf []byte
	for _, c := range cmds {
		buf = append(buf, encodeCommand(c...)...)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = tc.c.SetWriteDeadline(time.Now().Add(testIOTimeout))
		_, _ = tc.c.Write(buf)
	}()
	var errs []string
	for range cmds {
		if r := tc.read(); strings.HasPrefix(r, "-") {
			errs = append(errs, r)
		}
	}
	<-done
	return errs
}

// dumpFixture is one key of the interop data set: the commands that build
// it (key is "k").
type dumpFixture struct {
	name string
	cmds [][]string
}

// batched builds cmd prefix + args in commands of at most 1000 arguments.
func batched(prefix []string, n int, elem func(i int) []string) [][]string {
	var out [][]string
	cur := append([]string(nil), prefix...)
	for i := 0; i < n; i++ {
		cur = append(cur, elem(i)...)
		if len(cur)-len(prefix) >= 1000 {
			out = append(out, cur)
			cur = append([]string(nil), prefix...)
		}
	}
	if len(cur) > len(prefix) {
		out = append(out, cur)
	}
	return out
}

// dumpFixtures covers every type and every encoding Redis 7.0 DUMPs, small
// and large (200k elements for the collections, 20k stream entries with
// groups and pending entries).
func dumpFixtures() []dumpFixture {
	const big = 200_000
	itoa := strconv.Itoa
	var streamBig [][]string
	for i := 1; i <= 20_000; i++ {
		if i%5 == 0 {
			streamBig = append(streamBig, []string{"XADD", "k", itoa(i) + "-1", "other", itoa(i)})
		} else {
			streamBig = append(streamBig, []string{"XADD", "k", itoa(i) + "-1", "f", itoa(i), "g", strings.Repeat("v", i%50)})
		}
	}
	streamBig = append(streamBig,
		[]string{"XDEL", "k", "7-1", "100-1"},
		[]string{"XGROUP", "CREATE", "k", "g1", "0"},
		[]string{"XREADGROUP", "GROUP", "g1", "alice", "COUNT", "500", "STREAMS", "k", ">"},
		[]string{"XREADGROUP", "GROUP", "g1", "bob", "COUNT", "300", "STREAMS", "k", ">"},
		[]string{"XACK", "k", "g1", "3-1", "4-1"},
		[]string{"XGROUP", "CREATE", "k", "g2", "$"},
		[]string{"XGROUP", "CREATECONSUMER", "k", "g2", "idle"},
	)
	return []dumpFixture{
		{"string-int", [][]string{{"SET", "k", "-123456"}}},
		{"string-bigint", [][]string{{"SET", "k", "9223372036854775807"}}},
		{"string-embstr", [][]string{{"SET", "k", "hello"}}},
		{"string-lzf", [][]string{{"SET", "k", strings.Repeat("abcdefgh", 500)}}},
		{"string-incompressible", [][]string{{"SET", "k", "qwertyuiopasdfghjklzxcvbnm1234567890"}}},
		{"string-raw-append", [][]string{{"SET", "k", "x"}, {"APPEND", "k", strings.Repeat("yz", 40)}}},
		{"hll", [][]string{{"PFADD", "k", "a", "b", "c", "d"}}},
		{"list-small", [][]string{{"RPUSH", "k", "a", "1", "-5000", "70000", "9999999999", strings.Repeat("x", 100)}}},
		{"list-big", batched([]string{"RPUSH", "k"}, big, func(i int) []string { return []string{"e" + itoa(i)} })},
		{"list-ints", batched([]string{"LPUSH", "k"}, 5000, func(i int) []string { return []string{itoa(i * 7919)} })},
		{"hash-listpack", [][]string{{"HSET", "k", "f1", "v1", "f2", "22", "f3", strings.Repeat("z", 60)}}},
		{"hash-big", batched([]string{"HSET", "k"}, big, func(i int) []string { return []string{"f" + itoa(i), "v" + itoa(i)} })},
		{"hash-long-value", [][]string{{"HSET", "k", "f", strings.Repeat("long", 30)}}},
		{"set-intset", [][]string{{"SADD", "k", "1", "-2", "300", "-70000", "5000000000"}}},
		{"set-strings", [][]string{{"SADD", "k", "a", "b", "c"}}},
		{"set-big-ints", batched([]string{"SADD", "k"}, big, func(i int) []string { return []string{itoa(i)} })},
		{"set-big", batched([]string{"SADD", "k"}, big, func(i int) []string { return []string{"m" + itoa(i)} })},
		{"zset-listpack", [][]string{{"ZADD", "k", "1", "a", "2.5", "b", "-3", "c", "inf", "d", "-inf", "e", "1e300", "f"}}},
		{"zset-big", batched([]string{"ZADD", "k"}, big, func(i int) []string { return []string{itoa(i%1000) + ".25", "m" + itoa(i)} })},
		{"stream-small", [][]string{{"XADD", "k", "1-1", "a", "1"}, {"XADD", "k", "2-0", "b", "x"}}},
		{"stream-big-groups", streamBig},
		{"stream-groups", append(batchedXAdd(3000), [][]string{
			{"XGROUP", "CREATE", "k", "g", "0"},
			{"XREADGROUP", "GROUP", "g", "c1", "COUNT", "10", "STREAMS", "k", ">"},
			{"XREADGROUP", "GROUP", "g", "c2", "COUNT", "5", "STREAMS", "k", ">"},
			{"XACK", "k", "g", "3-0"},
		}...)},
		{"stream-empty", [][]string{{"XADD", "k", "5-5", "a", "1"}, {"XDEL", "k", "5-5"}, {"XGROUP", "CREATE", "k", "g", "$"}}},
	}
}

// batchedXAdd is n XADDs with explicit IDs, the fields changing every
// 7 entries (entries with and without the master fields).
func batchedXAdd(n int) [][]string {
	out := make([][]string, 0, n)
	for i := 1; i <= n; i++ {
		f := "f" + strconv.Itoa(i/7)
		out = append(out, []string{"XADD", "k", strconv.Itoa(i) + "-0", f, strconv.Itoa(i), "g", strings.Repeat("v", i%40)})
	}
	return out
}

// digestValue returns DEBUG DIGEST-VALUE k's raw reply.
func digestValue(t *testing.T, tc *testConn) string {
	t.Helper()
	r := tc.do("DEBUG", "DIGEST-VALUE", "k")
	if !strings.HasPrefix(r, "*1\r\n+") || len(r) != len("*1\r\n+\r\n")+40 {
		t.Fatalf("DEBUG DIGEST-VALUE k = %q", r)
	}
	return r
}

// TestDumpRestoreInterop builds every fixture on a real redis-server and on
// shoal; DUMP on each side is RESTOREd on the other, and the restored value
// must have the same DEBUG DIGEST-VALUE, type and encoding as the original.
func TestDumpRestoreInterop(t *testing.T) {
	addr := startRealRedis(t, "--enable-debug-command", "yes")
	s := startTestServer(t, "--enable-debug-command", "yes")
	redis := dialTestAddr(t, addr)
	shoal := dialTest(t, s)
	for _, f := range dumpFixtures() {
		t.Run(f.name, func(t *testing.T) {
			for _, side := range []*testConn{redis, shoal} {
				side.do("DEL", "k")
				if errs := pipelineDo(t, side, f.cmds); len(errs) > 0 {
					t.Fatalf("building fixture: %q", errs[0])
				}
			}
			want := digestValue(t, redis)
			if got := digestValue(t, shoal); got != want {
				t.Fatalf("fixture differs before any DUMP: redis %q shoal %q", want, got)
			}
			wantType := redis.do("TYPE", "k")
			fromRedis := bulkBody(t, redis.do("DUMP", "k"))
			fromShoal := bulkBody(t, shoal.do("DUMP", "k"))
			// The encoding a restored value gets is the one Redis gives its
			// own payload (strings come back embstr/raw/int by length).
			if r := redis.do("RESTORE", "k", "0", fromRedis, "REPLACE"); r != "+OK\r\n" {
				t.Fatalf("redis->redis: RESTORE = %q", r)
			}
			wantEnc := redis.do("OBJECT", "ENCODING", "k")
			for _, tc := range []struct {
				name    string
				to      *testConn
				payload string
			}{
				{"redis->shoal", shoal, fromRedis},
				{"shoal->redis", redis, fromShoal},
				{"shoal->shoal", shoal, fromShoal},
			} {
				if r := tc.to.do("RESTORE", "k", "0", tc.payload, "REPLACE"); r != "+OK\r\n" {
					t.Fatalf("%s: RESTORE = %q", tc.name, r)
				}
				if got := digestValue(t, tc.to); got != want {
					t.Fatalf("%s: digest %q, want %q", tc.name, got, want)
				}
				if got := tc.to.do("TYPE", "k"); got != wantType {
					t.Fatalf("%s: TYPE %q, want %q", tc.name, got, wantType)
				}
				if got := tc.to.do("OBJECT", "ENCODING", "k"); got != wantEnc {
					t.Fatalf("%s: encoding %q, want %q", tc.name, got, wantEnc)
				}
			}
			// Values whose layout the data determines are byte-identical.
			// (Not: hash tables, whose order is the hash function's; lists
			// grown at the head, whose nodes are cut by that history (RPUSH
			// ones match); streams with tombstones, which are history too;
			// PEL delivery and consumer seen times, each server's clock.)
			layoutIsHistory := strings.HasPrefix(f.name, "set-big") || f.name == "set-strings" ||
				f.name == "hash-big" || f.name == "list-ints" ||
				f.name == "stream-big-groups" || f.name == "stream-groups"
			if !layoutIsHistory && fromShoal != fromRedis {
				i := 0
				for i < len(fromShoal) && i < len(fromRedis) && fromShoal[i] == fromRedis[i] {
					i++
				}
				t.Fatalf("DUMP differs from Redis's at byte %d of %d/%d: redis %q shoal %q", i, len(fromRedis), len(fromShoal),
					fromRedis[i:min(i+16, len(fromRedis))], fromShoal[i:min(i+16, len(fromShoal))])
			}
			if strings.HasPrefix(f.name, "stream") {
				for _, q := range [][]string{{"XINFO", "STREAM", "k"}, {"XINFO", "GROUPS", "k"}, {"XPENDING", "k", "g1"}} {
					if w, g := redis.do(q...), shoal.do(q...); w != g {
						t.Fatalf("%v differs after RESTORE:\n redis %q\n shoal %q", q, w, g)
					}
				}
			}
		})
	}
}

// TestDumpBytesMatchRedisRandom: DUMP of random compressible strings (LZF
// with every kind of match and literal run), random integers, small
// listpack lists, hashes and sorted sets (score texts) and intsets is
// byte-identical on shoal and Redis.
func TestDumpBytesMatchRedisRandom(t *testing.T) {
	redis := dialTestAddr(t, startRealRedis(t))
	shoal := dialTest(t, startTestServer(t))
	rng := rand.New(rand.NewPCG(7, uint64(time.Now().UnixNano())))
	randText := func() string {
		alphabet := "abcdefgh"[:1+rng.IntN(8)]
		n := 1 + rng.IntN(3000)
		var b strings.Builder
		for b.Len() < n {
			if b.Len() > 0 && rng.IntN(4) == 0 {
				s := b.String()
				i := rng.IntN(len(s))
				b.WriteString(s[i:min(len(s), i+1+rng.IntN(300))])
				continue
			}
			b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	randScore := func() string {
		switch rng.IntN(4) {
		case 0:
			return strconv.Itoa(rng.IntN(2000) - 1000)
		case 1:
			return strconv.FormatFloat(rng.NormFloat64()*1e6, 'g', -1, 64)
		case 2:
			return strconv.FormatFloat(rng.Float64()/1e5, 'g', 5, 64)
		}
		return strconv.FormatFloat(float64(rng.Int64()), 'g', -1, 64)
	}
	for i := range 600 {
		var cmd []string
		switch i % 7 {
		case 4:
			cmd = []string{"HSET", "k"}
			for j := range 1 + rng.IntN(20) {
				cmd = append(cmd, "f"+strconv.Itoa(j), randScore())
			}
		case 5:
			cmd = []string{"ZADD", "k"}
			for j := range 1 + rng.IntN(20) {
				cmd = append(cmd, randScore(), "m"+strconv.Itoa(j))
			}
		case 6:
			cmd = []string{"SADD", "k"}
			for range 1 + rng.IntN(40) {
				cmd = append(cmd, strconv.FormatInt(rng.Int64()>>rng.IntN(64)-rng.Int64()>>rng.IntN(64), 10))
			}
		case 0, 1:
			cmd = []string{"SET", "k", randText()}
		case 2:
			cmd = []string{"SET", "k", strconv.FormatInt(rng.Int64N(1<<40)-1<<39, 10)}
		case 3:
			cmd = []string{"RPUSH", "k"}
			for range 1 + rng.IntN(20) {
				if rng.IntN(2) == 0 {
					cmd = append(cmd, strconv.FormatInt(rng.Int64()>>rng.IntN(64), 10))
				} else {
					s := randText()
					cmd = append(cmd, s[:min(len(s), 1+rng.IntN(30))])
				}
			}
		}
		for _, c := range []*testConn{redis, shoal} {
			c.do("DEL", "k")
			c.do(cmd...)
		}
		want, got := redis.do("DUMP", "k"), shoal.do("DUMP", "k")
		if want != got {
			t.Fatalf("DUMP after %.60q... differs:\n redis %q\n shoal %q", strings.Join(cmd, " "), want[:min(len(want), 80)], got[:min(len(got), 80)])
		}
	}
}
