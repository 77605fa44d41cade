package node

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// BenchmarkEvalshaParallel: EVALSHA of a 3-call script from 50 clients.
func BenchmarkEvalshaParallel(b *testing.B) {
	s := startTestServer(b)
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr().String(), PoolSize: 50})
	defer rdb.Close()
	sha := rdb.ScriptLoad(ctx, "redis.call('SET', KEYS[1], ARGV[1]) redis.call('INCR', KEYS[2]) return redis.call('GET', KEYS[1])").Val()
	b.ResetTimer()
	var wg sync.WaitGroup
	per := b.N/50 + 1
	for w := 0; w < 50; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k1, k2 := fmt.Sprintf("{%d}a", w), fmt.Sprintf("{%d}b", w)
			for i := 0; i < per; i++ {
				if err := rdb.EvalSha(ctx, sha, []string{k1, k2}, "v").Err(); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
