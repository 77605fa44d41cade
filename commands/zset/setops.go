package zset

import (
	"math"
	"slices"
	"strings"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/store"
)

// ZUNION, ZINTER, ZDIFF, their STORE forms and ZINTERCARD
// (zunionInterDiffGenericCommand). Inputs may be sorted sets or plain sets
// (every member scoring 1).

type zsetOp uint8

// zstoreEvents are the keyspace events of the three *STORE commands.
var zstoreEvents = [...]string{zopUnion: "zunionstore", zopInter: "zinterstore", zopDiff: "zdiffstore"}

const (
	zopUnion zsetOp = iota
	zopInter
	zopDiff
)

type zaggregate uint8

const (
	aggSum zaggregate = iota
	aggMin
	aggMax
)

// zsrc is one input: a sorted set, a set, or nothing (missing key).
type zsrc struct {
	z      *store.ZSet
	s      *store.Set
	weight float64
}

func (src *zsrc) length() int {
	switch {
	case src.z != nil:
		return src.z.Len()
	case src.s != nil:
		return src.s.Len()
	}
	return 0
}

// same reports whether two inputs are the same object (a key named twice).
func (src *zsrc) same(o *zsrc) bool {
	return src.z != nil && src.z == o.z || src.s != nil && src.s == o.s
}

// each visits the input's elements: a sorted set from its highest score
// down, as Redis's zuiNext does.
func (src *zsrc) each(fn func(member []byte, score float64) bool) {
	switch {
	case src.z != nil:
		src.z.Each(true, fn)
	case src.s != nil:
		for m := range src.s.All() {
			if !fn(m, 1) {
				return
			}
		}
	}
}

func (src *zsrc) find(member []byte) (float64, bool) {
	switch {
	case src.z != nil:
		return src.z.Score(member)
	case src.s != nil:
		if src.s.Contains(member) {
			return 1, true
		}
	}
	return 0, false
}

// aggregate folds val into *target (zunionInterAggregate).
func aggregate(target *float64, val float64, agg zaggregate) {
	switch agg {
	case aggSum:
		*target += val
		// +inf + -inf is NaN: Redis keeps the convention of 0.
		if math.IsNaN(*target) {
			*target = 0
		}
	case aggMin:
		if val < *target {
			*target = val
		}
	case aggMax:
		if val > *target {
			*target = val
		}
	}
}

// weighted multiplies, turning NaN (inf * 0) into 0.
func weighted(w, score float64) float64 {
	v := w * score
	if math.IsNaN(v) {
		return 0
	}
	return v
}

