// Package set holds the set commands (Redis 7.0's "set" group).
package set

import (
	"bytes"
	"math"
	"sort"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/store"
)

// Handlers returns the set commands' handlers by command name.
func Handlers() map[string]command.Handler {
	return map[string]command.Handler{
		"sadd":        cmdSAdd,
		"srem":        cmdSRem,
		"scard":       cmdSCard,
		"sismember":   cmdSIsMember,
		"smismember":  cmdSMIsMember,
		"smembers":    cmdSMembers,
		"spop":        cmdSPop,
		"srandmember": cmdSRandMember,
		"smove":       cmdSMove,
		"sinter":      cmdSInter,
		"sintercard":  cmdSInterCard,
		"sinterstore": cmdSInterStore,
		"sunion":      cmdSUnion,
		"sunionstore": cmdSUnionStore,
		"sdiff":       cmdSDiff,
		"sdiffstore":  cmdSDiffStore,
		"sscan":       cmdSScan,
	}
}

// maxIntsetEntries returns set-max-intset-entries, read at every write.
func maxIntsetEntries(c *command.Ctx) int64 {
	return c.Config().Int("set-max-intset-entries")
}

// readSet is lookupKeyRead + checkType for sets: the set at key (nil when
// missing, counting a keyspace miss), or ok == false after WRONGTYPE.
func readSet(c *command.Ctx, key []byte) (*store.Set, bool) {
	return command.LookupTyped(c, c.DB(), key, false, store.TypeSet, (*store.Entry).Set)
}

// writeSet is lookupKeyWrite + checkType: no keyspace hit/miss counted.
func writeSet(c *command.Ctx, key []byte) (*store.Set, bool) {
	return command.LookupTyped(c, c.DB(), key, true, store.TypeSet, (*store.Entry).Set)
}

// replyEmptySet is Redis's shared.emptyset: *0 in RESP2, ~0 in RESP3.
func replyEmptySet(c *command.Ctx) { c.Set(0) }

// SADD key member [member ...]
func cmdSAdd(c *command.Ctx, args [][]byte) {
	s, ok := writeSet(c, args[1])
	if !ok {
		return
	}
	if s == nil {
		s = store.NewSetFor(args[2])
		c.DB().SetValue(args[1], s)
	}
	limit := maxIntsetEntries(c)
	added := 0
	for _, m := range args[2:] {
		if s.Add(m, limit) {
			added++
		}
	}
	if added > 0 {
		c.Notify(config.NotifySet, "sadd", args[1])
	}
	c.Int(int64(added))
	c.Changed(int64(added)) // nothing changed: not propagated, as Redis
}

// SREM key member [member ...]
func cmdSRem(c *command.Ctx, args [][]byte) {
	s, ok := writeSet(c, args[1])
	if !ok {
		return
	}
	removed, keyRemoved := 0, false
	if s != nil {
		for _, m := range args[2:] {
			if s.Remove(m) {
				removed++
				if s.Len() == 0 {
					c.DB().Delete(args[1])
					keyRemoved = true
					break
				}
			}
		}
	}
	if removed > 0 {
		c.Notify(config.NotifySet, "srem", args[1])
		if keyRemoved {
			c.Notify(config.NotifyGeneric, "del", args[1])
		}
	}
	c.Int(int64(removed))
	c.Changed(int64(removed)) // nothing changed: not propagated, as Redis
}

// SCARD key
func cmdSCard(c *command.Ctx, args [][]byte) {
	s, ok := readSet(c, args[1])
	if !ok {
		return
	}
	if s == nil {
		c.Int(0)
		return
	}
	c.Int(int64(s.Len()))
}

// SISMEMBER key member
func cmdSIsMember(c *command.Ctx, args [][]byte) {
	s, ok := readSet(c, args[1])
	if !ok {
		return
	}
	if s != nil && s.Contains(args[2]) {
		c.Int(1)
	} else {
		c.Int(0)
	}
}

// SMISMEMBER key member [member ...]: a missing key is an empty set.
func cmdSMIsMember(c *command.Ctx, args [][]byte) {
	s, ok := readSet(c, args[1])
	if !ok {
		return
	}
	c.Array(len(args) - 2)
	for _, m := range args[2:] {
		if s != nil && s.Contains(m) {
			c.Int(1)
		} else {
			c.Int(0)
		}
	}
}

