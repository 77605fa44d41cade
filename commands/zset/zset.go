package zset

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/config"

	"github.com/shoal-db/shoal/store"
)

// zsetHandlers: the sorted set commands (Redis 7.0's "sorted-set" group).
// Argument checks, their order and the error texts follow t_zset.c.
func Handlers() map[string]command.Handler {
	return map[string]command.Handler{
		"zadd":             cmdZAdd,
		"zincrby":          cmdZIncrBy,
		"zrem":             cmdZRem,
		"zcard":            cmdZCard,
		"zcount":           cmdZCount,
		"zlexcount":        cmdZLexCount,
		"zscore":           cmdZScore,
		"zmscore":          cmdZMScore,
		"zrank":            func(c *command.Ctx, args [][]byte) { zrankGeneric(c, args, false) },
		"zrevrank":         func(c *command.Ctx, args [][]byte) { zrankGeneric(c, args, true) },
		"zrange":           func(c *command.Ctx, args [][]byte) { zrangeGeneric(c, args, 1, false, zrAuto, dirAuto) },
		"zrangestore":      func(c *command.Ctx, args [][]byte) { zrangeGeneric(c, args, 2, true, zrAuto, dirAuto) },
		"zrevrange":        func(c *command.Ctx, args [][]byte) { zrangeGeneric(c, args, 1, false, zrRank, dirReverse) },
		"zrangebyscore":    func(c *command.Ctx, args [][]byte) { zrangeGeneric(c, args, 1, false, zrScore, dirForward) },
		"zrevrangebyscore": func(c *command.Ctx, args [][]byte) { zrangeGeneric(c, args, 1, false, zrScore, dirReverse) },
		"zrangebylex":      func(c *command.Ctx, args [][]byte) { zrangeGeneric(c, args, 1, false, zrLex, dirForward) },
		"zrevrangebylex":   func(c *command.Ctx, args [][]byte) { zrangeGeneric(c, args, 1, false, zrLex, dirReverse) },
		"zremrangebyrank":  func(c *command.Ctx, args [][]byte) { zremrangeGeneric(c, args, zrRank) },
		"zremrangebyscore": func(c *command.Ctx, args [][]byte) { zremrangeGeneric(c, args, zrScore) },
		"zremrangebylex":   func(c *command.Ctx, args [][]byte) { zremrangeGeneric(c, args, zrLex) },
		"zpopmin":          func(c *command.Ctx, args [][]byte) { zpopMinMax(c, args, false) },
		"zpopmax":          func(c *command.Ctx, args [][]byte) { zpopMinMax(c, args, true) },
		"zmpop":            func(c *command.Ctx, args [][]byte) { zmpopGeneric(c, args, 1, false) },
		"bzpopmin": func(c *command.Ctx, args [][]byte) {
			blockingZpop(c, args[1:len(args)-1], false, args[len(args)-1], -1, false)
		},
		"bzpopmax": func(c *command.Ctx, args [][]byte) {
			blockingZpop(c, args[1:len(args)-1], true, args[len(args)-1], -1, false)
		},
		"bzmpop":      func(c *command.Ctx, args [][]byte) { zmpopGeneric(c, args, 2, true) },
		"zrandmember": cmdZRandMember,
		"zunion":      func(c *command.Ctx, args [][]byte) { zsetOpGeneric(c, args, 1, false, zopUnion, false) },
		"zinter":      func(c *command.Ctx, args [][]byte) { zsetOpGeneric(c, args, 1, false, zopInter, false) },
		"zdiff":       func(c *command.Ctx, args [][]byte) { zsetOpGeneric(c, args, 1, false, zopDiff, false) },
		"zunionstore": func(c *command.Ctx, args [][]byte) { zsetOpGeneric(c, args, 2, true, zopUnion, false) },
		"zinterstore": func(c *command.Ctx, args [][]byte) { zsetOpGeneric(c, args, 2, true, zopInter, false) },
		"zdiffstore":  func(c *command.Ctx, args [][]byte) { zsetOpGeneric(c, args, 2, true, zopDiff, false) },
		"zintercard":  func(c *command.Ctx, args [][]byte) { zsetOpGeneric(c, args, 1, false, zopInter, true) },
		"zscan":       cmdZScan,
	}
}

