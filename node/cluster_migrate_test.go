package node

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shoal-db/shoal/internal/testharness"
	"github.com/shoal-db/shoal/slots"
	"github.com/stretchr/testify/require"
)

// Atomic slot migration (CLUSTER MIGRATESLOTS) between two in-process
// masters under a concurrent go-redis write load: every type and encoding
// arrives with the same DEBUG DIGEST-VALUE (big values go in chunks), TTLs
// survive, every acknowledged write is there afterwards in order, the slots
// change owner with a bumped epoch, and both sides report the job.

// keyInSlots returns n keys named prefix<i> whose slots are below limit.
func keyInSlots(prefix string, n, limit int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		k := prefix + strconv.Itoa(i)
		if int(slots.KeySlot([]byte(k))) < limit {
			out = append(out, k)
		}
	}
	return out
}

// migrationJobs parses CLUSTER GETSLOTMIGRATIONS (RESP2: arrays of
// field/value pairs) into maps.
func migrationJobs(t *testing.T, ctx context.Context, c *redis.Client) []map[string]string {
	t.Helper()
	v, err := c.Do(ctx, "CLUSTER", "GETSLOTMIGRATIONS").Slice()
	require.NoError(t, err)
	var out []map[string]string
	for _, e := range v {
		m := map[string]string{}
		switch x := e.(type) {
		case []any:
			for i := 0; i+1 < len(x); i += 2 {
				m[fmt.Sprint(x[i])] = fmt.Sprint(x[i+1])
			}
		case map[any]any:
			for k, val := range x {
				m[fmt.Sprint(k)] = fmt.Sprint(val)
			}
		}
		out = append(out, m)
	}
	return out
}