// SMOVE source destination member
func cmdSMove(c *command.Ctx, args [][]byte) {
	db := c.DB()
	srcKey, dstKey, member := args[1], args[2], args[3]
	srcEntry := command.LookupWrite(db, srcKey)
	dstEntry := command.LookupWrite(db, dstKey)
	if srcEntry == nil {
		c.Int(0)
		c.NoEffect()
		return
	}
	if srcEntry.Type() != store.TypeSet || dstEntry != nil && dstEntry.Type() != store.TypeSet {
		c.ErrWrongType()
		return
	}
	src := srcEntry.Set()
	if string(srcKey) == string(dstKey) {
		c.NoEffect() // a no-op, as in Redis
		if src.Contains(member) {
			c.Int(1)
		} else {
			c.Int(0)
		}
		return
	}
	if !src.Remove(member) {
		c.NoEffect()
		c.Int(0)
		return
	}
	c.Notify(config.NotifySet, "srem", srcKey)
	if src.Len() == 0 {
		db.Delete(srcKey)
		c.Notify(config.NotifyGeneric, "del", srcKey)
	}
	var dst *store.Set
	if dstEntry != nil {
		dst = dstEntry.Set()
	} else {
		dst = store.NewSetFor(member)
		db.SetValue(dstKey, dst)
	}
	if !dst.Add(member, maxIntsetEntries(c)) {
		// The member was already in the destination: only the source
		// changed (WATCH on the destination is not touched, as in Redis).
		c.ReplaceEffect([]byte("SREM"), srcKey, member)
	} else {
		c.Dirty(2) // the source and the destination changed, as Redis counts
		c.Notify(config.NotifySet, "sadd", dstKey)
	}
	c.Int(1)
}

// SPOP key [count]
func cmdSPop(c *command.Ctx, args [][]byte) {
	if len(args) == 3 {
		setPopCount(c, args)
		return
	} else if len(args) > 3 {
		c.ErrSyntax()
		return
	}
	s, ok := writeSet(c, args[1])
	if !ok {
		return
	}
	if s == nil {
		c.Null()
		c.NoEffect()
		return
	}
	var buf [24]byte
	m := s.PopRandom(buf[:0])
	c.Notify(config.NotifySet, "spop", args[1])
	c.Bulk(m)
	c.ReplaceEffect(argSREM, args[1], bytes.Clone(m)) // the member chosen, as Redis
	if s.Len() == 0 {
		c.DB().Delete(args[1])
		c.Notify(config.NotifyGeneric, "del", args[1])
	}
}

// parsePositiveLong is Redis's getPositiveLongFromObjectOrReply: every
// failure, not a number included, answers msg ("value is out of range,
// must be positive" when none is given).
func parsePositiveLong(c *command.Ctx, b []byte, msg string) (int64, bool) {
	if msg == "" {
		msg = "ERR value is out of range, must be positive"
	}
	n, ok := command.ParseInt64(b)
	if !ok || n < 0 {
		c.Error(msg)
		return 0, false
	}
	return n, true
}

// setPopCount is Redis's spopWithCountCommand.
func setPopCount(c *command.Ctx, args [][]byte) {
	count, ok := parsePositiveLong(c, args[2], "")
	if !ok {
		return
	}
	s, ok := writeSet(c, args[1])
	if !ok {
		return
	}
	if s == nil || count == 0 {
		replyEmptySet(c)
		c.NoEffect()
		return
	}
	c.Notify(config.NotifySet, "spop", args[1])
	if count >= int64(s.Len()) {
		// Redis answers with SUNION of the key (a second, counted lookup)
		// and deletes it, propagated as DEL.
		setUnionDiff(c, args[1:2], nil, false)
		c.Dirty(int64(s.Len())) // every member popped
		c.DB().Delete(args[1])
		c.Notify(config.NotifyGeneric, "del", args[1])
		c.ReplaceEffect(argDEL, args[1])
		return
	}
	c.Set(int(count))
	c.Dirty(count)
	// One SREM per member popped, as Redis 7.0 propagates them.
	s.PopMany(int(count), maxIntsetEntries(c), func(m []byte) {
		c.Bulk(m)
		c.ReplaceEffect(argSREM, args[1], bytes.Clone(m))
	})
}

// SRANDMEMBER key [count]
func cmdSRandMember(c *command.Ctx, args [][]byte) {
	if len(args) == 3 {
		setRandMemberCount(c, args)
		return
	} else if len(args) > 3 {
		c.ErrSyntax()
		return
	}
	s, ok := readSet(c, args[1])
	if !ok {
		return
	}
	if s == nil {
		c.Null()
		return
	}
	var buf [24]byte
	c.Bulk(s.RandomMember(buf[:0]))
}

