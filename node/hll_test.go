package node

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/shoal-db/shoal/hll"
)

// HyperLogLog tests: exact replies (checked against Redis too), then
// differential runs whose PFCOUNT answers and whose HLL strings (GET) must be
// identical to Redis's, sparse and dense, a corruption differential, and a
// fuzz test of the decoders.

// emptySparseHLL is the value PFADD creates: sparse, one XZERO of 16384
// registers, the cached cardinality marked invalid.
const emptySparseHLL = "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff"

var hllReplyCases = []bmCase{
	bc(bmInt(1), "PFADD", "h"),
	bc(bmBulk(emptySparseHLL), "GET", "h"),
	bc(bmInt(0), "PFADD", "h"),
	bc(bmInt(0), "PFCOUNT", "h"),
	bc(bmBulk(emptySparseHLL[:15]+"\x00"+emptySparseHLL[16:]), "GET", "h"), // cached 0
	bc(bmBulk("raw"), "OBJECT", "ENCODING", "h"),
	bc(bmInt(1), "PFADD", "h", "a", "b", "c"),
	bc(bmInt(0), "PFADD", "h", "a", "b", "c"),
	bc(bmInt(3), "PFCOUNT", "h"),
	bc(bmBulk("Z:8436 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603"), "PFDEBUG", "DECODE", "h"),
	bc("+sparse\r\n", "PFDEBUG", "ENCODING", "h"),
	bc(bmInt(1), "PFADD", "h", ""),
	bc(bmInt(4), "PFCOUNT", "h"),
	bc(bmInt(1), "PFADD", "h2", "c", "d", "e"),
	bc(bmOK, "PFMERGE", "m", "h", "h2"),
	bc(bmInt(6), "PFCOUNT", "m"),
	bc(bmInt(6), "PFCOUNT", "h", "h2", "nokey"),
	bc(bmInt(0), "PFCOUNT", "nokey"),
	bc(bmInt(0), "PFCOUNT", "nokey", "nokey2"),
	bc(bmOK, "PFMERGE", "m2"),
	bc(bmBulk(emptySparseHLL), "GET", "m2"),
	bc(bmOK, "PFMERGE", "m2", "nokey"),
	bc(bmInt(0), "PFCOUNT", "m2"),
	bc(bmInt(1), "PFDEBUG", "TODENSE", "h2"),
	bc(bmInt(0), "PFDEBUG", "TODENSE", "h2"),
	bc("+dense\r\n", "PFDEBUG", "ENCODING", "h2"),
	bc(bmInt(12304), "STRLEN", "h2"),
	bc("-ERR HLL encoding is not sparse\r\n", "PFDEBUG", "DECODE", "h2"),
	bc(bmOK, "PFMERGE", "m3", "h"),
	bc("+sparse\r\n", "PFDEBUG", "ENCODING", "m3"),
	bc(bmOK, "PFMERGE", "m3", "h2"), // a dense source makes the destination dense
	bc("+dense\r\n", "PFDEBUG", "ENCODING", "m3"),
	bc(bmInt(6), "PFCOUNT", "m3"),
	bc("-ERR The specified key does not exist\r\n", "PFDEBUG", "ENCODING", "nokey"),
	bc("-ERR The specified key does not exist\r\n", "PFDEBUG", "NOSUCH", "nokey"),
	bc("-ERR Unknown PFDEBUG subcommand 'NOSUCH'\r\n", "PFDEBUG", "NOSUCH", "h"),

	// Not HyperLogLogs.
	bc(bmOK, "SET", "str", "hello world, not an HLL"),
	bc("-WRONGTYPE Key is not a valid HyperLogLog string value.\r\n", "PFADD", "str", "a"),
	bc("-WRONGTYPE Key is not a valid HyperLogLog string value.\r\n", "PFCOUNT", "str"),
	bc("-WRONGTYPE Key is not a valid HyperLogLog string value.\r\n", "PFCOUNT", "h", "str"),
	bc("-WRONGTYPE Key is not a valid HyperLogLog string value.\r\n", "PFMERGE", "str", "h"),
	bc("-WRONGTYPE Key is not a valid HyperLogLog string value.\r\n", "PFMERGE", "h", "str"),
	bc("-WRONGTYPE Key is not a valid HyperLogLog string value.\r\n", "PFDEBUG", "GETREG", "str"),
	bc(bmWrongType, "PFADD", "list", "a"),
	bc(bmWrongType, "PFCOUNT", "list"),
	bc(bmWrongType, "PFMERGE", "h", "list"),
	bc(bmOK, "SET", "badenc", "HYLL\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff"),
	bc("-WRONGTYPE Key is not a valid HyperLogLog string value.\r\n", "PFCOUNT", "badenc"),
	bc(bmOK, "SET", "shortdense", "HYLL\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff"),
	bc("-WRONGTYPE Key is not a valid HyperLogLog string value.\r\n", "PFCOUNT", "shortdense"),
	bc(bmOK, "SET", "hdr", "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80"),
	bc("-INVALIDOBJ Corrupted HLL object detected\r\n", "PFCOUNT", "hdr"), // no opcodes
	bc("-INVALIDOBJ Corrupted HLL object detected\r\n", "PFADD", "hdr", "x"),

	// Corrupted sparse values.
	bc(bmInt(1), "PFADD", "c", "a", "b", "c"),
	bc(bmInt(32), "APPEND", "c", "hello"),
	bc("-INVALIDOBJ Corrupted HLL object detected\r\n", "PFCOUNT", "c"),
	bc("-INVALIDOBJ Corrupted HLL object detected\r\n", "PFCOUNT", "c", "h"),
	bc("-INVALIDOBJ Corrupted HLL object detected\r\n", "PFMERGE", "h", "c"),
	bc("-INVALIDOBJ Corrupted HLL object detected\r\n", "PFDEBUG", "GETREG", "c"),
	bc("-INVALIDOBJ Corrupted HLL object detected\r\n", "PFDEBUG", "TODENSE", "c"),
	bc(bmBulk("Z:8436 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603 Z:10342 Z:11373 Z:12033"), "PFDEBUG", "DECODE", "c"),
	// Runs past the last register (CVE-2025-32023: rejected whatever follows).
	bc(bmOK, "SET", "over", "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff\x7f\xff\xff"),
	bc("-INVALIDOBJ Corrupted HLL object detected\r\n", "PFCOUNT", "over"),
	bc("-INVALIDOBJ Corrupted HLL object detected\r\n", "PFCOUNT", "over", "over"),
	bc("-INVALIDOBJ Corrupted HLL object detected\r\n", "PFDEBUG", "GETREG", "over"),
	bc(bmOK, "SET", "over", "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xfe\x8d"),
	bc("-INVALIDOBJ Corrupted HLL object detected\r\n", "PFCOUNT", "over", "h"),
	bc("-INVALIDOBJ Corrupted HLL object detected\r\n", "PFDEBUG", "TODENSE", "over"),
	bc(bmOK, "SET", "over", "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xfe\x80"),
	bc(bmInt(1), "PFCOUNT", "over"),
	bc(bmBulk("Z:16383 v:1,1"), "PFDEBUG", "DECODE", "over"),

	// A cached cardinality is trusted as it is.
	bc(bmOK, "SET", "cached", "HYLL\x01\x00\x00\x00\x2a\x00\x00\x00\x00\x00\x00\x00\x7f\xff"),
	bc(bmInt(42), "PFCOUNT", "cached"),
}

