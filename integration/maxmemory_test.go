package integration

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// A 3+3 cluster written well past maxmemory: every master evicts on its own,
// its evictions reach its replica as DELs, and each replica ends an exact
// copy of its master (DEBUG DIGEST); used_memory stays near the limit.
func TestClusterEvictionReachesReplicas(t *testing.T) {
	const maxmemory = 4 << 20
	_, pairs, cc := startReplicatedCluster(t, "--enable-debug-command", "yes",
		"--maxmemory", strconv.Itoa(maxmemory), "--maxmemory-policy", "allkeys-lru")
	ctx := context.Background()

	// About 30 MB of strings, hashes and lists through a 12 MB cluster.
	value := strings.Repeat("v", 300)
	const keys = 60000
	for start := 0; start < keys; start += 500 {
		_, err := cc.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := start; i < start+500; i++ {
				k := strconv.Itoa(i)
				switch i % 10 {
				case 8:
					p.HSet(ctx, "h:"+strconv.Itoa(i%500), "f"+k, value)
				case 9:
					p.RPush(ctx, "l:"+strconv.Itoa(i%500), value)
				default:
					p.Set(ctx, "s:"+k, value, 0)
				}
			}
			return nil
		})
		require.NoError(t, err, "every write is accepted: allkeys-lru evicts")
	}

	var evicted int64
	for m, r := range pairs {
		used, err := strconv.ParseInt(replInfo(t, m, "memory", "used_memory"), 10, 64)
		require.NoError(t, err)
		require.LessOrEqual(t, used, int64(maxmemory*11/10), "master %s used_memory", m)
		n, err := strconv.ParseInt(replInfo(t, m, "stats", "evicted_keys"), 10, 64)
		require.NoError(t, err)
		require.Greater(t, n, int64(1000), "master %s evicted", m)
		evicted += n
		// The replica does not evict itself (replica-ignore-maxmemory yes):
		// it applies its master's DELs and ends an exact copy.
		waitReplicaCaughtUp(t, m, r, 30*time.Second)
		WaitFor(t, 30*time.Second, "replica "+r+" has the digest of "+m, func() string {
			md, err := Query(m, "DEBUG", "DIGEST")
			if err != nil {
				return err.Error()
			}
			rd, err := Query(r, "DEBUG", "DIGEST")
			if err != nil {
				return err.Error()
			}
			if md != rd {
				return "master " + md + " replica " + rd
			}
			return ""
		})
		require.Equal(t, "0", replInfo(t, r, "stats", "evicted_keys"), "replica %s evicted on its own", r)
		mk, err := Query(m, "DBSIZE")
		require.NoError(t, err)
		rk, err := Query(r, "DBSIZE")
		require.NoError(t, err)
		require.Equal(t, mk, rk)
	}
	t.Logf("masters evicted %d keys of %d written", evicted, keys)
}
