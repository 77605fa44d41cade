package integration

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// The append-only file (issue 18): with appendfsync always no write a
// client saw acknowledged is lost to kill -9, before and after
// BGREWRITEAOF; the directory is Redis 7.0's, read by redis-check-aof and
// redis-server, and shoal reads redis-server's.

// aofRounds is how many kill -9 rounds the durability test runs:
// SHOAL_AOF_ROUNDS (e.g. 20 for a long run), else 3.
func aofRounds(t *testing.T) int { return envRounds(t, "SHOAL_AOF_ROUNDS", 3) }

// envRounds is the number in the environment variable name, else def.
func envRounds(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, name)
	return n
}

const (
	aofWriters   = 4
	aofOpCmds    = 5     // commands per op
	aofPipeline  = 20    // commands per pipelined batch
	aofRoundOps  = 1500  // acked ops (all writers) at which a round kills the server
	aofMaxOps    = 50000 // per writer: a bound, never reached in a round
	aofRoundWait = 60 * time.Second
)

// aofWriter writes op i of its stream as five commands on four types:
// SET s:<w>:<i>, HSET h:<w> f<i>, RPUSH l:<w> <i>, ZADD z:<w> <i> m<i>, and
// SET c:<w> <i>, a key each op overwrites. Its acked count is the number of
// ops whose batch came back without error; sent is the number of ops it
// ever sent (a batch whose reply was lost may or may not have been
// applied). The prefix is a hash tag, so in a cluster all of a writer's
// keys are in one slot and a batch goes to one node.
type aofWriter struct {
	prefix string
	acked  int
	sent   int
}

func (w *aofWriter) run(ctx context.Context, c redis.Cmdable, stopAt int, mu *sync.Mutex) {
	for i := w.ackedUnder(mu); i < stopAt; {
		pipe := c.Pipeline()
		n := min(aofPipeline/aofOpCmds, stopAt-i)
		for j := i; j < i+n; j++ {
			js := strconv.Itoa(j)
			pipe.Set(ctx, "s:"+w.prefix+":"+js, "v"+js, 0)
			pipe.HSet(ctx, "h:"+w.prefix, "f"+js, js)
			pipe.RPush(ctx, "l:"+w.prefix, js)
			pipe.ZAdd(ctx, "z:"+w.prefix, redis.Z{Score: float64(j), Member: "m" + js})
			pipe.Set(ctx, "c:"+w.prefix, js, 0)
		}
		mu.Lock()
		w.sent = i + n
		mu.Unlock()
		if _, err := pipe.Exec(ctx); err != nil {
			return // the server was killed
		}
		i += n
		mu.Lock()
		w.acked = i
		mu.Unlock()
	}
}

func (w *aofWriter) ackedUnder(mu *sync.Mutex) int {
	mu.Lock()
	defer mu.Unlock()
	return w.acked
}

// verify checks that every acked op is in the dataset, that the list
// holds the ops in order without a gap (what is there beyond the acked ops
// was sent but its reply lost), and that the overwritten key holds the last
// acked op or a later one that was sent. It returns how many writes
// (commands) of acked ops it checked.
func (w *aofWriter) verify(t *testing.T, ctx context.Context, c redis.Cmdable) int {
	t.Helper()
	list, err := c.LRange(ctx, "l:"+w.prefix, 0, -1).Result()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(list), w.acked, "%s: acked ops missing from the list", w.prefix)
	require.LessOrEqual(t, len(list), w.sent, "%s: more ops in the list than were sent", w.prefix)
	if w.acked > 0 {
		last, err := c.Get(ctx, "c:"+w.prefix).Int()
		require.NoError(t, err, "%s: the overwritten key", w.prefix)
		require.GreaterOrEqual(t, last, w.acked-1, "%s: the overwritten key is older than the last acked op", w.prefix)
		require.Less(t, last, w.sent, "%s: the overwritten key holds an op never sent", w.prefix)
	}
	for i, v := range list {
		require.Equal(t, strconv.Itoa(i), v, "%s: list element %d", w.prefix, i)
	}
	h, err := c.HLen(ctx, "h:"+w.prefix).Result()
	require.NoError(t, err)
	require.GreaterOrEqual(t, int(h), w.acked, w.prefix)
	z, err := c.ZCard(ctx, "z:"+w.prefix).Result()
	require.NoError(t, err)
	require.GreaterOrEqual(t, int(z), w.acked, w.prefix)
	for from := 0; from < w.acked; from += 500 {
		var keys []string
		for i := from; i < min(from+500, w.acked); i++ {
			keys = append(keys, "s:"+w.prefix+":"+strconv.Itoa(i))
		}
		vals, err := c.MGet(ctx, keys...).Result()
		require.NoError(t, err)
		for k, v := range vals {
			require.Equal(t, "v"+strconv.Itoa(from+k), v, keys[k])
		}
		hv, err := c.HMGet(ctx, "h:"+w.prefix, hashFields(from, from+len(keys))...).Result()
		require.NoError(t, err)
		for k, v := range hv {
			require.Equal(t, strconv.Itoa(from+k), v, "%s field f%d", w.prefix, from+k)
		}
	}
	return w.acked * aofOpCmds
}

