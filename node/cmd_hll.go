package node

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/store"
)

// hllHandlers: the HyperLogLog commands (Redis 7.0's "hyperloglog" group).
// HyperLogLogs are string values (see hll.go for the representation).
func hllHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"pfadd":      cmdPFAdd,
		"pfcount":    cmdPFCount,
		"pfmerge":    cmdPFMerge,
		"pfdebug":    cmdPFDebug,
		"pfselftest": cmdPFSelfTest,
	}
}

// hllSparseMaxBytes is hll-sparse-max-bytes: the size past which a sparse
// HyperLogLog turns dense.
func (c *Client) hllSparseMaxBytes() int64 {
	return c.srv.cfg.Int("hll-sparse-max-bytes")
}

// checkHLL replies the error for an entry that is not a HyperLogLog (of
// another type, or a string that is not one) and returns false; it returns
// true for a HyperLogLog.
func (c *Client) checkHLL(e *store.Entry) bool {
	if e.Type() != store.TypeString {
		c.ErrWrongType()
		return false
	}
	if !isHLL(e.Bytes()) {
		c.Error(msgHLLWrongType)
		return false
	}
	return true
}

// cmdPFAdd: PFADD key [element ...]. A missing key is created (even with no
// elements); the reply is 1 if the key was created or a register changed.
// Like Redis, elements added before one that finds the HLL corrupted stay
// added.
func cmdPFAdd(c *Client, args [][]byte) {
	db := c.DB()
	key := args[1]
	e := command.LookupWrite(db, key)
	updated := 0
	if e == nil {
		e = db.SetRawString(key, newSparseHLL(), false)
		updated++
	} else if !c.checkHLL(e) {
		return
	}
	p := e.MutableBytes()
	maxBytes := c.hllSparseMaxBytes()
	for _, ele := range args[2:] {
		switch hllAdd(p, ele, maxBytes) {
		case 1:
			updated++
		case -1:
			c.Error(msgHLLCorrupted)
			return
		}
	}
	c.Changed(int64(updated)) // the key created plus each register raised, as Redis
	if updated > 0 {
		hllInvalidateCache(*p)
		c.Int(1)
		return
	}
	c.Int(0)
}

// cmdPFCount: PFCOUNT key [key ...]. With one key the estimate is cached in
// the value's header (a write to the string, as in Redis); with several the
// registers are merged and nothing is written.
func cmdPFCount(c *Client, args [][]byte) {
	db := c.DB()
	if len(args) > 2 {
		var max [hllRegisters]uint8
		for _, key := range args[1:] {
			e := db.Find(key)
			if e == nil {
				continue // a missing key is an empty HLL
			}
			if !c.checkHLL(e) {
				return
			}
			if !hllMergeInto(&max, e.Bytes()) {
				c.Error(msgHLLCorrupted)
				return
			}
		}
		c.Int(int64(hllCountRegisters(&max)))
		return
	}
	e := db.Find(args[1])
	if e == nil {
		c.Int(0)
		return
	}
	if !c.checkHLL(e) {
		return
	}
	b := *e.MutableBytes()
	card, valid := hllCachedCard(b)
	if !valid {
		var invalid bool
		if card, invalid = hllCount(b); invalid {
			c.Error(msgHLLCorrupted)
			return
		}
		hllSetCachedCard(b, card)
		c.Dirty(1) // the cached estimate was written, a change for Redis too
	}
	c.Int(int64(card))
}

// cmdPFMerge: PFMERGE destkey [sourcekey ...]. The destination is a source
// too; it turns dense when any source is dense.
func cmdPFMerge(c *Client, args [][]byte) {
	db := c.DB()
	var max [hllRegisters]uint8
	useDense := false
	for _, key := range args[1:] {
		e := db.Find(key)
		if e == nil {
			continue
		}
		if !c.checkHLL(e) {
			return
		}
		b := e.Bytes()
		if b[hllEncOffset] == hllEncDense {
			useDense = true
		}
		if !hllMergeInto(&max, b) {
			c.Error(msgHLLCorrupted)
			return
		}
	}
	e := command.LookupWrite(db, args[1])
	if e == nil {
		e = db.SetRawString(args[1], newSparseHLL(), false)
	}
	p := e.MutableBytes()
	if useDense && (*p)[hllEncOffset] == hllEncSparse {
		dense, ok := hllSparseToDense(*p)
		if !ok {
			c.Error(msgHLLCorrupted)
			return
		}
		*p = dense
	}
	maxBytes := c.hllSparseMaxBytes()
	for i, v := range max {
		if v == 0 {
			continue
		}
		if (*p)[hllEncOffset] == hllEncDense {
			hllDenseSet((*p)[hllHdrSize:], i, v)
		} else {
			// The destination was validated as a source, so this cannot
			// find it corrupted.
			hllSparseSet(p, i, v, maxBytes)
		}
	}
	hllInvalidateCache(*p)
	c.OK()
}

