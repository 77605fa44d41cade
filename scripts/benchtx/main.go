// Command benchtx measures transactions and scripts against one server:
// EVALSHA of a script making 3 redis.call's, and MULTI/EXEC of 3 SETs, from
// many concurrent go-redis clients for a fixed time. scripts/bench-scripting.sh
// runs it against redis-server and shoal-server side by side.
//
//	go run ./scripts/benchtx -addr 127.0.0.1:6379 -mode evalsha -clients 50 -duration 5s
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// script: three commands on keys of one slot.
const script = `redis.call('SET', KEYS[1], ARGV[1])
redis.call('INCR', KEYS[2])
return redis.call('GET', KEYS[1])`

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	mode := flag.String("mode", "evalsha", "evalsha | multi")
	clients := flag.Int("clients", 50, "concurrent clients")
	duration := flag.Duration("duration", 5*time.Second, "how long to run")
	flag.Parse()
	if *clients < 1 || *clients > 1000 || *duration <= 0 || *duration > 10*time.Minute {
		fmt.Fprintln(os.Stderr, "clients must be 1..1000 and duration up to 10m")
		os.Exit(2)
	}
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: *addr, PoolSize: *clients})
	defer rdb.Close()
	sha, err := rdb.ScriptLoad(ctx, script).Result()
	if err != nil {
		fmt.Fprintln(os.Stderr, "SCRIPT LOAD:", err)
		os.Exit(1)
	}
	var ops, errs atomic.Int64
	deadline := time.Now().Add(*duration)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < *clients; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k1 := fmt.Sprintf("bench:{%d}:a", w)
			k2 := fmt.Sprintf("bench:{%d}:b", w)
			k3 := fmt.Sprintf("bench:{%d}:c", w)
			for time.Now().Before(deadline) {
				var err error
				switch *mode {
				case "evalsha":
					err = rdb.EvalSha(ctx, sha, []string{k1, k2}, "v").Err()
				default:
					_, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
						p.Set(ctx, k1, "v", 0)
						p.Set(ctx, k2, "v", 0)
						p.Set(ctx, k3, "v", 0)
						return nil
					})
				}
				if err != nil {
					errs.Add(1)
				} else {
					ops.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	fmt.Printf("%s %.0f rps (%d ok, %d errors, %d clients, %.1fs)\n", *mode, float64(ops.Load())/elapsed, ops.Load(), errs.Load(), *clients, elapsed)
	if errs.Load() > 0 {
		os.Exit(1)
	}
}