func hashFields(from, to int) []string {
	out := make([]string, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, "f"+strconv.Itoa(i))
	}
	return out
}

func TestAOFAlwaysKill9LosesNoAcknowledgedWrite(t *testing.T) {
	aofKill9(t, "always", aofRounds(t))
}

// Under everysec too a reply leaves after its write(2): killing the
// process (not the machine) loses nothing a client saw, as in Redis.
func TestAOFEverysecKill9LosesNoAcknowledgedWrite(t *testing.T) {
	aofKill9(t, "everysec", 2)
}

// aofLoad is aofWriters writers running until the server goes away (or
// aofMaxOps each).
type aofLoad struct {
	c       redis.UniversalClient
	mu      sync.Mutex
	writers []*aofWriter
	wg      sync.WaitGroup
}

func startAOFLoad(addr, prefix string) *aofLoad {
	return startAOFLoadOn(redis.NewClient(&redis.Options{Addr: addr, PoolSize: aofWriters, MaxRetries: -1}), prefix)
}

// startAOFLoadOn runs the writers on c (a client that does not retry: a
// retried batch would be applied twice), which end closes.
func startAOFLoadOn(c redis.UniversalClient, prefix string) *aofLoad {
	l := &aofLoad{c: c}
	ctx := context.Background()
	for w := range aofWriters {
		wr := &aofWriter{prefix: fmt.Sprintf("{%s:w%d}", prefix, w)}
		l.writers = append(l.writers, wr)
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			wr.run(ctx, l.c, aofMaxOps, &l.mu)
		}()
	}
	return l
}

func (l *aofLoad) acked() int {
	n := 0
	for _, w := range l.writers {
		n += w.ackedUnder(&l.mu)
	}
	return n
}

// waitAcked waits until n ops are acked in all.
func (l *aofLoad) waitAcked(t *testing.T, n int, what string) {
	t.Helper()
	WaitFor(t, aofRoundWait, what, func() string {
		if got := l.acked(); got < n {
			return fmt.Sprintf("%d of %d acked", got, n)
		}
		return ""
	})
}

// end stops the writers, if their server was not killed, by closing their
// client (a batch whose reply is lost that way counts as sent, not acked),
// waits for them and returns them.
func (l *aofLoad) end() []*aofWriter {
	_ = l.c.Close()
	l.wg.Wait()
	return l.writers
}

func verifyAOFWriters(t *testing.T, addr string, writers []*aofWriter) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	for _, w := range writers {
		w.verify(t, context.Background(), c)
	}
}

func aofKill9(t *testing.T, policy string, rounds int) {
	s := StartServer(t, "--appendonly", "yes", "--appendfsync", policy, "--save", "",
		"--enable-debug-command", "yes")
	var all []*aofWriter
	for round := range rounds {
		load := startAOFLoad(s.Addr, fmt.Sprintf("r%d", round))
		// Rounds after the first rewrite the AOF while the writers run: the
		// kill then lands during or after the rewrite.
		if round%2 == 1 {
			load.waitAcked(t, aofRoundOps/2, "writes before the rewrite")
			out, err := Query(s.Addr, "BGREWRITEAOF")
			require.NoError(t, err)
			require.Equal(t, "Background append only file rewriting started", out)
		}
		// Killed while the writers run: ops are in flight, some answered
		// just before the kill.
		load.waitAcked(t, aofRoundOps, "writes before the kill")
		s.Kill()
		all = append(all, load.end()...)
		s.Restart()
		verifyAOFWriters(t, s.Addr, all)
		t.Logf("round %d: %d ops acked before kill -9, all present after the restart", round, load.acked())
	}
	// A clean restart gives the same dataset.
	before, err := Query(s.Addr, "DEBUG", "DIGEST")
	require.NoError(t, err)
	s.Restart()
	after, err := Query(s.Addr, "DEBUG", "DIGEST")
	require.NoError(t, err)
	require.Equal(t, before, after)
}