// Limits reads the listpack thresholds from the configuration.
func Limits(c *command.Ctx) store.ZSetLimits {
	cfg := c.Config()
	return store.ZSetLimits{
		MaxListpackEntries: cfg.Int("zset-max-listpack-entries"),
		MaxListpackValue:   cfg.Int("zset-max-listpack-value"),
	}
}

// Read is lookupKeyRead + checkType: the set (nil when the key is
// missing), or ok=false after replying WRONGTYPE.
func Read(c *command.Ctx, key []byte) (*store.ZSet, bool) {
	return command.LookupTyped(c, c.DB(), key, false, store.TypeZSet, (*store.Entry).ZSet)
}

// zsetWrite is lookupKeyWrite + checkType.
func zsetWrite(c *command.Ctx, key []byte) (*store.ZSet, bool) {
	return command.LookupTyped(c, c.DB(), key, true, store.TypeZSet, (*store.Entry).ZSet)
}

// zsetChanged raises event for key in db, then removes key when its set
// became empty, with its "del" event, as Redis does.
func zsetChanged(c *command.Ctx, db command.DB, key []byte, z *store.ZSet, event string) {
	c.NotifyIn(db.DB, config.NotifyZset, event, key)
	if z.Len() == 0 {
		db.Delete(key)
		c.NotifyIn(db.DB, config.NotifyGeneric, "del", key)
	}
}

// zsetStore replaces dst with a set built from elems (sorted by score then
// member), raising event, or, when there are none, deletes it; it replies
// the element count.
func zsetStore(c *command.Ctx, dst []byte, elems []store.ZMember, event string) {
	if len(elems) == 0 {
		c.Int(0)
		if !c.DB().Delete(dst) {
			c.NoEffect() // nothing deleted: no change, as Redis
		} else {
			c.Notify(config.NotifyGeneric, "del", dst)
		}
		return
	}
	c.DB().SetValue(dst, store.BuildZSet(elems, Limits(c)))
	zsetSignalReady(c, dst)
	c.Int(int64(len(elems)))
	c.Notify(config.NotifyZset, event, dst)
}

// zItem is one element of a reply; member aliases the set it came from and
// is valid until the command returns.
type zItem struct {
	member []byte
	score  float64
}

// replyZItems writes elements, with their scores when withScores: a flat
// array in RESP2, an array of [member, score] pairs in RESP3.
func replyZItems(c *command.Ctx, items []zItem, withScores bool) {
	switch {
	case withScores && c.Proto == 2:
		c.Array(2 * len(items))
	default:
		c.Array(len(items))
	}
	for _, it := range items {
		if withScores && c.Proto > 2 {
			c.Array(2)
		}
		c.Bulk(it.member)
		if withScores {
			c.Double(it.score)
		}
	}
}

// sortedZMembers converts items in set order (ascending, or descending when
// reversed) into the ascending element list BuildZSet wants.
func sortedZMembers(items []zItem, reversed bool) []store.ZMember {
	elems := make([]store.ZMember, len(items))
	for i, it := range items {
		elems[i] = store.ZMember{Member: string(it.member), Score: it.score}
	}
	if reversed {
		slices.Reverse(elems)
	}
	return elems
}

// ---------------------------------------------------------------- ZADD / ZINCRBY

func cmdZAdd(c *command.Ctx, args [][]byte)    { AddGeneric(c, args, 0) }
func cmdZIncrBy(c *command.Ctx, args [][]byte) { AddGeneric(c, args, store.ZAddIncr) }