func hllRunCases(t *testing.T, s *Server, tc *testConn) {
	t.Helper()
	bmSeedNonString(t, s, tc, "list")
	for i, cs := range hllReplyCases {
		if got := tc.do(cs.args...); got != cs.want {
			t.Errorf("case %d %q:\n got  %q\n want %q", i, cs.args, got, cs.want)
		}
	}
}

func TestHLLReplies(t *testing.T) {
	s := startTestServer(t)
	hllRunCases(t, s, dialTest(t, s))
}

func TestHLLRepliesMatchRedis(t *testing.T) {
	addr := startRealRedis(t)
	hllRunCases(t, nil, dialTestAddr(t, addr))
}

// hllElement returns the i-th test element: mostly distinct strings, some
// random binary ones of every length up to 20 (all MurmurHash tails).
func hllElement(r *rand.Rand, i int) string {
	if r.IntN(4) == 0 {
		b := make([]byte, r.IntN(21))
		for k := range b {
			b[k] = byte(r.IntN(256))
		}
		return string(b)
	}
	return "el:" + strconv.Itoa(i)
}

// TestHLLMatchesRedis adds 100k elements to HyperLogLogs under several
// hll-sparse-max-bytes settings: every PFADD and PFCOUNT reply must be
// Redis's, and so must the HLL strings themselves, sparse and dense.
func TestHLLMatchesRedis(t *testing.T) {
	p := newBMPair(t)
	seed := bmSeed(t)
	r := rand.New(rand.NewPCG(seed, 11))
	const total = 100_000
	for _, maxBytes := range []string{"3000", "200", "0", "20000"} {
		p.do("CONFIG", "SET", "hll-sparse-max-bytes", maxBytes)
		key := "hll:" + maxBytes
		var cmds [][]string
		sawSparse, sawDense := false, false
		for n := 0; n < total; {
			cmd := []string{"PFADD", key}
			for k := 1 + r.IntN(20); k > 0 && n < total; k-- {
				cmd = append(cmd, hllElement(r, n))
				n++
			}
			cmds = append(cmds, cmd, []string{"PFCOUNT", key})
			if len(cmds)%200 == 0 || n < 2000 && len(cmds)%20 == 0 {
				cmds = append(cmds, []string{"GET", key}, []string{"PFDEBUG", "ENCODING", key})
			}
			if len(cmds) >= 4000 {
				out := p.run(cmds)
				sawSparse = sawSparse || strings.Contains(strings.Join(out, ""), "+sparse")
				sawDense = sawDense || strings.Contains(strings.Join(out, ""), "+dense")
				cmds = cmds[:0]
			}
		}
		cmds = append(cmds, []string{"GET", key}, []string{"PFCOUNT", key}, []string{"GET", key})
		p.run(cmds)
		t.Logf("hll-sparse-max-bytes %s: saw sparse %v, dense %v", maxBytes, sawSparse, sawDense)
		if maxBytes == "3000" && !(sawSparse && sawDense) {
			t.Errorf("expected both encodings with hll-sparse-max-bytes %s", maxBytes)
		}
	}

	// Merges and multi-key counts over HLLs of many sizes and encodings.
	var cmds [][]string
	sizes := []int{0, 1, 5, 50, 300, 2000, 20000}
	for i, n := range sizes {
		key := "m" + strconv.Itoa(i)
		cmds = append(cmds, []string{"PFADD", key})
		for k := 0; k < n; k += 50 {
			cmd := []string{"PFADD", key}
			for j := k; j < min(n, k+50); j++ {
				cmd = append(cmd, "m:"+strconv.Itoa(r.IntN(30000)))
			}
			cmds = append(cmds, cmd)
		}
		cmds = append(cmds, []string{"PFDEBUG", "DECODE", key}, []string{"PFDEBUG", "ENCODING", key})
	}
	p.do("CONFIG", "SET", "hll-sparse-max-bytes", "3000")
	for range 60 {
		a, b, c := "m"+strconv.Itoa(r.IntN(len(sizes))), "m"+strconv.Itoa(r.IntN(len(sizes))), "m"+strconv.Itoa(r.IntN(len(sizes)))
		dst := "d" + strconv.Itoa(r.IntN(4))
		cmds = append(cmds,
			[]string{"PFCOUNT", a, b},
			[]string{"PFCOUNT", a, b, c, "nokey"},
			[]string{"PFMERGE", dst, a, b},
			[]string{"GET", dst},
			[]string{"PFCOUNT", dst},
			[]string{"PFMERGE", dst, c},
			[]string{"PFCOUNT", dst},
			[]string{"GET", dst})
	}
	for i := range sizes {
		key := "m" + strconv.Itoa(i)
		cmds = append(cmds, []string{"PFDEBUG", "GETREG", key}, []string{"GET", key},
			[]string{"PFDEBUG", "TODENSE", key}, []string{"GET", key}, []string{"PFCOUNT", key})
	}
	p.run(cmds)
}