// CONFIG SET appendonly yes while writers run: the base is the dataset at
// S and the incr file has every write after it, so once the rewrite is
// done a kill -9 loses nothing acknowledged, before or after the switch.
func TestAOFEnabledAtRunTimeUnderLoad(t *testing.T) {
	s := StartServer(t, "--save", "", "--appendfsync", "always", "--enable-debug-command", "yes")
	load := startAOFLoad(s.Addr, "live")
	load.waitAcked(t, aofRoundOps/2, "writes before appendonly yes")
	out, err := Query(s.Addr, "CONFIG", "SET", "appendonly", "yes")
	require.NoError(t, err)
	require.Equal(t, "OK", out)
	waitRewriteDone(t, s.Addr)
	at := load.acked()
	load.waitAcked(t, at+aofRoundOps/2, "writes after the rewrite")
	s.Kill()
	writers := load.end()
	s.Args = append(s.Args, "--appendonly", "yes")
	s.Restart()
	verifyAOFWriters(t, s.Addr, writers)
	t.Logf("%d ops acked (%d before the rewrite ended), all present after kill -9", load.acked(), at)
}

// aofDataset writes keys of every type, a transaction, expiries and a
// function library, so the digests compare something.
func aofDataset(t *testing.T, addr string, tag string) {
	t.Helper()
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	for i := range 200 {
		is := strconv.Itoa(i)
		require.NoError(t, c.Set(ctx, tag+"str:"+is, "value-"+is, 0).Err())
		require.NoError(t, c.RPush(ctx, tag+"list", is).Err())
		require.NoError(t, c.HSet(ctx, tag+"hash:"+strconv.Itoa(i%7), "f"+is, is).Err())
		require.NoError(t, c.SAdd(ctx, tag+"set", is).Err())
		require.NoError(t, c.ZAdd(ctx, tag+"zset", redis.Z{Score: float64(i) / 3, Member: is}).Err())
	}
	require.NoError(t, c.XAdd(ctx, &redis.XAddArgs{Stream: tag + "stream", ID: "1-1", Values: []string{"a", "1"}}).Err())
	require.NoError(t, c.XAdd(ctx, &redis.XAddArgs{Stream: tag + "stream", ID: "2-1", Values: []string{"b", "2"}}).Err())
	require.NoError(t, c.XGroupCreate(ctx, tag+"stream", "grp", "0").Err())
	require.NoError(t, c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "grp", Consumer: "alice", Streams: []string{tag + "stream", ">"}, Count: 1}).Err())
	require.NoError(t, c.XGroupCreateConsumer(ctx, tag+"stream", "grp", "bob").Err())
	for i := range 100 {
		require.NoError(t, c.SAdd(ctx, tag+"intset", i*7).Err())
	}
	lib := "lib" + strings.TrimSuffix(tag, ":")
	require.NoError(t, c.FunctionLoad(ctx, "#!lua name="+lib+"\nredis.register_function('"+lib+"f', function() return 1 end)").Err())
	require.NoError(t, c.Expire(ctx, tag+"str:1", time.Hour).Err())
	require.NoError(t, c.IncrByFloat(ctx, tag+"float", 1.5).Err())
	_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Incr(ctx, tag+"counter")
		p.LPop(ctx, tag+"list")
		return nil
	})
	require.NoError(t, err)
	c3 := redis.NewClient(&redis.Options{Addr: addr, DB: 3})
	defer c3.Close()
	require.NoError(t, c3.Set(ctx, tag+"in-db3", "x", 0).Err())
	require.NoError(t, c.SPop(ctx, tag+"set").Err())
}

func waitRewriteDone(t *testing.T, addr string) {
	t.Helper()
	WaitFor(t, 30*time.Second, "the AOF rewrite to finish", func() string {
		out, err := Query(addr, "INFO", "persistence")
		if err != nil {
			return err.Error()
		}
		if !strings.Contains(out, "aof_rewrite_in_progress:0") || strings.Contains(out, "aof_rewrite_scheduled:1") {
			return "in progress"
		}
		return ""
	})
}