// AddGeneric is zaddGenericCommand: ZADD key [NX|XX] [GT|LT] [CH] [INCR]
// score member [score member ...], and ZINCRBY key increment member.
func AddGeneric(c *command.Ctx, args [][]byte, flags store.ZAddFlags) {
	ch := false
	idx := 2
options:
	for ; idx < len(args); idx++ {
		switch a := args[idx]; {
		case command.ArgIs(a, "nx"):
			flags |= store.ZAddNX
		case command.ArgIs(a, "xx"):
			flags |= store.ZAddXX
		case command.ArgIs(a, "ch"):
			ch = true
		case command.ArgIs(a, "incr"):
			flags |= store.ZAddIncr
		case command.ArgIs(a, "gt"):
			flags |= store.ZAddGT
		case command.ArgIs(a, "lt"):
			flags |= store.ZAddLT
		default:
			break options
		}
	}
	incr := flags&store.ZAddIncr != 0
	nx, xx := flags&store.ZAddNX != 0, flags&store.ZAddXX != 0
	gt, lt := flags&store.ZAddGT != 0, flags&store.ZAddLT != 0
	elements := len(args) - idx
	if elements%2 != 0 || elements == 0 {
		c.ErrSyntax()
		return
	}
	elements /= 2
	if nx && xx {
		c.Error("ERR XX and NX options at the same time are not compatible")
		return
	}
	if gt && nx || lt && nx || gt && lt {
		c.Error("ERR GT, LT, and/or NX options at the same time are not compatible")
		return
	}
	if incr && elements > 1 {
		c.Error("ERR INCR option supports a single increment-element pair")
		return
	}
	scores := make([]float64, elements)
	for j := range scores {
		var ok bool
		if scores[j], ok = ParseDoubleOrReply(c, args[idx+2*j], ""); !ok {
			return
		}
	}
	key := args[1]
	z, ok := zsetWrite(c, key)
	if !ok {
		return
	}
	lim := Limits(c)
	var added, updated, processed int64
	var score float64
	if z == nil {
		if xx {
			zaddReply(c, incr, ch, processed, added, updated, score)
			c.NoEffect()
			return
		}
		z = store.NewZSet(lim, len(args[idx+1]))
		c.DB().SetValue(key, z)
	}
	if elements > 1 {
		members := make([][]byte, elements)
		for j := range members {
			members[j] = args[idx+2*j+1]
		}
		z.Reserve(members, scores[:elements])
	}
	failed := false
	for j := 0; j < elements; j++ {
		res, newScore := z.Add(args[idx+2*j+1], scores[j], flags, lim)
		if res&store.ZAddNaN != 0 {
			// Only an increment can produce NaN, and INCR takes one pair:
			// nothing was changed.
			c.Error("ERR resulting score is not a number (NaN)")
			failed = true
			break
		}
		if res&store.ZAddAdded != 0 {
			added++
		}
		if res&store.ZAddUpdated != 0 {
			updated++
		}
		if res&store.ZAddNop == 0 {
			processed++
		}
		score = newScore
	}
	if !failed {
		zaddReply(c, incr, ch, processed, added, updated, score)
		c.Changed(added + updated) // as Redis counts; no change, no effect
	}
	if added+updated > 0 {
		zsetSignalReady(c, key)
		event := "zadd"
		if incr {
			event = "zincr"
		}
		c.Notify(config.NotifyZset, event, key)
	}
}

func zaddReply(c *command.Ctx, incr, ch bool, processed, added, updated int64, score float64) {
	switch {
	case incr && processed > 0:
		c.Double(score)
	case incr:
		c.Null()
	case ch:
		c.Int(added + updated)
	default:
		c.Int(added)
	}
}

// ---------------------------------------------------------------- simple commands

func cmdZRem(c *command.Ctx, args [][]byte) {
	key := args[1]
	z, ok := zsetWrite(c, key)
	if !ok {
		return
	}
	if z == nil {
		c.Int(0)
		c.NoEffect()
		return
	}
	deleted := int64(0)
	for _, m := range args[2:] {
		if z.Remove(m) {
			deleted++
		}
		if z.Len() == 0 {
			break
		}
	}
	if deleted > 0 {
		zsetChanged(c, c.DB(), key, z, "zrem")
	}
	c.Int(deleted)
	c.Changed(deleted) // nothing changed: not propagated, as Redis
}

