package integration

import (
	"context"
	"math/rand/v2"
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

// A full sync carries a real RDB (issue 18): redis-server 7.0.15 replicates
// from a shoal master under writes (diskless and disk-based), redis-cli
// --rdb backs a shoal node up into a file redis-check-rdb accepts and
// redis-server loads with the same digest, and a shoal replica follows a
// redis-server master under writes.

// fillMixed writes keys of every type, some with a TTL, and a function
// library.
func fillMixed(t *testing.T, addr string) {
	t.Helper()
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	require.NoError(t, c.Do(ctx, "DEBUG", "POPULATE", 20000, "pop", 32).Err())
	p := c.Pipeline()
	for i := range 500 {
		k := strconv.Itoa(i)
		p.HSet(ctx, "h"+k, "a", i, "b", "x"+k)
		p.RPush(ctx, "l"+k, 1, 2, "three")
		p.SAdd(ctx, "s"+k, "a", "b", i)
		p.ZAdd(ctx, "z"+k, redis.Z{Score: float64(i), Member: "m"}, redis.Z{Score: 1.5, Member: "n"})
		p.XAdd(ctx, &redis.XAddArgs{Stream: "x" + k, Values: []any{"f", k}})
		p.Set(ctx, "ttl"+k, k, time.Hour)
	}
	_, err := p.Exec(ctx)
	require.NoError(t, err)
	require.NoError(t, c.Do(ctx, "FUNCTION", "LOAD",
		"#!lua name=fslib\nredis.register_function('fsone', function() return 1 end)").Err())
}

// syncWriteLoad runs n writes per worker (INCR-heavy, lists, hashes, deletes)
// against addr and returns when they are done.
func syncWriteLoad(t *testing.T, addr string, workers, n int) {
	t.Helper()
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: workers})
	defer c.Close()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 18))
			for i := range n {
				k := strconv.Itoa(rng.IntN(300))
				var err error
				switch rng.IntN(6) {
				case 0, 1, 2:
					err = c.Incr(ctx, "cnt"+k).Err()
				case 3:
					err = c.LPush(ctx, "wl"+k, i).Err()
				case 4:
					err = c.HIncrBy(ctx, "wh"+k, "f", 1).Err()
				case 5:
					err = c.Del(ctx, "cnt"+strconv.Itoa(rng.IntN(300))).Err()
				}
				if err != nil {
					t.Errorf("write: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// startRedisDebug starts redis-server without persistence, with DEBUG
// enabled and extra directives (skipped when it is not installed).
func startRedisDebug(t *testing.T, extra ...string) string {
	t.Helper()
	return startRedisServer(t, t.TempDir(), append([]string{"--save", "", "--appendonly", "no",
		"--enable-debug-command", "yes"}, extra...)...)
}

func TestFullSyncRedisServerReplicaOfShoal(t *testing.T) {
	for _, diskless := range []string{"yes", "no"} {
		t.Run("repl-diskless-sync "+diskless, func(t *testing.T) {
			m := StartServer(t, "--enable-debug-command", "yes", "--repl-diskless-sync", diskless)
			fillMixed(t, m.Addr)
			done := make(chan struct{})
			go func() {
				defer close(done)
				syncWriteLoad(t, m.Addr, 4, 5000)
			}()
			time.Sleep(50 * time.Millisecond) // the sync starts under the load
			host, port, _ := strings.Cut(m.Addr, ":")
			r := startRedisDebug(t, "--replicaof", host, port)
			<-done
			waitReplicaCaughtUp(t, m.Addr, r, 60*time.Second)
			md, err := Query(m.Addr, "DEBUG", "DIGEST")
			require.NoError(t, err)
			rd, err := Query(r, "DEBUG", "DIGEST")
			require.NoError(t, err)
			require.Equal(t, md, rd, "redis-server replica's digest")
			libs, err := Query(r, "FUNCTION", "LIST")
			require.NoError(t, err)
			require.Contains(t, libs, "fslib")
		})
	}
}

func TestFullSyncRedisCLIRDBBackup(t *testing.T) {
	m := StartServer(t, "--enable-debug-command", "yes")
	fillMixed(t, m.Addr)
	file := filepath.Join(t.TempDir(), "backup.rdb")
	out, err := RedisCLI(t, m, "--rdb", file)
	require.NoError(t, err, out)
	check, err := exec.Command("redis-check-rdb", file).CombinedOutput()
	require.NoError(t, err, string(check))
	require.Contains(t, string(check), "RDB looks OK")
	md, err := Query(m.Addr, "DEBUG", "DIGEST")
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.Rename(file, filepath.Join(dir, "dump.rdb")))
	r := startRedisServer(t, dir, "--save", "", "--appendonly", "no", "--enable-debug-command", "yes")
	rd, err := Query(r, "DEBUG", "DIGEST")
	require.NoError(t, err)
	require.Equal(t, md, rd, "the backup loaded into redis-server")
}

func TestFullSyncShoalReplicaOfRedisServer(t *testing.T) {
	m := startRedisDebug(t, "--repl-diskless-sync-delay", "0")
	fillMixed(t, m)
	done := make(chan struct{})
	go func() {
		defer close(done)
		syncWriteLoad(t, m, 4, 5000)
	}()
	time.Sleep(50 * time.Millisecond)
	host, port, _ := strings.Cut(m, ":")
	r := StartServer(t, "--enable-debug-command", "yes", "--replicaof", host, port)
	<-done
	waitReplicaCaughtUp(t, m, r.Addr, 60*time.Second)
	md, err := Query(m, "DEBUG", "DIGEST")
	require.NoError(t, err)
	rd, err := Query(r.Addr, "DEBUG", "DIGEST")
	require.NoError(t, err)
	require.Equal(t, md, rd, "shoal replica's digest")
	libs, err := Query(r.Addr, "FUNCTION", "LIST")
	require.NoError(t, err)
	require.Contains(t, libs, "fslib")
}
