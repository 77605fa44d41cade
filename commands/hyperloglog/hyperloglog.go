// Package hyperloglog holds the HyperLogLog commands (Redis 7.0's
// "hyperloglog" group). HyperLogLogs are string values; the representation
// and the algorithms are in package hll.
package hyperloglog

import (
	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/hll"
	"github.com/shoal-db/shoal/store"
)

// Handlers returns the HyperLogLog commands' handlers by command name.
func Handlers() map[string]command.Handler {
	return map[string]command.Handler{
		"pfadd":      cmdPFAdd,
		"pfcount":    cmdPFCount,
		"pfmerge":    cmdPFMerge,
		"pfdebug":    cmdPFDebug,
		"pfselftest": cmdPFSelfTest,
	}
}

const (
	msgHLLWrongType = "WRONGTYPE Key is not a valid HyperLogLog string value."
	msgHLLCorrupted = "INVALIDOBJ Corrupted HLL object detected"
)

// hllSparseMaxBytes is hll-sparse-max-bytes: the size past which a sparse
// HyperLogLog turns dense.
func hllSparseMaxBytes(c *command.Ctx) int64 {
	return c.Config().Int("hll-sparse-max-bytes")
}

// checkHLL replies the error for an entry that is not a HyperLogLog (of
// another type, or a string that is not one) and returns false; it returns
// true for a HyperLogLog.
func checkHLL(c *command.Ctx, e *store.Entry) bool {
	if e.Type() != store.TypeString {
		c.ErrWrongType()
		return false
	}
	if !hll.Valid(e.Bytes()) {
		c.Error(msgHLLWrongType)
		return false
	}
	return true
}

// cmdPFAdd: PFADD key [element ...]. A missing key is created (even with no
// elements); the reply is 1 if the key was created or a register changed.
// Like Redis, elements added before one that finds the HLL corrupted stay
// added.
func cmdPFAdd(c *command.Ctx, args [][]byte) {
	db := c.DB()
	key := args[1]
	e := command.LookupWrite(db, key)
	updated := 0
	if e == nil {
		e = db.SetRawString(key, hll.NewSparse(), false)
		updated++
	} else if !checkHLL(c, e) {
		return
	}
	p := e.MutableBytes()
	maxBytes := hllSparseMaxBytes(c)
	for _, ele := range args[2:] {
		switch hll.Add(p, ele, maxBytes) {
		case 1:
			updated++
		case -1:
			c.Error(msgHLLCorrupted)
			return
		}
	}
	c.Changed(int64(updated)) // the key created plus each register raised, as Redis
	if updated > 0 {
		hll.InvalidateCache(*p)
		c.Notify(config.NotifyString, "pfadd", key)
		c.Int(1)
		return
	}
	c.Int(0)
}

// cmdPFCount: PFCOUNT key [key ...]. With one key the estimate is cached in
// the value's header (a write to the string, as in Redis); with several the
// registers are merged and nothing is written.
func cmdPFCount(c *command.Ctx, args [][]byte) {
	db := c.DB()
	if len(args) > 2 {
		var max hll.Registers
		for _, key := range args[1:] {
			e := db.Find(key)
			if e == nil {
				continue // a missing key is an empty HLL
			}
			if !checkHLL(c, e) {
				return
			}
			if !max.Merge(e.Bytes()) {
				c.Error(msgHLLCorrupted)
				return
			}
		}
		c.Int(int64(max.Count()))
		return
	}
	e := db.Find(args[1])
	if e == nil {
		c.Int(0)
		return
	}
	if !checkHLL(c, e) {
		return
	}
	b := *e.MutableBytes()
	card, valid := hll.CachedCard(b)
	if !valid {
		var invalid bool
		if card, invalid = hll.Count(b); invalid {
			c.Error(msgHLLCorrupted)
			return
		}
		hll.SetCachedCard(b, card)
		c.Dirty(1) // the cached estimate was written, a change for Redis too
	}
	c.Int(int64(card))
}

// cmdPFMerge: PFMERGE destkey [sourcekey ...]. The destination is a source
// too; it turns dense when any source is dense.
func cmdPFMerge(c *command.Ctx, args [][]byte) {
	db := c.DB()
	var max hll.Registers
	useDense := false
	for _, key := range args[1:] {
		e := db.Find(key)
		if e == nil {
			continue
		}
		if !checkHLL(c, e) {
			return
		}
		b := e.Bytes()
		if hll.IsDense(b) {
			useDense = true
		}
		if !max.Merge(b) {
			c.Error(msgHLLCorrupted)
			return
		}
	}
	e := command.LookupWrite(db, args[1])
	if e == nil {
		e = db.SetRawString(args[1], hll.NewSparse(), false)
	}
	p := e.MutableBytes()
	if useDense && !hll.ToDense(p) {
		c.Error(msgHLLCorrupted)
		return
	}
	maxBytes := hllSparseMaxBytes(c)
	for i, v := range max {
		if v == 0 {
			continue
		}
		// The destination was validated as a source, so this cannot find
		// it corrupted.
		hll.Set(p, i, v, maxBytes)
	}
	hll.InvalidateCache(*p)
	// Redis raises pfadd for a merge too (a mass add of elements).
	c.Notify(config.NotifyString, "pfadd", args[1])
	c.OK()
}

// cmdPFDebug: PFDEBUG GETREG|DECODE|ENCODING|TODENSE key.
func cmdPFDebug(c *command.Ctx, args [][]byte) {
	sub, key := args[1], args[2]
	e := command.LookupWrite(c.DB(), key)
	if e == nil {
		c.Error("ERR The specified key does not exist")
		return
	}
	if !checkHLL(c, e) {
		return
	}
	p := e.MutableBytes()
	switch {
	case command.ArgIs(sub, "getreg"):
		if !hllMakeDense(c, p) {
			return
		}
		c.Array(hll.NumRegisters)
		for i := 0; i < hll.NumRegisters; i++ {
			c.Int(int64(hll.Register(*p, i)))
		}
	case command.ArgIs(sub, "decode"):
		if hll.IsDense(*p) {
			c.Error("ERR HLL encoding is not sparse")
			return
		}
		c.BulkString(hll.DecodeSparse(*p))
	case command.ArgIs(sub, "encoding"):
		if hll.IsDense(*p) {
			c.Status("dense")
		} else {
			c.Status("sparse")
		}
	case command.ArgIs(sub, "todense"):
		wasSparse := !hll.IsDense(*p)
		if !hllMakeDense(c, p) {
			return
		}
		if wasSparse {
			c.Int(1)
		} else {
			c.Int(0)
		}
	default:
		c.Error("ERR Unknown PFDEBUG subcommand '" + command.CString(sub) + "'")
	}
}

// hllMakeDense converts the HLL *p to dense if it is sparse; on corrupted
// opcodes it replies the error and returns false.
func hllMakeDense(c *command.Ctx, p *[]byte) bool {
	if !hll.ToDense(p) {
		c.Error(msgHLLCorrupted)
		return false
	}
	return true
}

// cmdPFSelfTest: PFSELFTEST checks the register packing and the estimator,
// as Redis's self test does: random register values must read back
// unchanged, and ten million distinct elements added to a dense and a
// sparse HLL must give equal estimates within six standard errors.
func cmdPFSelfTest(c *command.Ctx, args [][]byte) {
	if msg := hll.SelfTest(hllSparseMaxBytes(c)); msg != "" {
		c.Error("ERR TESTFAILED " + msg)
		return
	}
	c.OK()
}
