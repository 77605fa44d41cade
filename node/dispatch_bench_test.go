package node

import (
	"testing"
)

// BenchmarkOneKeyDispatch is the dispatcher's cost of one-key commands
// (lookup, checks, slot lock, handler, effects; no socket), each on a key
// that exists, for instruction counts of the hot path (cachegrind).
func BenchmarkOneKeyDispatch(b *testing.B) {
	s := startTestServer(b)
	c := benchDispatchClient(b, s, "bench-onekey")
	for _, setup := range [][][]byte{
		benchArgs("SET", "key:000000123456", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
		benchArgs("SET", "counter:000000123456", "1"),
		benchArgs("HSET", "hash:000000123456", "f", "v"),
		benchArgs("RPUSH", "list:000000123456", "a", "b", "c"),
		benchArgs("SADD", "set:000000123456", "a"),
		benchArgs("ZADD", "zset:000000123456", "1", "a"),
	} {
		c.Out = c.Out[:0]
		c.run(setup)
	}
	for _, cmd := range [][][]byte{
		benchArgs("GET", "key:000000123456"),
		benchArgs("SET", "key:000000123456", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
		benchArgs("INCR", "counter:000000123456"),
		benchArgs("HSET", "hash:000000123456", "f", "v"),
		benchArgs("HGET", "hash:000000123456", "f"),
		benchArgs("LINDEX", "list:000000123456", "1"),
		benchArgs("SISMEMBER", "set:000000123456", "a"),
		benchArgs("ZSCORE", "zset:000000123456", "a"),
	} {
		b.Run(string(cmd[0]), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				c.Out = c.Out[:0]
				c.run(cmd)
			}
			if len(c.Out) == 0 || c.Out[0] == '-' {
				b.Fatalf("%s: %q", cmd[0], c.Out)
			}
		})
	}
}

// BenchmarkMultiDispatchCluster is BenchmarkMultiDispatch on a cluster
// node serving every slot (EXEC routes the transaction).
func BenchmarkMultiDispatchCluster(b *testing.B) {
	s := startTestServer(b, "--cluster-enabled", "yes", "--cluster-config-file", b.TempDir()+"/nodes.conf")
	ctl := dialTest(b, s)
	serveSlots(b, ctl)
	benchMultiDispatch(b, s, "bench-multi-cluster")
}