// zsetOpGeneric implements the family. numkeysIdx is numkeys' position;
// storing means args[1] is the destination; cardOnly is ZINTERCARD.
func zsetOpGeneric(c *command.Ctx, args [][]byte, numkeysIdx int, storing bool, op zsetOp, cardOnly bool) {
	setnum, ok := ParseLongOrReply(c, args[numkeysIdx])
	if !ok {
		return
	}
	if setnum < 1 {
		c.Error("ERR at least 1 input key is needed for '" + c.Session().CommandFullName(args) + "' command")
		return
	}
	if setnum > int64(len(args)-(numkeysIdx+1)) {
		c.ErrSyntax()
		return
	}
	srcs := make([]zsrc, setnum)
	j := numkeysIdx + 1
	for i := range srcs {
		if e := c.DB().Find(args[j]); e != nil {
			switch e.Type() {
			case store.TypeZSet:
				srcs[i].z = e.ZSet()
			case store.TypeSet:
				srcs[i].s = e.Set()
			default:
				c.ErrWrongType()
				return
			}
		}
		srcs[i].weight = 1
		j++
	}
	agg := aggSum
	withScores := false
	var limit int64
	for remaining := len(args) - j; remaining > 0; remaining = len(args) - j {
		switch a := args[j]; {
		case op != zopDiff && !cardOnly && int64(remaining) >= setnum+1 && command.ArgIs(a, "weights"):
			j++
			for i := range srcs {
				if srcs[i].weight, ok = ParseDoubleOrReply(c, args[j], "weight value is not a float"); !ok {
					return
				}
				j++
			}
		case op != zopDiff && !cardOnly && remaining >= 2 && command.ArgIs(a, "aggregate"):
			switch b := args[j+1]; {
			case command.ArgIs(b, "sum"):
				agg = aggSum
			case command.ArgIs(b, "min"):
				agg = aggMin
			case command.ArgIs(b, "max"):
				agg = aggMax
			default:
				c.ErrSyntax()
				return
			}
			j += 2
		case !storing && !cardOnly && command.ArgIs(a, "withscores"):
			withScores = true
			j++
		case cardOnly && remaining >= 2 && command.ArgIs(a, "limit"):
			if limit, ok = parsePositiveLongOrReply(c, args[j+1], "LIMIT can't be negative"); !ok {
				return
			}
			j += 2
		default:
			c.ErrSyntax()
			return
		}
	}
	if op != zopDiff {
		// Smallest first (Redis's qsort, stable in glibc for this size).
		slices.SortStableFunc(srcs, func(a, b zsrc) int { return a.length() - b.length() })
	}

	var result []store.ZMember
	cardinality := int64(0)
	switch op {
	case zopInter:
		if srcs[0].length() == 0 {
			break
		}
		srcs[0].each(func(m []byte, s float64) bool {
			score := weighted(srcs[0].weight, s)
			for k := 1; k < len(srcs); k++ {
				var v float64
				if srcs[k].same(&srcs[0]) {
					v = s * srcs[k].weight
				} else if found, ok := srcs[k].find(m); ok {
					v = found * srcs[k].weight
				} else {
					return true
				}
				aggregate(&score, v, agg)
			}
			if cardOnly {
				cardinality++
				return limit == 0 || cardinality < limit
			}
			result = append(result, store.ZMember{Member: string(m), Score: score})
			return true
		})
	case zopUnion:
		acc := make(map[string]int, srcs[len(srcs)-1].length())
		for i := range srcs {
			src := &srcs[i]
			src.each(func(m []byte, s float64) bool {
				score := weighted(src.weight, s)
				if k, seen := acc[command.Bstr(m)]; seen {
					aggregate(&result[k].Score, score, agg)
					return true
				}
				member := string(m)
				acc[member] = len(result)
				result = append(result, store.ZMember{Member: member, Score: score})
				return true
			})
		}
	case zopDiff:
		if srcs[0].length() == 0 {
			break
		}
		for k := 1; k < len(srcs); k++ {
			if srcs[k].same(&srcs[0]) {
				goto done // every element would be removed
			}
		}
		srcs[0].each(func(m []byte, s float64) bool {
			for k := 1; k < len(srcs); k++ {
				if _, ok := srcs[k].find(m); ok {
					return true
				}
			}
			result = append(result, store.ZMember{Member: string(m), Score: s})
			return true
		})
	}
done:
	if cardOnly {
		c.Int(cardinality)
		return
	}
	slices.SortFunc(result, CompareMember)
	if storing {
		zsetStore(c, args[1], result, zstoreEvents[op])
		return
	}
	if withScores && c.Proto == 2 {
		c.Array(2 * len(result))
	} else {
		c.Array(len(result))
	}
	for _, e := range result {
		if withScores && c.Proto > 2 {
			c.Array(2)
		}
		c.BulkString(e.Member)
		if withScores {
			c.Double(e.Score)
		}
	}
}

// CompareMember orders by score, then member bytes (the skiplist order).
func CompareMember(a, b store.ZMember) int {
	switch {
	case a.Score < b.Score:
		return -1
	case a.Score > b.Score:
		return 1
	}
	return strings.Compare(a.Member, b.Member)
}