// TestAOFCompatibleWithRedis: redis-check-aof accepts shoal's directory,
// redis-server loads it to the same DEBUG DIGEST, and shoal loads the
// directory redis-server then wrote (after its own rewrite) to the same
// digest.
func TestAOFCompatibleWithRedis(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed")
	}
	// The base as an RDB image (the default), and as commands.
	for _, preamble := range []string{"yes", "no"} {
		t.Run("aof-use-rdb-preamble "+preamble, func(t *testing.T) { aofCompatibleWithRedis(t, preamble) })
	}
}

func aofCompatibleWithRedis(t *testing.T, preamble string) {
	s := StartServer(t, "--appendonly", "yes", "--save", "", "--enable-debug-command", "yes",
		"--aof-timestamp-enabled", "yes", "--aof-use-rdb-preamble", preamble)
	aofDataset(t, s.Addr, "a:")
	out, err := Query(s.Addr, "BGREWRITEAOF")
	require.NoError(t, err)
	require.Equal(t, "Background append only file rewriting started", out)
	waitRewriteDone(t, s.Addr)
	aofDataset(t, s.Addr, "b:") // in the incr file after the base
	base := map[string]string{"yes": "appendonly.aof.2.base.rdb", "no": "appendonly.aof.2.base.aof"}[preamble]
	_, err = os.Stat(filepath.Join(s.Dir, "appendonlydir", base))
	require.NoError(t, err)
	digest, err := Query(s.Addr, "DEBUG", "DIGEST")
	require.NoError(t, err)
	s.Stop()

	manifest := filepath.Join(s.Dir, "appendonlydir", "appendonly.aof.manifest")
	if check, err := exec.LookPath("redis-check-aof"); err == nil {
		out, err := exec.Command(check, manifest).CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), "All AOF files and manifest are valid")
	}

	redisDir := t.TempDir()
	require.NoError(t, exec.Command("cp", "-r", filepath.Join(s.Dir, "appendonlydir"), redisDir).Run())
	r := startRedisServer(t, redisDir, "--appendonly", "yes", "--save", "", "--enable-debug-command", "yes")
	got, err := Query(r, "DEBUG", "DIGEST")
	require.NoError(t, err)
	require.Equal(t, digest, got, "redis-server loads shoal's AOF to the same dataset")

	// redis-server adds to it, rewrites, adds more; shoal loads its files.
	aofDataset(t, r, "c:")
	_, err = Query(r, "BGREWRITEAOF")
	require.NoError(t, err)
	waitRewriteDone(t, r)
	aofDataset(t, r, "d:")
	digest, err = Query(r, "DEBUG", "DIGEST")
	require.NoError(t, err)
	_, _ = Query(r, "SHUTDOWN", "NOSAVE")
	WaitFor(t, 10*time.Second, "redis-server to exit", func() string {
		if _, err := Query(r, "PING"); err == nil {
			return "still answering"
		}
		return ""
	})
	require.NoError(t, os.RemoveAll(filepath.Join(s.Dir, "appendonlydir")))
	require.NoError(t, exec.Command("cp", "-r", filepath.Join(redisDir, "appendonlydir"), s.Dir).Run())
	s.Restart()
	got, err = Query(s.Addr, "DEBUG", "DIGEST")
	require.NoError(t, err)
	require.Equal(t, digest, got, "shoal loads redis-server's AOF to the same dataset")
}