// hllDenseValue returns a dense HLL string with the given registers and an
// invalid cached cardinality.
func hllDenseValue(regs *hll.Registers) string {
	return string(hll.NewDense(regs))
}

// TestHLLEstimatorMatchesRedis counts dense HLLs with arbitrary register
// contents (every value 0..63, including the top values only crafted strings
// hold) on both servers.
func TestHLLEstimatorMatchesRedis(t *testing.T) {
	p := newBMPair(t)
	seed := bmSeed(t)
	r := rand.New(rand.NewPCG(seed, 13))
	var regs hll.Registers
	fill := func(f func(i int) uint8) string {
		for i := range regs {
			regs[i] = f(i)
		}
		return hllDenseValue(&regs)
	}
	values := []string{
		fill(func(int) uint8 { return 0 }),
		fill(func(int) uint8 { return 51 }),
		fill(func(int) uint8 { return 63 }),
		fill(func(i int) uint8 { return uint8(i % 64) }),
		fill(func(i int) uint8 { return uint8(i % 52) }),
		fill(func(i int) uint8 {
			if i == 0 {
				return 51
			}
			return 0
		}),
	}
	for range 150 {
		zeroes := r.Float64()
		top := 1 + r.IntN(63)
		values = append(values, fill(func(int) uint8 {
			if r.Float64() < zeroes {
				return 0
			}
			// roughly geometric, as real registers are
			v := 1
			for v < top && r.IntN(2) == 0 {
				v++
			}
			return uint8(v)
		}))
	}
	var cmds [][]string
	for i, v := range values {
		key := "e" + strconv.Itoa(i)
		other := "e" + strconv.Itoa(r.IntN(i+1))
		cmds = append(cmds, []string{"SET", key, v}, []string{"PFCOUNT", key}, []string{"GETRANGE", key, "0", "15"},
			[]string{"PFCOUNT", key, other})
	}
	p.run(cmds)
}