// cmdPFDebug: PFDEBUG GETREG|DECODE|ENCODING|TODENSE key.
func cmdPFDebug(c *Client, args [][]byte) {
	sub, key := args[1], args[2]
	e := command.LookupWrite(c.DB(), key)
	if e == nil {
		c.Error("ERR The specified key does not exist")
		return
	}
	if !c.checkHLL(e) {
		return
	}
	p := e.MutableBytes()
	switch {
	case command.ArgIs(sub, "getreg"):
		if !hllMakeDense(c, p) {
			return
		}
		regs := (*p)[hllHdrSize:]
		c.Array(hllRegisters)
		for i := 0; i < hllRegisters; i++ {
			c.Int(int64(hllDenseGet(regs, i)))
		}
	case command.ArgIs(sub, "decode"):
		if (*p)[hllEncOffset] != hllEncSparse {
			c.Error("ERR HLL encoding is not sparse")
			return
		}
		c.BulkString(hllDecodeSparse((*p)[hllHdrSize:]))
	case command.ArgIs(sub, "encoding"):
		if (*p)[hllEncOffset] == hllEncDense {
			c.Status("dense")
		} else {
			c.Status("sparse")
		}
	case command.ArgIs(sub, "todense"):
		wasSparse := (*p)[hllEncOffset] == hllEncSparse
		if !hllMakeDense(c, p) {
			return
		}
		if wasSparse {
			c.Int(1)
		} else {
			c.Int(0)
		}
	default:
		c.Error("ERR Unknown PFDEBUG subcommand '" + string(cstr(sub)) + "'")
	}
}

// hllMakeDense converts the HLL *p to dense if it is sparse; on corrupted
// opcodes it replies the error and returns false.
func hllMakeDense(c *Client, p *[]byte) bool {
	if (*p)[hllEncOffset] != hllEncSparse {
		return true
	}
	dense, ok := hllSparseToDense(*p)
	if !ok {
		c.Error(msgHLLCorrupted)
		return false
	}
	*p = dense
	return true
}

// hllDecodeSparse renders sparse opcodes as PFDEBUG DECODE does:
// "z:<len>" (ZERO), "Z:<len>" (XZERO), "v:<value>,<len>" (VAL).
func hllDecodeSparse(data []byte) string {
	var sb strings.Builder
	for i := 0; i < len(data); {
		run, val, size := sparseOp(data, i)
		if sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		switch {
		case val != 0:
			sb.WriteString("v:")
			sb.WriteString(strconv.Itoa(int(val)))
			sb.WriteByte(',')
		case size == 2:
			sb.WriteString("Z:")
		default:
			sb.WriteString("z:")
		}
		sb.WriteString(strconv.Itoa(run))
		i += size
	}
	return sb.String()
}

// cstr is b up to its first NUL byte: what Redis sees of an argument it
// handles as a C string.
func cstr(b []byte) []byte {
	for i, x := range b {
		if x == 0 {
			return b[:i]
		}
	}
	return b
}

// cmdPFSelfTest: PFSELFTEST checks the register packing and the estimator,
// as Redis's self test does: random register values must read back
// unchanged, and ten million distinct elements added to a dense and a
// sparse HLL must give equal estimates within six standard errors.
func cmdPFSelfTest(c *Client, args [][]byte) {
	if msg := hllSelfTest(c.hllSparseMaxBytes()); msg != "" {
		c.Error("ERR TESTFAILED " + msg)
		return
	}
	c.OK()
}

func hllSelfTest(sparseMaxBytes int64) string {
	dense := make([]byte, hllDenseSize)
	copy(dense, "HYLL")
	regs := dense[hllHdrSize:]
	var want [hllRegisters]uint8
	for range 1000 {
		for i := range want {
			want[i] = uint8(rand.IntN(hllRegisterMax + 1))
			hllDenseSetReg(regs, i, want[i])
		}
		for i := range want {
			if v := hllDenseGet(regs, i); v != want[i] {
				return "Register " + strconv.Itoa(i) + " should be " + strconv.Itoa(int(want[i])) +
					" but is " + strconv.Itoa(int(v))
			}
		}
	}

	clear(regs)
	sparse := newSparseHLL()
	relErr := 1.04 / 128 // 1.04/sqrt(registers)
	seed := rand.Uint64()
	var ele [8]byte
	checkpoint := int64(1)
	for j := int64(1); j <= 10_000_000; j++ {
		v := uint64(j) ^ seed
		for k := range ele {
			ele[k] = byte(v >> (8 * k))
		}
		index, count := hllPatLen(ele[:])
		hllDenseSet(regs, index, count)
		hllAdd(&sparse, ele[:], sparseMaxBytes)
		if j != checkpoint {
			continue
		}
		if j < sparseMaxBytes/2 && sparse[hllEncOffset] != hllEncSparse {
			return "sparse encoding not used"
		}
		dcard, _ := hllCount(dense)
		if scard, _ := hllCount(sparse); dcard != scard {
			return "dense/sparse disagree"
		}
		absErr := checkpoint - int64(dcard)
		if absErr < 0 {
			absErr = -absErr
		}
		maxErr := int64(math.Ceil(relErr * 6 * float64(checkpoint)))
		if j == 10 {
			maxErr = 1 // collisions make small cardinalities noisy
		}
		if absErr > maxErr {
			return "Too big error. card:" + strconv.FormatInt(checkpoint, 10) +
				" abserr:" + strconv.FormatInt(absErr, 10)
		}
		checkpoint *= 10
	}
	return ""
}