// A truncated last command: with aof-load-truncated yes (the default) the
// file is cut after the last whole command and the server starts; with no
// it refuses to start, with Redis's lines.
func TestAOFTruncatedTail(t *testing.T) {
	s := StartServer(t, "--appendonly", "yes", "--save", "", "--appendfsync", "always")
	for i := range 10 {
		_, err := Query(s.Addr, "SET", "k"+strconv.Itoa(i), "v")
		require.NoError(t, err)
	}
	s.Kill()
	incr := filepath.Join(s.Dir, "appendonlydir", "appendonly.aof.1.incr.aof")
	f, err := os.OpenFile(incr, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString("*3\r\n$3\r\nSET\r\n$2\r\nk")
	require.NoError(t, err)
	require.NoError(t, f.Close())

	s.Args = append(s.Args, "--aof-load-truncated", "no")
	_, err = s.start()
	require.Error(t, err)
	require.Contains(t, s.Log(), "Unexpected end of file reading the append only file appendonly.aof.1.incr.aof. You can: 1) Make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>.")

	s.Args = s.Args[:len(s.Args)-2]
	s.Restart()
	require.Contains(t, s.Log(), "!!! Warning: short read while loading the AOF file appendonly.aof.1.incr.aof!!!")
	require.Contains(t, s.Log(), "AOF appendonly.aof.1.incr.aof loaded anyway because aof-load-truncated is enabled")
	require.Equal(t, 10, dbsize(t, s))
}

// CONFIG SET appendonly yes at run time writes the dataset as a base and
// logs what follows; no stops it.
func TestAOFConfigSetAppendonly(t *testing.T) {
	s := StartServer(t, "--save", "", "--enable-debug-command", "yes")
	fillKeys(t, s, 500)
	out, err := Query(s.Addr, "CONFIG", "SET", "appendonly", "yes")
	require.NoError(t, err)
	require.Equal(t, "OK", out)
	waitRewriteDone(t, s.Addr)
	_, err = Query(s.Addr, "SET", "after", "1")
	require.NoError(t, err)
	digest, err := Query(s.Addr, "DEBUG", "DIGEST")
	require.NoError(t, err)
	out, err = Query(s.Addr, "DEBUG", "LOADAOF")
	require.NoError(t, err)
	require.Equal(t, "OK", out)
	got, err := Query(s.Addr, "DEBUG", "DIGEST")
	require.NoError(t, err)
	require.Equal(t, digest, got)
	out, err = Query(s.Addr, "CONFIG", "SET", "appendonly", "no")
	require.NoError(t, err)
	require.Equal(t, "OK", out)
	info, err := Query(s.Addr, "INFO", "persistence")
	require.NoError(t, err)
	require.Contains(t, info, "aof_enabled:0")
	require.NotContains(t, info, "aof_current_size")
}

// CONFIG SET appendonly yes while a rewrite runs (here one that CONFIG
// SET appendonly no cancelled, still ending) discards it and starts the
// new one at once, as Redis kills the child and forks again in the same
// call: aof_rewrite_in_progress never reads 0 before the AOF is on, so a
// client that waits for it (Redis's tcl suite does) finds a loadable AOF.
func TestAOFEnabledAgainDuringARewrite(t *testing.T) {
	s := StartServer(t, "--appendonly", "yes", "--save", "", "--enable-debug-command", "yes",
		"--rdb-key-save-delay", "20000")
	fillKeys(t, s, 50) // the rewrite takes ~1 s
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	for round := 0; round < 3; round++ {
		out, err := Query(s.Addr, "BGREWRITEAOF")
		require.NoError(t, err)
		require.Equal(t, "Background append only file rewriting started", out)
		for _, v := range []string{"no", "yes"} {
			out, err = Query(s.Addr, "CONFIG", "SET", "appendonly", v)
			require.NoError(t, err)
			require.Equal(t, "OK", out)
		}
		// Polled back to back, so that a gap between the two rewrites,
		// if there were one, is seen.
		deadline := time.Now().Add(30 * time.Second)
		for polls := 0; ; polls++ {
			require.True(t, polls < 200000 && time.Now().Before(deadline), "the AOF is not on after %d polls", polls)
			info, err := c.Info(ctx, "persistence").Result()
			require.NoError(t, err)
			if strings.Contains(info, "aof_rewrite_in_progress:0") {
				require.NotContains(t, info, "aof_rewrite_scheduled:1", "round %d: no rewrite in progress after %d polls", round, polls)
				require.Contains(t, info, "aof_enabled:1")
				break
			}
		}
		_, err = Query(s.Addr, "SET", "round", fmt.Sprint(round))
		require.NoError(t, err)
		digest, err := Query(s.Addr, "DEBUG", "DIGEST")
		require.NoError(t, err)
		out, err = Query(s.Addr, "DEBUG", "LOADAOF")
		require.NoError(t, err)
		require.Equal(t, "OK", out)
		got, err := Query(s.Addr, "DEBUG", "DIGEST")
		require.NoError(t, err)
		require.Equal(t, digest, got)
	}
	require.Contains(t, s.Log(), "Stopping background AOF and starting a rewrite now")
}

// auto-aof-rewrite-percentage / -min-size: once the AOF passes the minimum
// size and has grown by the percentage since the last rewrite, the cron
// rewrites it, and the old files are removed.
func TestAOFAutoRewrite(t *testing.T) {
	s := StartServer(t, "--appendonly", "yes", "--save", "", "--enable-debug-command", "yes",
		"--auto-aof-rewrite-percentage", "100", "--auto-aof-rewrite-min-size", "64kb")
	fillKeys(t, s, 3000) // ~100 KB of SETs in the incr file
	WaitFor(t, 20*time.Second, "an automatic rewrite", func() string {
		out, err := Query(s.Addr, "INFO", "persistence")
		if err != nil {
			return err.Error()
		}
		if !strings.Contains(out, "aof_rewrites:1") || !strings.Contains(out, "aof_rewrite_in_progress:0") {
			return "no rewrite yet"
		}
		return ""
	})
	require.Contains(t, s.Log(), "Starting automatic rewriting of AOF on")
	manifest, err := os.ReadFile(filepath.Join(s.Dir, "appendonlydir", "appendonly.aof.manifest"))
	require.NoError(t, err)
	require.Equal(t, "file appendonly.aof.2.base.rdb seq 2 type b\nfile appendonly.aof.2.incr.aof seq 2 type i\n", string(manifest))
	entries, err := os.ReadDir(filepath.Join(s.Dir, "appendonlydir"))
	require.NoError(t, err)
	require.Len(t, entries, 3, "the history files are deleted")
	digest, err := Query(s.Addr, "DEBUG", "DIGEST")
	require.NoError(t, err)
	s.Restart()
	got, err := Query(s.Addr, "DEBUG", "DIGEST")
	require.NoError(t, err)
	require.Equal(t, digest, got)
}

// BGSAVE while the AOF is rewritten: refused with Redis's text, or
// scheduled with SCHEDULE and run once the rewrite is over.
func TestAOFBgsaveDuringRewrite(t *testing.T) {
	s := StartServer(t, "--appendonly", "yes", "--save", "", "--rdb-key-save-delay", "100000")
	fillKeys(t, s, 30) // the rewrite takes ~3 s
	out, err := Query(s.Addr, "BGREWRITEAOF")
	require.NoError(t, err)
	require.Equal(t, "Background append only file rewriting started", out)
	out, err = Query(s.Addr, "BGSAVE")
	require.NoError(t, err)
	require.Equal(t, "-ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.", out)
	out, err = Query(s.Addr, "BGSAVE", "SCHEDULE")
	require.NoError(t, err)
	require.Equal(t, "Background saving scheduled", out)
	out, err = Query(s.Addr, "BGREWRITEAOF")
	require.NoError(t, err)
	require.Equal(t, "-ERR Background append only file rewriting already in progress", out)
	_, err = Query(s.Addr, "CONFIG", "SET", "rdb-key-save-delay", "0")
	require.NoError(t, err)
	waitRewriteDone(t, s.Addr)
	WaitFor(t, 20*time.Second, "the scheduled BGSAVE", func() string {
		if _, err := os.Stat(filepath.Join(s.Dir, "dump.rdb")); err != nil {
			return err.Error()
		}
		return ""
	})
}

// The client sockets are bound before the PID line and the load, as
// redis-server does: Redis's test suite connects as soon as it sees the
// PID, and was refused while shoal loaded its AOF.
func TestAOFClientsConnectDuringStartupLoad(t *testing.T) {
	s := StartServer(t, "--appendonly", "yes", "--save", "")
	fillKeys(t, s, 200)
	s.Stop()
	out, _ := startLoadingProcess(t, s, "--appendonly", "yes", "--save", "", "--key-load-delay", "20000") // ~4 s of loading
	WaitFor(t, 10*time.Second, "the PID line", func() string {
		if !strings.Contains(out.String(), " PID: ") {
			return "not yet"
		}
		return ""
	})
	require.NotContains(t, out.String(), readyLine, "the load is still running")
	conn, err := net.DialTimeout("tcp", s.Addr, 5*time.Second)
	require.NoError(t, err, "connecting while the AOF loads")
	defer conn.Close()
	_, err = conn.Write([]byte("PING\r\n"))
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
	// As redis-server, the AOF load serves clients after its first command
	// and then every 1024: a PING that came before the first gets
	// -LOADING there, one that came later is answered once the load is
	// over (200 commands).
	reply, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, []string{"+PONG\r\n", "-LOADING Redis is loading the dataset in memory\r\n"}, reply)
	WaitFor(t, 30*time.Second, "the load's end", func() string {
		if v, _ := Query(s.Addr, "DBSIZE"); v != "200" {
			return "DBSIZE " + v
		}
		return ""
	})
}