// TestHLLCorruptedMatchesRedis corrupts HyperLogLogs at random (as Redis's
// own fuzzing test does) and checks that both servers answer alike and
// leave the same bytes behind: partial PFADD updates included.
func TestHLLCorruptedMatchesRedis(t *testing.T) {
	p := newBMPair(t)
	seed := bmSeed(t)
	r := rand.New(rand.NewPCG(seed, 17))
	p.do("CONFIG", "SET", "hll-sparse-max-bytes", "3000")
	for round := range 300 {
		var cmds [][]string
		cmds = append(cmds, []string{"DEL", "hll", "dst"})
		n := r.IntN(3000)
		if round%5 == 0 {
			n = r.IntN(30)
		}
		for k := 0; k < n; k += 100 {
			cmd := []string{"PFADD", "hll"}
			for j := k; j < min(n, k+100); j++ {
				cmd = append(cmd, strconv.FormatFloat(r.Float64(), 'g', -1, 64))
			}
			cmds = append(cmds, cmd)
		}
		if n == 0 {
			cmds = append(cmds, []string{"PFADD", "hll"})
		}
		p.run(cmds)
		strlen := p.do("STRLEN", "hll")
		size, _ := strconv.Atoi(strings.TrimSpace(strlen[1:]))
		if size <= 0 {
			t.Fatalf("STRLEN hll: %q", strlen)
		}
		cmds = cmds[:0]
		for i := 0; i < 5; i++ {
			pos := r.IntN(size)
			if r.IntN(3) == 0 {
				pos = hll.HdrSize + r.IntN(max(size-hll.HdrSize, 1)) // the opcodes or registers
			}
			cmds = append(cmds, []string{"SETRANGE", "hll", strconv.Itoa(pos), string([]byte{byte(r.IntN(256))})})
			if r.IntN(2) == 0 {
				break
			}
		}
		if r.IntN(4) == 0 {
			cmds = append(cmds, []string{"APPEND", "hll", string([]byte{byte(r.IntN(256))})})
		}
		cmds = append(cmds,
			[]string{"PFCOUNT", "hll"},
			[]string{"PFDEBUG", "DECODE", "hll"})
		p.run(cmds)
		before := p.do("GET", "hll")
		failures := p.mismatches
		cmds = append(cmds[:0],
			[]string{"PFADD", "hll", "x1", "x2", "x3", strconv.Itoa(round)},
			[]string{"GET", "hll"},
			[]string{"PFCOUNT", "hll"},
			[]string{"PFCOUNT", "hll", "nokey"},
			[]string{"PFMERGE", "dst", "hll"},
			[]string{"GET", "dst"},
			[]string{"PFDEBUG", "TODENSE", "hll"},
			[]string{"GET", "hll"})
		p.run(cmds)
		if p.mismatches != failures {
			t.Fatalf("round %d: the corrupted value was %q", round, before)
		}
	}
}