func TestAtomicSlotMigrationUnderLoad(t *testing.T) {
	ctx := context.Background()
	a := startClusterTestServer(t, "", "--enable-debug-command", "yes")
	b := startClusterTestServer(t, "", "--enable-debug-command", "yes")
	ac, bc := dialTest(t, a.srv), dialTest(t, b.srv)
	aID, bID := bulkBody(t, ac.do("CLUSTER", "MYID")), bulkBody(t, bc.do("CLUSTER", "MYID"))
	formMasters(t, ac, bc, a.port, a.cport, aID, bID)
	ra := redis.NewClient(&redis.Options{Addr: a.addr})
	rb := redis.NewClient(&redis.Options{Addr: b.addr})
	defer ra.Close()
	defer rb.Close()

	// Static data in slots 0-999, every type, small and big encodings.
	const moved = 1000
	strs := keyInSlots("str:", 300, moved)
	for i, k := range strs {
		require.NoError(t, ra.Set(ctx, k, strings.Repeat("v", i%50)+strconv.Itoa(i), 0).Err())
	}
	ttlKey := strs[0]
	require.NoError(t, ra.PExpire(ctx, ttlKey, time.Hour).Err())
	ttlBefore := ra.PExpireTime(ctx, ttlKey).Val()
	big := keyInSlots("big:", 6, moved)
	fields := make([]any, 0, 6000)
	for i := range 3000 {
		fields = append(fields, "f"+strconv.Itoa(i), "val"+strconv.Itoa(i))
	}
	require.NoError(t, ra.HSet(ctx, big[0], fields...).Err())
	require.NoError(t, ra.PExpire(ctx, big[0], 2*time.Hour).Err())
	hashTTL := ra.PExpireTime(ctx, big[0]).Val()
	elems := make([]any, 2500)
	for i := range elems {
		elems[i] = "e" + strconv.Itoa(i)
	}
	require.NoError(t, ra.RPush(ctx, big[1], elems...).Err())
	require.NoError(t, ra.SAdd(ctx, big[2], elems...).Err())
	zs := make([]redis.Z, 0, 2500)
	for i := range 2500 {
		zs = append(zs, redis.Z{Score: float64(i) / 7, Member: "m" + strconv.Itoa(i)})
	}
	zs = append(zs, redis.Z{Score: 0.1 + 0.2, Member: "third"})
	require.NoError(t, ra.ZAdd(ctx, big[3], zs...).Err())
	require.NoError(t, ra.Do(ctx, "ZADD", big[3], "+inf", "top", "-inf", "bottom").Err())
	for i := range 50 {
		require.NoError(t, ra.XAdd(ctx, &redis.XAddArgs{Stream: big[4], Values: []any{"n", i}}).Err())
	}
	require.NoError(t, ra.XGroupCreate(ctx, big[4], "g", "0").Err())
	require.NoError(t, ra.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{big[4], ">"}, Count: 10}).Err())
	require.NoError(t, ra.Set(ctx, big[5], strings.Repeat("x", 3<<20), 0).Err())
	static := append(append([]string{}, strs...), big...)
	digests := map[string]string{}
	for _, k := range static {
		d, err := ra.Do(ctx, "DEBUG", "DIGEST-VALUE", k).StringSlice()
		require.NoError(t, err)
		digests[k] = d[0]
	}

	// The write load: counters and an append-only list in the moving slots
	// and outside them, through a cluster client that follows MOVED.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{a.addr, b.addr}, MaxRedirects: 8,
		ReadTimeout: 20 * time.Second, WriteTimeout: 20 * time.Second})
	defer cc.Close()
	counters := append(keyInSlots("ctr:", 8, moved), "ctr-outside-{x}")
	seqKey := keyInSlots("seq:", 1, moved)[0]
	acked := make([]atomic.Int64, len(counters))
	var seqAcked atomic.Int64
	var loadErr atomic.Pointer[error]
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				idx := (i + w) % len(counters)
				if err := cc.Incr(ctx, counters[idx]).Err(); err != nil {
					loadErr.CompareAndSwap(nil, &err)
					return
				}
				acked[idx].Add(1)
				if w == 0 {
					n := seqAcked.Load()
					if err := cc.RPush(ctx, seqKey, n).Err(); err != nil {
						loadErr.CompareAndSwap(nil, &err)
						return
					}
					seqAcked.Add(1)
				}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)

	dels := &delRecorder{keys: map[string]bool{}}
	a.srv.AddEffectFeed(dels)
	require.Equal(t, "+OK\r\n", ac.do("CLUSTER", "MIGRATESLOTS", "SLOTSRANGE", "0", strconv.Itoa(moved-1), "NODE", bID))
	// A second job on the same slots is refused while the first runs.
	require.Contains(t, ac.do("CLUSTER", "MIGRATESLOTS", "SLOTSRANGE", "5", "5", "NODE", bID), "-ERR")
	var job map[string]string
	testharness.WaitFor(t, 30*time.Second, "the migration to finish", func() bool {
		jobs := migrationJobs(t, ctx, ra)
		require.NotEmpty(t, jobs)
		job = jobs[0]
		require.NotContains(t, []string{"failed", "cancelled"}, job["state"], "%v", job)
		return job["state"] == "success"
	})
	time.Sleep(200 * time.Millisecond) // more writes after the flip
	close(stop)
	wg.Wait()
	if p := loadErr.Load(); p != nil {
		t.Fatalf("write load: %v", *p)
	}
	t.Logf("export job: %v", job)
	require.Equal(t, "EXPORT", job["operation"])
	require.Equal(t, "0-999", job["slot_ranges"])
	require.Equal(t, bID, job["target_node"])
	require.Equal(t, strconv.Itoa(moved), job["slots_snapshotted"])
	// Progress has its totals: the keys the slots held when the images
	// began, all of them sent (more if the load created counters since).
	keysTotal, err := strconv.Atoi(job["keys_total"])
	require.NoError(t, err)
	require.GreaterOrEqual(t, keysTotal, len(static))
	keysDone, err := strconv.Atoi(job["keys_snapshotted"])
	require.NoError(t, err)
	require.GreaterOrEqual(t, keysDone, keysTotal)
	imageBytes, err := strconv.Atoi(job["bytes_snapshotted"])
	require.NoError(t, err)
	require.Greater(t, imageBytes, keysTotal, "every key is at least a name and a value")
	imports := migrationJobs(t, ctx, rb)
	require.Len(t, imports, 1)
	require.Equal(t, "IMPORT", imports[0]["operation"])
	require.Equal(t, "success", imports[0]["state"])
	require.Equal(t, job["name"], imports[0]["name"])

	// Ownership: B serves 0-999 with a configEpoch above A's; A has no key
	// left there and redirects.
	for s := 0; s < moved; s += 97 {
		require.Equal(t, int64(0), ra.ClusterCountKeysInSlot(ctx, s).Val())
	}
	require.Equal(t, fmt.Sprintf("-MOVED %d 127.0.0.1:%d\r\n", slots.KeySlot([]byte(strs[1])), b.port), ac.do("GET", strs[1]))
	testharness.WaitFor(t, 10*time.Second, "both nodes to agree on the new owner", func() bool {
		for _, c := range []*redis.Client{ra, rb} {
			nodes := c.ClusterNodes(ctx).Val()
			for _, l := range strings.Split(nodes, "\n") {
				if strings.HasPrefix(l, bID) && !strings.Contains(l, " 0-999") {
					return false
				}
			}
		}
		return true
	})
	epochOf := func(c *redis.Client, id string) int {
		for _, l := range strings.Split(c.ClusterNodes(ctx).Val(), "\n") {
			if f := strings.Fields(l); len(f) > 6 && f[0] == id {
				e, _ := strconv.Atoi(f[6])
				return e
			}
		}
		return -1
	}
	require.Greater(t, epochOf(ra, bID), epochOf(ra, aID))

	// The source's feed (its replicas) saw its copy of every static key
	// deleted.
	for _, k := range static {
		require.True(t, dels.has(k), "no DEL of %s in the source's effect feed", k)
	}

	// Every value arrived intact, TTLs included.
	for _, k := range static {
		d, err := rb.Do(ctx, "DEBUG", "DIGEST-VALUE", k).StringSlice()
		require.NoError(t, err)
		require.Equal(t, digests[k], d[0], "key %s", k)
	}
	require.Equal(t, ttlBefore, rb.PExpireTime(ctx, ttlKey).Val())
	require.Equal(t, hashTTL, rb.PExpireTime(ctx, big[0]).Val())

	// Every acknowledged write, in order.
	for i, k := range counters {
		got, err := cc.Get(ctx, k).Int64()
		require.NoError(t, err)
		require.Equal(t, acked[i].Load(), got, "counter %s", k)
	}
	seq, err := cc.LRange(ctx, seqKey, 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, seq, int(seqAcked.Load()))
	for i, v := range seq {
		require.Equal(t, strconv.Itoa(i), v)
	}
	t.Logf("writes acknowledged during the test: %d counters, %d list pushes", func() (n int64) {
		for i := range acked {
			n += acked[i].Load()
		}
		return
	}(), seqAcked.Load())
}

