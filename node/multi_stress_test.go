package node

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestGateStress mixes everything that takes slot locks or the execution
// gate — scripts, functions, exclusive and slot-locked transactions, WATCH,
// blocking pops served by other clients, plain commands — from concurrent
// clients for a bounded time: it must neither deadlock nor lose the
// invariant the scripts and transactions keep (a+b == 0 when read
// atomically).
func TestGateStress(t *testing.T) {
	s := startTestServer(t)
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr().String(), PoolSize: 16})
	defer rdb.Close()
	require.NoError(t, rdb.FunctionLoadReplace(ctx, "#!lua name=lib\nredis.register_function('mv', function(k) redis.call('INCR', k[1]) redis.call('DECR', k[2]) end)").Err())
	move := redis.NewScript("redis.call('INCR', KEYS[1]) redis.call('DECR', KEYS[2])")
	deadline := time.Now().Add(1500 * time.Millisecond)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	worker := func(name string, op func(i int) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100000 && time.Now().Before(deadline); i++ {
				if err := op(i); err != nil && err != redis.Nil && err != redis.TxFailedErr {
					errs <- fmt.Errorf("%s: %w", name, err)
					return
				}
			}
		}()
	}
	worker("eval", func(int) error { return move.Run(ctx, rdb, []string{"{s}a", "{s}b"}).Err() })
	worker("fcall", func(int) error { return rdb.FCall(ctx, "mv", []string{"{s}b", "{s}a"}).Err() })
	worker("exec-locked", func(int) error {
		_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Incr(ctx, "{s}a")
			p.Decr(ctx, "{s}b")
			return nil
		})
		return err
	})
	worker("exec-exclusive", func(int) error {
		cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Get(ctx, "{s}a")
			p.DBSize(ctx)
			p.Get(ctx, "{s}b")
			return nil
		})
		if err != nil && err != redis.Nil {
			return err
		}
		a, _ := cmds[0].(*redis.StringCmd).Int()
		b, _ := cmds[2].(*redis.StringCmd).Int()
		if a+b != 0 {
			return fmt.Errorf("a+b = %d+%d seen inside a transaction", a, b)
		}
		return nil
	})
	worker("watch", func(int) error {
		return rdb.Watch(ctx, func(tx *redis.Tx) error {
			n, err := tx.Get(ctx, "w").Int()
			if err != nil && err != redis.Nil {
				return err
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, "w", n+1, 0)
				return nil
			})
			return err
		}, "w")
	})
	worker("blpop", func(i int) error {
		err := rdb.Do(ctx, "BLPOP", fmt.Sprintf("q%d", i%3), "0.02").Err()
		if err == redis.Nil {
			return nil
		}
		return err
	})
	worker("lpush", func(i int) error { return rdb.LPush(ctx, fmt.Sprintf("q%d", i%3), i).Err() })
	worker("plain", func(i int) error { return rdb.Set(ctx, fmt.Sprintf("k%d", i%100), i, 0).Err() })
	worker("script-flush", func(i int) error {
		time.Sleep(50 * time.Millisecond)
		return rdb.ScriptFlush(ctx).Err()
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	a, _ := rdb.Get(ctx, "{s}a").Int()
	b, _ := rdb.Get(ctx, "{s}b").Int()
	require.Equal(t, 0, a+b)
}