func cmdZCard(c *command.Ctx, args [][]byte) {
	z, ok := Read(c, args[1])
	switch {
	case !ok:
	case z == nil:
		c.Int(0)
	default:
		c.Int(int64(z.Len()))
	}
}

func cmdZScore(c *command.Ctx, args [][]byte) {
	z, ok := Read(c, args[1])
	if !ok {
		return
	}
	if z == nil {
		c.Null()
		return
	}
	if s, found := z.Score(args[2]); found {
		c.Double(s)
	} else {
		c.Null()
	}
}

func cmdZMScore(c *command.Ctx, args [][]byte) {
	z, ok := Read(c, args[1])
	if !ok {
		return
	}
	c.Array(len(args) - 2)
	for _, m := range args[2:] {
		if z == nil {
			c.Null()
			continue
		}
		if s, found := z.Score(m); found {
			c.Double(s)
		} else {
			c.Null()
		}
	}
}

func zrankGeneric(c *command.Ctx, args [][]byte, reverse bool) {
	z, ok := Read(c, args[1])
	if !ok {
		return
	}
	if z == nil {
		c.Null()
		return
	}
	if r, found := z.Rank(args[2], reverse); found {
		c.Int(int64(r))
	} else {
		c.Null()
	}
}

func cmdZCount(c *command.Ctx, args [][]byte) {
	r, ok := parseScoreRange(args[2], args[3])
	if !ok {
		c.Error("ERR min or max is not a float")
		return
	}
	z, ok := Read(c, args[1])
	switch {
	case !ok:
	case z == nil:
		c.Int(0)
	default:
		c.Int(int64(z.CountByScore(&r)))
	}
}

func cmdZLexCount(c *command.Ctx, args [][]byte) {
	r, ok := parseLexRange(args[2], args[3])
	if !ok {
		c.Error("ERR min or max not valid string range item")
		return
	}
	z, ok := Read(c, args[1])
	switch {
	case !ok:
	case z == nil:
		c.Int(0)
	default:
		c.Int(int64(z.CountByLex(&r)))
	}
}

// ---------------------------------------------------------------- ranges

type zrangeType uint8

// zremrangeEvents are the keyspace events of ZREMRANGEBY*.
var zremrangeEvents = [...]string{zrRank: "zremrangebyrank", zrScore: "zremrangebyscore", zrLex: "zremrangebylex"}

const (
	zrAuto zrangeType = iota
	zrRank
	zrScore
	zrLex
)

type zrangeDir uint8

const (
	dirAuto zrangeDir = iota
	dirForward
	dirReverse
)

// clampRankRange turns start/end (negative from the end) into 0-based
// inclusive ranks within a set of length n; ok is false for an empty range.
func clampRankRange(start, end int64, n int) (int, int, bool) {
	llen := int64(n)
	if start < 0 {
		start += llen
	}
	if end < 0 {
		end += llen
	}
	if start < 0 {
		start = 0
	}
	if start > end || start >= llen {
		return 0, 0, false
	}
	if end >= llen {
		end = llen - 1
	}
	return int(start), int(end), true
}