// TestAtomicSlotMigrationCancel: a cancelled job leaves the slots and every
// key with the source and nothing on the target; the slots can be migrated
// again afterwards.
func TestAtomicSlotMigrationCancel(t *testing.T) {
	ctx := context.Background()
	a := startClusterTestServer(t, "")
	b := startClusterTestServer(t, "")
	ac, bc := dialTest(t, a.srv), dialTest(t, b.srv)
	aID, bID := bulkBody(t, ac.do("CLUSTER", "MYID")), bulkBody(t, bc.do("CLUSTER", "MYID"))
	formMasters(t, ac, bc, a.port, a.cport, aID, bID)
	ra := redis.NewClient(&redis.Options{Addr: a.addr})
	rb := redis.NewClient(&redis.Options{Addr: b.addr})
	defer ra.Close()
	defer rb.Close()
	keys := keyInSlots("k:", 20000, 4000)
	p := ra.Pipeline()
	for _, k := range keys {
		p.Set(ctx, k, k, 0)
	}
	_, err := p.Exec(ctx)
	require.NoError(t, err)

	// Errors first: a target that is not a known master, slots not served
	// here, bad syntax.
	require.Equal(t, "-ERR Unknown node 0000000000000000000000000000000000000000\r\n",
		ac.do("CLUSTER", "MIGRATESLOTS", "SLOTSRANGE", "0", "10", "NODE", strings.Repeat("0", 40)))
	require.Equal(t, "-ERR I'm not the owner of hash slot 9000\r\n",
		ac.do("CLUSTER", "MIGRATESLOTS", "SLOTSRANGE", "9000", "9001", "NODE", bID))
	require.Equal(t, "-ERR Can't migrate slots to myself\r\n",
		ac.do("CLUSTER", "MIGRATESLOTS", "SLOTSRANGE", "0", "1", "NODE", aID))
	require.Equal(t, "-ERR syntax error\r\n", ac.do("CLUSTER", "MIGRATESLOTS", "SLOTSRANGE", "0", "NODE", bID))
	require.Equal(t, "-ERR Invalid or out of range slot\r\n", ac.do("CLUSTER", "MIGRATESLOTS", "SLOTSRANGE", "0", "16384", "NODE", bID))
	require.Equal(t, "-ERR start slot number 5 is greater than end slot number 1\r\n",
		ac.do("CLUSTER", "MIGRATESLOTS", "SLOTSRANGE", "5", "1", "NODE", bID))

	require.Equal(t, "+OK\r\n", ac.do("CLUSTER", "MIGRATESLOTS", "SLOTSRANGE", "0", "3999", "NODE", bID))
	require.Equal(t, "+OK\r\n", ac.do("CLUSTER", "CANCELSLOTMIGRATIONS"))
	var job map[string]string
	testharness.WaitFor(t, 20*time.Second, "the job to end", func() bool {
		job = migrationJobs(t, ctx, ra)[0]
		return job["state"] != "snapshot" && job["state"] != "connecting" && job["state"] != "catch-up" && job["state"] != "paused"
	})
	if job["state"] != "cancelled" {
		t.Skipf("the migration finished before the cancel reached it: %v", job)
	}
	require.Contains(t, job["message"], "CANCELSLOTMIGRATIONS")
	for _, k := range keys[:500] {
		require.Equal(t, k, ra.Get(ctx, k).Val())
	}
	require.Equal(t, int64(len(keys)), ra.DBSize(ctx).Val())
	testharness.WaitFor(t, 10*time.Second, "the target to drop what it received", func() bool {
		imports := migrationJobs(t, ctx, rb)
		return len(imports) == 1 && imports[0]["state"] == "failed" && rb.DBSize(ctx).Val() == 0
	})
	require.Equal(t, fmt.Sprintf("-MOVED %d 127.0.0.1:%d\r\n", slots.KeySlot([]byte(keys[0])), a.port), bc.do("GET", keys[0]))

	// Again, to the end.
	require.Equal(t, "+OK\r\n", ac.do("CLUSTER", "MIGRATESLOTS", "SLOTSRANGE", "0", "3999", "NODE", bID))
	testharness.WaitFor(t, 30*time.Second, "the second migration", func() bool {
		jobs := migrationJobs(t, ctx, ra)
		return jobs[len(jobs)-1]["state"] == "success"
	})
	require.Equal(t, int64(len(keys)), rb.DBSize(ctx).Val())
	require.Equal(t, int64(0), ra.DBSize(ctx).Val())
}

// delRecorder is an EffectFeed that remembers the keys of DEL effects.
type delRecorder struct {
	mu   sync.Mutex
	keys map[string]bool
}

func (d *delRecorder) Propagate(db int, cmds [][][]byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, argv := range cmds {
		if strings.EqualFold(string(argv[0]), "del") {
			for _, k := range argv[1:] {
				d.keys[string(k)] = true
			}
		}
	}
}

func (d *delRecorder) has(k string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.keys[k]
}
