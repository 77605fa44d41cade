package node

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// benchTxScript is scripts/benchtx's script: three calls on keys of one slot.
const benchTxScript = "redis.call('SET', KEYS[1], ARGV[1]) redis.call('INCR', KEYS[2]) return redis.call('GET', KEYS[1])"

// BenchmarkEvalshaParallel: EVALSHA of a 3-call script from 50 clients.
func BenchmarkEvalshaParallel(b *testing.B) {
	s := startTestServer(b)
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr().String(), PoolSize: 50})
	defer rdb.Close()
	sha := rdb.ScriptLoad(ctx, benchTxScript).Val()
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

// benchDispatchClient returns the server-side client of a new connection,
// found by its name: the benchmarks run commands on it in place of its
// goroutine, which sits in a socket read (no socket cost in the figures).
func benchDispatchClient(b *testing.B, s *Server, name string) *Client {
	tc := dialTest(b, s)
	tc.do("CLIENT", "SETNAME", name)
	return serverClient(b, s, name)
}

func benchArgs(words ...string) [][]byte {
	out := make([][]byte, len(words))
	for i, w := range words {
		out[i] = []byte(w)
	}
	return out
}

// BenchmarkEvalshaDispatch is the dispatcher's cost of one EVALSHA of the
// 3-call script (scripting, the called commands, effects; no socket), with
// its allocations per call.
func BenchmarkEvalshaDispatch(b *testing.B) {
	s := startTestServer(b)
	c := benchDispatchClient(b, s, "bench-evalsha")
	c.run(benchArgs("SCRIPT", "LOAD", benchTxScript))
	sha := sha1Hex([]byte(benchTxScript))
	if !strings.Contains(string(c.Out), sha) {
		b.Fatalf("SCRIPT LOAD: %q", c.Out)
	}
	cmd := benchArgs("EVALSHA", sha, "2", "bench:{1}:a", "bench:{1}:b", "v")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.Out = c.Out[:0]
		c.run(cmd)
	}
	b.StopTimer()
	if !strings.HasPrefix(string(c.Out), "$1\r\nv") {
		b.Fatalf("reply %q", c.Out)
	}
}

// BenchmarkEvalshaDispatchManyKeys is BenchmarkEvalshaDispatch with the
// keys of 50 clients in turn, as scripts/benchtx sends them: a run's
// KEYS differ from the last run's.
func BenchmarkEvalshaDispatchManyKeys(b *testing.B) {
	s := startTestServer(b)
	c := benchDispatchClient(b, s, "bench-evalsha")
	c.run(benchArgs("SCRIPT", "LOAD", benchTxScript))
	sha := sha1Hex([]byte(benchTxScript))
	cmds := make([][][]byte, 50)
	for i := range cmds {
		cmds[i] = benchArgs("EVALSHA", sha, "2", fmt.Sprintf("bench:{%d}:a", i), fmt.Sprintf("bench:{%d}:b", i), "v")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.Out = c.Out[:0]
		c.run(cmds[i%len(cmds)])
	}
	b.StopTimer()
	if !strings.HasPrefix(string(c.Out), "$1\r\nv") {
		b.Fatalf("reply %q", c.Out)
	}
}

// BenchmarkMultiDispatch is the dispatcher's cost of MULTI, 3 SETs and
// EXEC (queueing, the slot-locked EXEC, effects; no socket), with its
// allocations per transaction.
func BenchmarkMultiDispatch(b *testing.B) {
	benchMultiDispatch(b, startTestServer(b), "bench-multi")
}

// benchMultiDispatch runs MULTI, 3 SETs of one slot and EXEC on s b.N
// times through the dispatcher.
func benchMultiDispatch(b *testing.B, s *Server, name string) {
	c := benchDispatchClient(b, s, name)
	cmds := [][][]byte{
		benchArgs("MULTI"),
		benchArgs("SET", "bench:{1}:a", "v"),
		benchArgs("SET", "bench:{1}:b", "v"),
		benchArgs("SET", "bench:{1}:c", "v"),
		benchArgs("EXEC"),
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.Out = c.Out[:0]
		for _, cmd := range cmds {
			c.run(cmd)
		}
	}
	b.StopTimer()
	if !strings.HasSuffix(string(c.Out), "*3\r\n+OK\r\n+OK\r\n+OK\r\n") {
		b.Fatalf("reply %q", c.Out)
	}
}