// zrangeGeneric is zrangeGenericCommand: ZRANGE, ZRANGESTORE and the older
// Z[REV]RANGE[BYSCORE|BYLEX] forms. keyIdx is the source key's position.
func zrangeGeneric(c *command.Ctx, args [][]byte, keyIdx int, storing bool, rt zrangeType, dir zrangeDir) {
	minIdx, maxIdx := keyIdx+1, keyIdx+2
	withScores := false
	var offset, limit int64 = 0, -1
	for j := keyIdx + 3; j < len(args); j++ {
		left := len(args) - j - 1
		switch a := args[j]; {
		case !storing && command.ArgIs(a, "withscores"):
			withScores = true
		case command.ArgIs(a, "limit") && left >= 2:
			var ok bool
			if offset, ok = ParseLongOrReply(c, args[j+1]); !ok {
				return
			}
			if limit, ok = ParseLongOrReply(c, args[j+2]); !ok {
				return
			}
			j += 2
		case dir == dirAuto && command.ArgIs(a, "rev"):
			dir = dirReverse
		case rt == zrAuto && command.ArgIs(a, "bylex"):
			rt = zrLex
		case rt == zrAuto && command.ArgIs(a, "byscore"):
			rt = zrScore
		default:
			c.ErrSyntax()
			return
		}
	}
	if dir == dirAuto {
		dir = dirForward
	}
	if rt == zrAuto {
		rt = zrRank
	}
	if limit != -1 && rt == zrRank {
		c.Error("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
		return
	}
	if withScores && rt == zrLex {
		c.Error("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
		return
	}
	reverse := dir == dirReverse
	if reverse && rt != zrRank {
		minIdx, maxIdx = maxIdx, minIdx
	}
	var start, end int64
	var sr store.ScoreRange
	var lr store.LexRange
	switch rt {
	case zrRank:
		var ok bool
		if start, ok = ParseLongOrReply(c, args[minIdx]); !ok {
			return
		}
		if end, ok = ParseLongOrReply(c, args[maxIdx]); !ok {
			return
		}
	case zrScore:
		var ok bool
		if sr, ok = parseScoreRange(args[minIdx], args[maxIdx]); !ok {
			c.Error("ERR min or max is not a float")
			return
		}
	case zrLex:
		var ok bool
		if lr, ok = parseLexRange(args[minIdx], args[maxIdx]); !ok {
			c.Error("ERR min or max not valid string range item")
			return
		}
	}
	z, ok := Read(c, args[keyIdx])
	if !ok {
		return
	}
	var items []zItem
	if z != nil {
		collect := func(m []byte, s float64) bool {
			items = append(items, zItem{m, s})
			return true
		}
		switch rt {
		case zrRank:
			if from, to, ok := clampRankRange(start, end, z.Len()); ok {
				items = make([]zItem, 0, to-from+1)
				z.RangeByRank(from, to, reverse, collect)
			}
		case zrScore:
			// A negative offset makes Redis walk off the end: no result.
			if offset >= 0 {
				z.RangeByScore(&sr, int(min(offset, math.MaxInt32)), int(max(limit, math.MinInt32)), reverse, collect)
			}
		case zrLex:
			if offset >= 0 {
				z.RangeByLex(&lr, int(min(offset, math.MaxInt32)), int(max(limit, math.MinInt32)), reverse, collect)
			}
		}
	}
	if storing {
		zsetStore(c, args[1], sortedZMembers(items, reverse), "zrangestore")
		return
	}
	replyZItems(c, items, withScores)
}

// zremrangeGeneric is ZREMRANGEBYRANK / ZREMRANGEBYSCORE / ZREMRANGEBYLEX.
func zremrangeGeneric(c *command.Ctx, args [][]byte, rt zrangeType) {
	var start, end int64
	var sr store.ScoreRange
	var lr store.LexRange
	var ok bool
	switch rt {
	case zrRank:
		if start, ok = ParseLongOrReply(c, args[2]); !ok {
			return
		}
		if end, ok = ParseLongOrReply(c, args[3]); !ok {
			return
		}
	case zrScore:
		if sr, ok = parseScoreRange(args[2], args[3]); !ok {
			c.Error("ERR min or max is not a float")
			return
		}
	case zrLex:
		if lr, ok = parseLexRange(args[2], args[3]); !ok {
			c.Error("ERR min or max not valid string range item")
			return
		}
	}
	key := args[1]
	z, ok := zsetWrite(c, key)
	if !ok {
		return
	}
	if z == nil {
		c.Int(0)
		c.NoEffect()
		return
	}
	deleted := 0
	switch rt {
	case zrRank:
		from, to, ok := clampRankRange(start, end, z.Len())
		if !ok {
			c.Int(0)
			c.NoEffect()
			return
		}
		deleted = z.RemoveRangeByRank(from, to)
	case zrScore:
		deleted = z.RemoveRangeByScore(&sr)
	case zrLex:
		deleted = z.RemoveRangeByLex(&lr)
	}
	if deleted > 0 {
		zsetChanged(c, c.DB(), key, z, zremrangeEvents[rt])
	}
	c.Changed(int64(deleted))
	c.Int(int64(deleted))
}

// ---------------------------------------------------------------- pops

// zpopMinMax: ZPOPMIN / ZPOPMAX key [count].
func zpopMinMax(c *command.Ctx, args [][]byte, max bool) {
	if len(args) > 3 {
		c.ErrSyntax()
		return
	}
	count := int64(-1)
	if len(args) == 3 {
		var ok bool
		if count, ok = parsePositiveLongOrReply(c, args[2], ""); !ok {
			return
		}
	}
	nested := c.Proto > 2 && count != -1
	genericZpop(c, c.DB(), args[1:2], max, false, count, nested, false)
}

// genericZpop is genericZpopCommand: it pops from the first non-empty set
// among keys. count -1 means a single pop without COUNT. emitKey adds the
// key name (BZPOP*, ZMPOP); nested replies [member, score] pairs; nilIfNone
// replies a null array when no key exists (ZMPOP) instead of an empty one.
// It reports whether it popped anything. db is the client's database (a
// blocked client being served must not use c.DB()).
func genericZpop(c *command.Ctx, db command.DB, keys [][]byte, max, emitKey bool, count int64, nested, nilIfNone bool) bool {
	var z *store.ZSet
	var key []byte
	for _, k := range keys {
		e := command.LookupWrite(db, k)
		if e == nil {
			continue
		}
		if z = e.ZSet(); z == nil {
			c.ErrWrongType()
			return false
		}
		key = k
		break
	}
	if z == nil {
		if nilIfNone {
			c.NullArray()
		} else {
			c.Array(0)
		}
		return false
	}
	if count == 0 {
		c.Array(0)
		return false
	}
	if count == -1 {
		count = 1
	}
	n := int(min(count, int64(z.Len())))
	switch {
	case !nested && !emitKey:
		c.Array(2 * n)
	case nested && !emitKey:
		c.Array(n)
	case !nested && emitKey:
		c.Array(2*n + 1)
		c.Bulk(key)
	default:
		c.Array(2)
		c.Bulk(key)
		c.Array(n)
	}
	event := "zpopmin"
	if max {
		event = "zpopmax"
	}
	for i := 0; i < n; i++ {
		m, s := z.Pop(max)
		if i == 0 { // Redis notifies after the first pop, inside the reply
			c.NotifyIn(db.DB, config.NotifyZset, event, key)
		}
		if nested {
			c.Array(2)
		}
		c.Bulk(m)
		c.Double(s)
	}
	c.Dirty(int64(n)) // one change per element popped, as Redis
	if z.Len() == 0 {
		db.Delete(key)
		c.NotifyIn(db.DB, config.NotifyGeneric, "del", key)
	}
	return true
}

// zmpopArgs parses ZMPOP / BZMPOP's numkeys, keys, MIN|MAX and COUNT;
// numkeysIdx is numkeys' position.
func zmpopArgs(c *command.Ctx, args [][]byte, numkeysIdx int) (keys [][]byte, max bool, count int64, ok bool) {
	numkeys, ok := parseRangeLongOrReply(c, args[numkeysIdx], 1, math.MaxInt64, "numkeys should be greater than 0")
	if !ok {
		return nil, false, 0, false
	}
	if numkeys >= int64(len(args)-numkeysIdx-1) {
		c.ErrSyntax()
		return nil, false, 0, false
	}
	whereIdx := numkeysIdx + int(numkeys) + 1
	switch {
	case command.ArgIs(args[whereIdx], "min"):
	case command.ArgIs(args[whereIdx], "max"):
		max = true
	default:
		c.ErrSyntax()
		return nil, false, 0, false
	}
	count = -1
	for j := whereIdx + 1; j < len(args); j++ {
		more := len(args) - 1 - j
		if count == -1 && command.ArgIs(args[j], "count") && more > 0 {
			j++
			if count, ok = parseRangeLongOrReply(c, args[j], 1, math.MaxInt64, "count should be greater than 0"); !ok {
				return nil, false, 0, false
			}
			continue
		}
		c.ErrSyntax()
		return nil, false, 0, false
	}
	if count == -1 {
		count = 1
	}
	return args[numkeysIdx+1 : whereIdx], max, count, true
}

// zmpopGeneric: ZMPOP numkeys key [key ...] MIN|MAX [COUNT count], and
// BZMPOP timeout numkeys ... (block).
func zmpopGeneric(c *command.Ctx, args [][]byte, numkeysIdx int, block bool) {
	keys, max, count, ok := zmpopArgs(c, args, numkeysIdx)
	if !ok {
		return
	}
	if block {
		blockingZpop(c, keys, max, args[1], count, true)
		return
	}
	// ZMPOP is propagated as ZPOPMIN|ZPOPMAX key n of the set it pops.
	db := c.DB()
	popping := false
	for _, k := range keys {
		e := db.Lookup(k, store.LookupNoStats|store.LookupNoTouch)
		if e == nil {
			continue
		}
		if z := e.ZSet(); z != nil && z.Len() > 0 {
			zpopEffect(c, k, max, count, z.Len())
			popping = true
		}
		break
	}
	if !popping {
		c.NoEffect() // nothing to pop: nothing propagated, as in Redis
	}
	genericZpop(c, db, keys, max, true, count, true, true)
}

// blockingZpop is blockingGenericZpopCommand: BZPOPMIN / BZPOPMAX (count
// -1, flat [key, member, score] replies) and BZMPOP (nested replies). It
// pops from the first non-empty set among keys, or blocks until a writer
// makes one ready; a timeout replies a null array.
func blockingZpop(c *command.Ctx, keys [][]byte, max bool, timeoutArg []byte, count int64, nested bool) {
	timeout, ok := c.ParseBlockTimeout(timeoutArg)
	if !ok {
		return
	}
	db := c.DB()
	for _, k := range keys {
		e := command.LookupWrite(db, k)
		if e == nil {
			continue
		}
		z := e.ZSet()
		if z == nil {
			c.ErrWrongType()
			return
		}
		if z.Len() == 0 {
			continue
		}
		// Served at once: propagated as the non-blocking pop.
		zpopEffect(c, k, max, count, z.Len())
		genericZpop(c, db, [][]byte{k}, max, true, count, nested, nested)
		return
	}
	c.BlockOn(command.BlockSpec{
		Keys:    keys,
		Timeout: timeout,
		Serve: func(sc *command.BlockServe) command.ServeResult {
			e := command.LookupWrite(sc.C.DBOf(sc.DB), sc.Key)
			if e == nil {
				return command.ServeKeyExhausted
			}
			z := e.ZSet()
			if z == nil {
				return command.ServeSkipped
			}
			if z.Len() == 0 {
				return command.ServeKeyExhausted
			}
			zpopEffect(sc.C, sc.Key, max, count, z.Len())
			genericZpop(sc.C, sc.C.DBOf(sc.DB), [][]byte{sc.Key}, max, true, count, nested, nested)
			return command.ServeDone
		},
		OnTimeout: (*command.Ctx).NullArray,
	})
}

// ---------------------------------------------------------------- ZRANDMEMBER

// zrandMaxReplyBytes stops a ZRANDMEMBER with a huge negative count before
// its reply exhausts memory: the connection is closed after what was
// written, as Redis does when a client passes its output buffer limit.
const zrandMaxReplyBytes = 512 << 20

// zrandSubStrategyMul is ZRANDMEMBER_SUB_STRATEGY_MUL.
const zrandSubStrategyMul = 3

func cmdZRandMember(c *command.Ctx, args [][]byte) {
	if len(args) >= 3 {
		l, ok := parseRangeLongOrReply(c, args[2], -math.MaxInt64, math.MaxInt64, "")
		if !ok {
			return
		}
		withScores := false
		if len(args) > 4 || len(args) == 4 && !command.ArgIs(args[3], "withscores") {
			c.ErrSyntax()
			return
		} else if len(args) == 4 {
			withScores = true
			if l < -math.MaxInt64/2 || l > math.MaxInt64/2 {
				c.Error("ERR value is out of range")
				return
			}
		}
		zrandMemberWithCount(c, args[1], l, withScores)
		return
	}
	z, ok := Read(c, args[1])
	if !ok {
		return
	}
	if z == nil {
		c.Null()
		return
	}
	z.At(rand.IntN(z.Len()), func(m []byte, _ float64) { c.Bulk(m) })
}

func zrandMemberWithCount(c *command.Ctx, key []byte, l int64, withScores bool) {
	z, ok := Read(c, key)
	if !ok {
		return
	}
	if z == nil {
		c.Array(0)
		return
	}
	uniq := l >= 0
	count := uint64(l)
	if !uniq {
		count = uint64(-l)
	}
	if count == 0 {
		c.Array(0)
		return
	}
	size := uint64(z.Len())
	emit := func(m []byte, s float64) {
		if withScores && c.Proto > 2 {
			c.Array(2)
		}
		c.Bulk(m)
		if withScores {
			c.Double(s)
		}
	}
	header := func(n uint64) {
		if withScores && c.Proto == 2 {
			c.Array(int(2 * n))
		} else {
			c.Array(int(n))
		}
	}
	// Case 1: repetitions allowed (or a single element): independent picks.
	if !uniq || count == 1 {
		header(count)
		for ; count > 0; count-- {
			z.At(rand.IntN(int(size)), emit)
			if c.ReplyOverLimit() {
				return
			}
			if len(c.Out) > zrandMaxReplyBytes {
				c.Session().CloseAfterReply()
				return
			}
		}
		return
	}
	// Case 2: the whole set, walked from the highest score as Redis's
	// zuiNext does.
	if count >= size {
		header(size)
		z.Each(true, func(m []byte, s float64) bool { emit(m, s); return true })
		return
	}
	header(count)
	if count*zrandSubStrategyMul > size {
		// Case 3: drop random elements until count remain.
		items := make([]zItem, 0, size)
		z.Each(false, func(m []byte, s float64) bool { items = append(items, zItem{m, s}); return true })
		for uint64(len(items)) > count {
			i := rand.IntN(len(items))
			items[i] = items[len(items)-1]
			items = items[:len(items)-1]
		}
		for _, it := range items {
			emit(it.member, it.score)
		}
		return
	}
	// Case 4: a big set: random picks until count distinct ones. A listpack
	// is sampled in order, as lpRandomPairsUnique does.
	if z.IsListpack() {
		need := int(count)
		left := int(size)
		z.Each(false, func(m []byte, s float64) bool {
			if rand.IntN(left) < need {
				emit(m, s)
				need--
			}
			left--
			return need > 0
		})
		return
	}
	picked := make(map[int]struct{}, count)
	for uint64(len(picked)) < count {
		r := rand.IntN(int(size))
		if _, dup := picked[r]; dup {
			continue
		}
		picked[r] = struct{}{}
		z.At(r, emit)
	}
}

// ---------------------------------------------------------------- blocking

// zsetSignalReady tells clients blocked on key (BZPOPMIN, BZPOPMAX,
// BZMPOP) that elements arrived; they are served when the command is over.
func zsetSignalReady(c *command.Ctx, key []byte) { c.SignalKeyReady(key) }