// startLoadingProcess starts s's binary again on its port and directory
// with args, outside the harness (which waits for the ready line, after the
// load), and returns its output and its exit (sent once; the cleanup kills
// it and waits for it).
func startLoadingProcess(t *testing.T, s *Server, args ...string) (*lockedBuffer, chan error) {
	t.Helper()
	cmd := exec.Command(s.Bin, append([]string{"--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1", "--dir", s.Dir}, args...)...)
	cmd.Dir = s.Dir
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	return out, exited
}

// A MULTI without its EXEC at the end of the AOF is reverted: the file is
// cut where the MULTI began (aof-load-truncated yes) and its commands are
// not applied.
func TestAOFUnfinishedMultiReverted(t *testing.T) {
	s := StartServer(t, "--appendonly", "yes", "--save", "", "--appendfsync", "always")
	_, err := Query(s.Addr, "SET", "a", "1")
	require.NoError(t, err)
	s.Kill()
	incr := filepath.Join(s.Dir, "appendonlydir", "appendonly.aof.1.incr.aof")
	before, err := os.ReadFile(incr)
	require.NoError(t, err)
	f, err := os.OpenFile(incr, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString("*1\r\n$5\r\nMULTI\r\n*3\r\n$3\r\nSET\r\n$1\r\nb\r\n$1\r\n2\r\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	s.Restart()
	require.Contains(t, s.Log(), "Revert incomplete MULTI/EXEC transaction in AOF file appendonly.aof.1.incr.aof")
	got, err := Query(s.Addr, "EXISTS", "b")
	require.NoError(t, err)
	require.Equal(t, "0", got)
	got, err = Query(s.Addr, "GET", "a")
	require.NoError(t, err)
	require.Equal(t, "1", got)
	after, err := os.ReadFile(incr)
	require.NoError(t, err)
	require.Equal(t, string(before), string(after), "cut where the MULTI began")
}

// While shoal-server loads its RDB file at start-up, clients are served as
// redis-server serves them during its load (every
// loading-process-events-interval-bytes): INFO says loading:1, a read gets
// -LOADING, and SHUTDOWN stops the process at once without saving over
// the file with a partial dataset (tests/integration/rdb.tcl "client
// freed during loading", unit/introspection "config during loading").
func TestStartupLoadServesClients(t *testing.T) {
	s := StartServer(t, "--save", "", "--enable-debug-command", "yes", "--rdbcompression", "no")
	out, err := Query(s.Addr, "DEBUG", "POPULATE", "2000", "key", "1000")
	require.NoError(t, err)
	require.Equal(t, "OK", out)
	out, err = Query(s.Addr, "SAVE")
	require.NoError(t, err)
	require.Equal(t, "OK", out)
	s.Stop()
	rdbPath := filepath.Join(s.Dir, "dump.rdb")
	before, err := os.Stat(rdbPath)
	require.NoError(t, err)
	log, exited := startLoadingProcess(t, s, "--save", "3600 1", "--key-load-delay", "5000", // 10 s of loading
		"--loading-process-events-interval-bytes", "1024")
	WaitFor(t, 10*time.Second, "loading:1", func() string {
		info, err := Query(s.Addr, "INFO", "persistence")
		if err != nil {
			return err.Error()
		}
		if !strings.Contains(info, "loading:1") {
			return "not loading"
		}
		return ""
	})
	out, err = Query(s.Addr, "GET", "key:1")
	require.NoError(t, err)
	require.Equal(t, "-LOADING Redis is loading the dataset in memory", out)
	out, err = Query(s.Addr, "CONFIG", "GET", "save")
	require.NoError(t, err)
	require.NotContains(t, out, "LOADING")
	_, _ = Query(s.Addr, "SHUTDOWN") // the connection closes
	select {
	case err := <-exited:
		require.NoError(t, err, "exit status")
		exited <- err // for the cleanup
	case <-time.After(30 * time.Second):
		t.Fatalf("still running after SHUTDOWN during the load:\n%s", log.String())
	}
	require.NotContains(t, log.String(), readyLine, "the load was not over")
	after, err := os.Stat(rdbPath)
	require.NoError(t, err)
	require.Equal(t, before.Size(), after.Size(), "the file was not saved over")
	require.Equal(t, before.ModTime(), after.ModTime(), "the file was not saved over")
}