// setRandMemberCount is Redis's srandmemberWithCountCommand: a negative
// count samples with repetition, a positive one returns distinct members
// (the whole set when count >= SCARD).
func setRandMemberCount(c *command.Ctx, args [][]byte) {
	l, ok := command.ParseInt64(args[2])
	if !ok {
		c.ErrNotInteger()
		return
	}
	if l < -math.MaxInt64 {
		c.Error("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
		return
	}
	s, ok := readSet(c, args[1])
	if !ok {
		return
	}
	if s == nil || l == 0 {
		c.Array(0)
		return
	}
	size := s.Len()
	if l < 0 || l == 1 {
		count := l
		if l < 0 {
			count = -l
		}
		if !command.RandomReplyFits(c, count, s.DataBytes()/size, false) {
			return
		}
		c.Array(int(count))
		s.RandomMembers(int(count), func(m []byte) bool {
			c.Bulk(m)
			return !c.ReplyOverLimit()
		})
		return
	}
	if l >= int64(size) {
		c.Array(size)
		for m := range s.All() {
			c.Bulk(m)
		}
		return
	}
	c.Array(int(l))
	s.RandomDistinctMembers(int(l), func(m []byte) { c.Bulk(m) })
}

// SMEMBERS key is SINTER of one key in Redis.
func cmdSMembers(c *command.Ctx, args [][]byte) { setInter(c, args[1:2], nil, false, 0) }

// SINTER key [key ...]
func cmdSInter(c *command.Ctx, args [][]byte) { setInter(c, args[1:], nil, false, 0) }

// SINTERSTORE destination key [key ...]
func cmdSInterStore(c *command.Ctx, args [][]byte) { setInter(c, args[2:], args[1], false, 0) }

// SINTERCARD numkeys key [key ...] [LIMIT limit]
func cmdSInterCard(c *command.Ctx, args [][]byte) {
	numKeys, ok := command.ParseInt64(args[1])
	if !ok || numKeys < 1 {
		c.Error("ERR numkeys should be greater than 0")
		return
	}
	if numKeys > int64(len(args)-2) {
		c.Error("ERR Number of keys can't be greater than number of args")
		return
	}
	var limit int64
	for j := 2 + int(numKeys); j < len(args); j++ {
		if command.ArgIs(args[j], "limit") && j+1 < len(args) {
			j++
			if limit, ok = parsePositiveLong(c, args[j], "ERR LIMIT can't be negative"); !ok {
				return
			}
		} else {
			c.ErrSyntax()
			return
		}
	}
	setInter(c, args[2:2+numKeys], nil, true, limit)
}

// lookupSets looks up keys for reading (counting hits and misses) in order,
// stopping at the first key of another type, which is answered WRONGTYPE.
// A missing key gives a nil set.
func lookupSets(c *command.Ctx, keys [][]byte) ([]*store.Set, bool) {
	sets := make([]*store.Set, len(keys))
	for i, k := range keys {
		s, ok := readSet(c, k)
		if !ok {
			return nil, false
		}
		sets[i] = s
	}
	return sets, true
}

// storeSetResult stores result under dst (replacing whatever was there and
// its TTL) and replies its size, raising event, or deletes dst and replies
// 0 when empty.
func storeSetResult(c *command.Ctx, dst []byte, result *store.Set, event string) {
	if result.Len() > 0 {
		c.DB().SetValue(dst, result)
		c.Int(int64(result.Len()))
		c.Notify(config.NotifySet, event, dst)
		return
	}
	c.Int(0)
	deleteSetDestination(c, dst)
}

// deleteSetDestination deletes a store command's destination when the
// result is empty, with its "del" event if it existed.
func deleteSetDestination(c *command.Ctx, dst []byte) {
	if !c.DB().Delete(dst) {
		c.NoEffect() // nothing stored, nothing deleted: no change, as Redis
		return
	}
	c.Notify(config.NotifyGeneric, "del", dst)
}

// setInter is Redis's sinterGenericCommand: the members of the smallest
// set found in every other set, replied (a set), stored under dst, or
// counted (SINTERCARD, stopping at limit when non-zero).
func setInter(c *command.Ctx, keys [][]byte, dst []byte, cardOnly bool, limit int64) {
	sets, ok := lookupSets(c, keys)
	if !ok {
		return
	}
	for _, s := range sets {
		if s == nil { // a missing key is an empty set: so is the result
			switch {
			case dst != nil:
				deleteSetDestination(c, dst)
				c.Int(0)
			case cardOnly:
				c.Int(0)
			default:
				replyEmptySet(c)
			}
			return
		}
	}
	sort.SliceStable(sets, func(i, j int) bool { return sets[i].Len() < sets[j].Len() })
	var (
		result *store.Set
		found  memberList
		card   int64
		limit2 = maxIntsetEntries(c)
	)
	if dst != nil {
		result = store.NewIntSet()
	}
	for m := range sets[0].All() {
		in := true
		for _, o := range sets[1:] {
			if o != sets[0] && !o.Contains(m) {
				in = false
				break
			}
		}
		if !in {
			continue
		}
		switch {
		case cardOnly:
			card++
			if limit != 0 && card >= limit {
				c.Int(card)
				return
			}
		case dst != nil:
			result.Add(m, limit2)
		default:
			found.add(m)
		}
	}
	switch {
	case cardOnly:
		c.Int(card)
	case dst != nil:
		storeSetResult(c, dst, result, "sinterstore")
	default:
		c.Set(len(found.ends))
		start := 0
		for _, end := range found.ends {
			c.Bulk(found.buf[start:end])
			start = end
		}
	}
}

// SUNION key [key ...]
func cmdSUnion(c *command.Ctx, args [][]byte) { setUnionDiff(c, args[1:], nil, false) }

// SUNIONSTORE destination key [key ...]
func cmdSUnionStore(c *command.Ctx, args [][]byte) { setUnionDiff(c, args[2:], args[1], false) }

// SDIFF key [key ...]
func cmdSDiff(c *command.Ctx, args [][]byte) { setUnionDiff(c, args[1:], nil, true) }

// SDIFFSTORE destination key [key ...]
func cmdSDiffStore(c *command.Ctx, args [][]byte) { setUnionDiff(c, args[2:], args[1], true) }

// setUnionDiff is Redis's sunionDiffGenericCommand. The result is built as
// Redis builds it, into a set that starts as an intset, with the same
// choice between its two difference algorithms, so that the stored
// result's encoding (and an intset result's order) match.
func setUnionDiff(c *command.Ctx, keys [][]byte, dst []byte, diff bool) {
	sets, ok := lookupSets(c, keys)
	if !ok {
		return
	}
	sameSet := false
	for j := 1; j < len(sets); j++ {
		if sets[j] != nil && sets[j] == sets[0] {
			sameSet = true
		}
	}
	limit := maxIntsetEntries(c)
	result := store.NewIntSet()
	switch {
	case !diff:
		for _, s := range sets {
			if s == nil {
				continue
			}
			for m := range s.All() {
				result.Add(m, limit)
			}
		}
	case sameSet || sets[0] == nil:
		// The difference with the first set itself is empty.
	default:
		// Algorithm 1 costs |first| per set, algorithm 2 the total size;
		// algorithm 1 gets a 2x advantage for its better constants.
		var work1, work2 int64
		for _, s := range sets {
			if s != nil {
				work1 += int64(sets[0].Len())
				work2 += int64(s.Len())
			}
		}
		if work1/2 <= work2 {
			// Subtract the biggest sets first: more likely to hit.
			rest := sets[1:]
			sort.SliceStable(rest, func(i, j int) bool { return setLen(rest[i]) > setLen(rest[j]) })
			for m := range sets[0].All() {
				in := false
				for _, o := range rest {
					if o != nil && o.Contains(m) {
						in = true
						break
					}
				}
				if !in {
					result.Add(m, limit)
				}
			}
		} else {
			for j, s := range sets {
				if s == nil {
					continue
				}
				for m := range s.All() {
					if j == 0 {
						result.Add(m, limit)
					} else {
						result.Remove(m)
					}
				}
				if result.Len() == 0 {
					break
				}
			}
		}
	}
	if dst != nil {
		event := "sunionstore"
		if diff {
			event = "sdiffstore"
		}
		storeSetResult(c, dst, result, event)
		return
	}
	c.Set(result.Len())
	for m := range result.All() {
		c.Bulk(m)
	}
}

func setLen(s *store.Set) int {
	if s == nil {
		return 0
	}
	return s.Len()
}

// memberList collects the members of an SINTER reply, copied into one
// buffer (intset members are formatted into a reused buffer).
type memberList struct {
	buf  []byte
	ends []int
}

func (l *memberList) add(b []byte) {
	l.buf = append(l.buf, b...)
	l.ends = append(l.ends, len(l.buf))
}

// The command words of the set commands' rewritten effects (Redis's shared
// objects). Read-only.
var (
	argSREM = []byte("SREM")
	argDEL  = []byte("DEL")
)
