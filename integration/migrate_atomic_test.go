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

// TestAtomicMigrationProcesses: CLUSTER MIGRATESLOTS between shoal-server
// processes under the go-redis write load, then redis-cli --cluster check
// (no open slot, every node agrees) and every acknowledged write read back;
// the slots then go back with a second job.
func TestAtomicMigrationProcesses(t *testing.T) {
	redisCLIPath(t)
	masters := StartClusterNodes(t, 3)
	CreateCluster(t, masters, 0, createTimeout)
	entry := masters[0].Addr
	from, to := myID(t, masters[0].Addr), myID(t, masters[1].Addr)
	load := startWriteLoad(t, []string{entry}, -1)
	ctx := context.Background()
	src := redis.NewClient(&redis.Options{Addr: masters[0].Addr, Protocol: 2})
	dst := redis.NewClient(&redis.Options{Addr: masters[1].Addr, Protocol: 2})
	defer src.Close()
	defer dst.Close()
	for i := range 20000 {
		require.NoError(t, load.cc.Set(ctx, "static:"+strconv.Itoa(i), i, 0).Err())
	}

	move := func(t *testing.T, c *redis.Client, ranges []string, target string) map[string]string {
		t.Helper()
		args := append(append([]any{"CLUSTER", "MIGRATESLOTS", "SLOTSRANGE"}, toAny(ranges)...), "NODE", target)
		require.NoError(t, c.Do(ctx, args...).Err())
		var job map[string]string
		WaitFor(t, 60*time.Second, "the atomic migration", func() string {
			v, err := c.Do(ctx, "CLUSTER", "GETSLOTMIGRATIONS").Slice()
			if err != nil {
				return err.Error()
			}
			last := v[len(v)-1].([]any)
			job = map[string]string{}
			for i := 0; i+1 < len(last); i += 2 {
				job[last[i].(string)] = strings.TrimSpace(toString(last[i+1]))
			}
			switch job["state"] {
			case "success":
				return ""
			case "failed", "cancelled":
				t.Fatalf("migration ended: %v", job)
			}
			return job["state"]
		})
		return job
	}
	job := move(t, src, []string{"0", "1999", "3000", "3999"}, to)
	t.Logf("job: %v", job)
	out := clusterCheck(t, entry)
	require.NotContains(t, out, "[WARNING]", "no open slot")
	require.Contains(t, out, "[OK] All nodes agree about slots configuration.")
	load.verify(t, "atomic migration")
	require.Equal(t, "0-1999 3000-3999", job["slot_ranges"])

	job = move(t, dst, []string{"0", "1999", "3000", "3999"}, from)
	t.Logf("job back: %v", job)
	clusterCheck(t, entry)
	load.finish()
	load.verify(t, "end")
	load.verifyCounters(t)
	for i := 0; i < 20000; i += 97 {
		v, err := load.cc.Get(ctx, "static:"+strconv.Itoa(i)).Result()
		require.NoError(t, err)
		require.Equal(t, strconv.Itoa(i), v)
	}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func toString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return ""
}
