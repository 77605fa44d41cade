package list

import (
	"bytes"
	"time"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/resp"

	"github.com/shoal-db/shoal/store"
)

// List commands, Redis 7.0's t_list.c: replies, error texts and the order
// in which arguments and keys are checked are Redis's. The blocking
// variants use the framework of blocking.go.

func Handlers() map[string]command.Handler {
	return map[string]command.Handler{
		"lpush":      func(c *command.Ctx, args [][]byte) { listPush(c, args, true, false) },
		"rpush":      func(c *command.Ctx, args [][]byte) { listPush(c, args, false, false) },
		"lpushx":     func(c *command.Ctx, args [][]byte) { listPush(c, args, true, true) },
		"rpushx":     func(c *command.Ctx, args [][]byte) { listPush(c, args, false, true) },
		"linsert":    cmdLInsert,
		"llen":       cmdLLen,
		"lindex":     cmdLIndex,
		"lset":       cmdLSet,
		"lpop":       func(c *command.Ctx, args [][]byte) { listPop(c, args, true) },
		"rpop":       func(c *command.Ctx, args [][]byte) { listPop(c, args, false) },
		"lmpop":      func(c *command.Ctx, args [][]byte) { listMPop(c, args, 1, false) },
		"lrange":     cmdLRange,
		"ltrim":      cmdLTrim,
		"lpos":       cmdLPos,
		"lrem":       cmdLRem,
		"lmove":      cmdLMove,
		"rpoplpush":  func(c *command.Ctx, args [][]byte) { listMove(c, args[1], args[2], false, true) },
		"blpop":      func(c *command.Ctx, args [][]byte) { listBPop(c, args, true) },
		"brpop":      func(c *command.Ctx, args [][]byte) { listBPop(c, args, false) },
		"blmove":     cmdBLMove,
		"brpoplpush": cmdBRPopLPush,
		"blmpop":     func(c *command.Ctx, args [][]byte) { listMPop(c, args, 2, true) },
	}
}

const (
	msgListIndexRange    = "ERR index out of range"
	msgListCountPositive = "ERR value is out of range, must be positive"
)

// lookupList finds key for a write (no keyspace hit/miss counted, as Redis's
// lookupKeyWrite). It replies WRONGTYPE and returns ok=false if the key
// holds another type; l is nil if the key is missing.
func lookupList(c *command.Ctx, db command.DB, key []byte) (*store.List, bool) {
	return command.LookupTyped(c, db, key, true, store.TypeList, (*store.Entry).List)
}

// readList is lookupList for reads: hits and misses are counted.
func readList(c *command.Ctx, key []byte) (*store.List, bool) {
	return command.LookupTyped(c, c.DB(), key, false, store.TypeList, (*store.Entry).List)
}

// newList creates an empty list for key with the configured node size.
func newList(c *command.Ctx, db command.DB, key []byte) *store.List {
	l := store.NewList(c.Config().Int("list-max-listpack-size"))
	db.SetValue(key, l)
	return l
}

// listArgLong is getLongFromObjectOrReply.
func listArgLong(c *command.Ctx, arg []byte) (int64, bool) {
	n, ok := command.ParseInt64(arg)
	if !ok {
		c.ErrNotInteger()
	}
	return n, ok
}

// listArgRange is getRangeLongFromObjectOrReply with a message: a value
// that is not an integer, or outside [lo, hi], gets msg.
func listArgRange(c *command.Ctx, arg []byte, lo, hi int64, msg string) (int64, bool) {
	n, ok := command.ParseInt64(arg)
	if !ok || n < lo || n > hi {
		c.Error(msg)
		return 0, false
	}
	return n, true
}

// listArgEnd parses LEFT / RIGHT: true for LEFT (the head).
func listArgEnd(c *command.Ctx, arg []byte) (head, ok bool) {
	switch {
	case command.ArgEquals(arg, "left"):
		return true, true
	case command.ArgEquals(arg, "right"):
		return false, true
	}
	c.ErrSyntax()
	return false, false
}

// ---------------------------------------------------------------- push, insert, set

// listPush is LPUSH / RPUSH / LPUSHX / RPUSHX.
func listPush(c *command.Ctx, args [][]byte, head, onlyExisting bool) {
	db, key := c.DB(), args[1]
	l, ok := lookupList(c, db, key)
	if !ok {
		return
	}
	if l == nil {
		if onlyExisting {
			c.Int(0)
			c.NoEffect()
			return
		}
		l = newList(c, db, key)
	}
	for _, v := range args[2:] {
		l.Push(v, head)
	}
	c.Dirty(int64(len(args) - 2)) // one change per element pushed, as Redis
	c.Int(int64(l.Len()))
	c.SignalKeyReady(key)
	c.Notify(config.NotifyList, pushEvent(head), key)
}

// LINSERT key BEFORE|AFTER pivot element
func cmdLInsert(c *command.Ctx, args [][]byte) {
	var after bool
	switch {
	case command.ArgEquals(args[2], "after"):
		after = true
	case command.ArgEquals(args[2], "before"):
	default:
		c.ErrSyntax()
		return
	}
	l, ok := lookupList(c, c.DB(), args[1])
	if !ok {
		return
	}
	if l == nil {
		c.Int(0)
		return
	}
	if !l.Insert(args[3], args[4], after) {
		c.Int(-1)
		return
	}
	c.Notify(config.NotifyList, "linsert", args[1])
	c.Int(int64(l.Len()))
}

// LLEN key
func cmdLLen(c *command.Ctx, args [][]byte) {
	l, ok := readList(c, args[1])
	if !ok {
		return
	}
	if l == nil {
		c.Int(0)
		return
	}
	c.Int(int64(l.Len()))
}

// LINDEX key index: the key is looked up before the index is parsed.
func cmdLIndex(c *command.Ctx, args [][]byte) {
	l, ok := readList(c, args[1])
	if !ok {
		return
	}
	if l == nil {
		c.Null()
		return
	}
	i, ok := listArgLong(c, args[2])
	if !ok {
		return
	}
	if v, found := l.Index(i); found {
		c.Bulk(v)
	} else {
		c.Null()
	}
}

// LSET key index element
func cmdLSet(c *command.Ctx, args [][]byte) {
	db := c.DB()
	l, ok := lookupList(c, db, args[1])
	if !ok {
		return
	}
	if l == nil {
		c.Error(resp.MsgNoSuchKey)
		return
	}
	i, ok := listArgLong(c, args[2])
	if !ok {
		return
	}
	if !l.Set(i, args[3]) {
		c.Error(msgListIndexRange)
		return
	}
	c.OK()
	c.Notify(config.NotifyList, "lset", args[1]) // after the reply, as Redis
}

// ---------------------------------------------------------------- pops

// listChanged raises the list event of a change to key ("" for none), then
// removes the key if the list is left empty, with its "del" event, as
// Redis does.
func listChanged(c *command.Ctx, db command.DB, key []byte, l *store.List, event string) {
	if event != "" {
		c.NotifyIn(db.DB, config.NotifyList, event, key)
	}
	if l.Len() == 0 {
		db.Delete(key)
		c.NotifyIn(db.DB, config.NotifyGeneric, "del", key)
	}
}

// popEvent and pushEvent name the events of the two ends.
func popEvent(head bool) string {
	if head {
		return "lpop"
	}
	return "rpop"
}

func pushEvent(head bool) string {
	if head {
		return "lpush"
	}
	return "rpush"
}

// listRangeReply is addListRangeReply: the elements start..end (Redis
// indexes, negative from the tail), reversed if reverse.
func listRangeReply(c *command.Ctx, l *store.List, start, end int64, reverse bool) {
	n := int64(l.Len())
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	if start < 0 {
		start = 0
	}
	if start > end || start >= n {
		c.Array(0)
		return
	}
	if end >= n {
		end = n - 1
	}
	c.Array(int(end - start + 1))
	l.Range(int(start), int(end), reverse, func(v []byte) bool {
		c.Bulk(v)
		return true
	})
}

// listPopRange replies with (and removes) up to count elements from one end,
// head first for the head, tail first for the tail.
func listPopRange(c *command.Ctx, db command.DB, key []byte, l *store.List, head bool, count int64) {
	n := int64(l.Len())
	take := min(count, n)
	if head {
		listRangeReply(c, l, 0, take-1, false)
		l.DelRange(0, int(take))
	} else {
		listRangeReply(c, l, -take, -1, true)
		l.DelRange(int(n-take), int(take))
	}
	c.Dirty(take) // one change per element popped, as Redis
	listChanged(c, db, key, l, popEvent(head))
}

// listPopRangeWithKey is listPopRangeAndReplyWithKey: [key, [elements]].
func listPopRangeWithKey(c *command.Ctx, db command.DB, key []byte, l *store.List, head bool, count int64) {
	c.Array(2)
	c.Bulk(key)
	listPopRange(c, db, key, l, head, count)
}

// popOne pops one element and replies [key, element] (BLPOP / BRPOP).
func listPopOneWithKey(c *command.Ctx, db command.DB, key []byte, l *store.List, head bool) {
	v := l.Pop(head)
	c.Array(2)
	c.Bulk(key)
	c.Bulk(v)
	listChanged(c, db, key, l, popEvent(head))
}

// listPop is LPOP / RPOP key [count].
func listPop(c *command.Ctx, args [][]byte, head bool) {
	if len(args) > 3 {
		c.ErrArity(listCmdName(args))
		return
	}
	hasCount := len(args) == 3
	var count int64
	if hasCount {
		var ok bool
		if count, ok = listArgRange(c, args[2], 0, 1<<63-1, msgListCountPositive); !ok {
			return
		}
	}
	db, key := c.DB(), args[1]
	l, ok := lookupList(c, db, key)
	if !ok {
		return
	}
	if l == nil {
		if hasCount {
			c.NullArray()
		} else {
			c.Null()
		}
		c.NoEffect()
		return
	}
	switch {
	case hasCount && count == 0:
		c.Array(0)
		c.NoEffect()
	case !hasCount:
		c.Bulk(l.Pop(head))
		listChanged(c, db, key, l, popEvent(head))
	default:
		listPopRange(c, db, key, l, head, count)
	}
}

// listCmdName is the lower-case command name for arity errors.
func listCmdName(args [][]byte) string { return string(bytes.ToLower(args[0])) }

// listMPop is LMPOP numkeys key... LEFT|RIGHT [COUNT count] (numkeysAt 1)
// and BLMPOP timeout numkeys ... (numkeysAt 2, blocking).
func listMPop(c *command.Ctx, args [][]byte, numkeysAt int, blocking bool) {
	numkeys, ok := listArgRange(c, args[numkeysAt], 1, 1<<63-1, "ERR numkeys should be greater than 0")
	if !ok {
		return
	}
	// where comes right after the keys; the dispatcher locked every key
	// that exists within args, and this check makes sure all of them do.
	if numkeys >= int64(len(args)) || numkeysAt+int(numkeys)+1 >= len(args) {
		c.ErrSyntax()
		return
	}
	whereAt := numkeysAt + int(numkeys) + 1
	head, ok := listArgEnd(c, args[whereAt])
	if !ok {
		return
	}
	count := int64(-1)
	for j := whereAt + 1; j < len(args); j++ {
		if count == -1 && command.ArgEquals(args[j], "count") && j+1 < len(args) {
			j++
			if count, ok = listArgRange(c, args[j], 1, 1<<63-1, "ERR count should be greater than 0"); !ok {
				return
			}
			continue
		}
		c.ErrSyntax()
		return
	}
	if count == -1 {
		count = 1
	}
	keys := args[numkeysAt+1 : whereAt]
	if blocking {
		listBlockingPop(c, keys, head, args[1], count)
		return
	}
	db := c.DB()
	for _, key := range keys {
		l, ok := lookupList(c, db, key)
		if !ok {
			return
		}
		if l == nil || l.Len() == 0 {
			continue
		}
		listPopEffect(c, key, head, count, l.Len()) // LMPOP is propagated as [LR]POP key n
		listPopRangeWithKey(c, db, key, l, head, count)
		return
	}
	c.NoEffect() // nothing to pop: nothing propagated, as in Redis
	c.NullArray()
}

// ---------------------------------------------------------------- range, trim, search, remove

// LRANGE key start stop
func cmdLRange(c *command.Ctx, args [][]byte) {
	start, ok := listArgLong(c, args[2])
	if !ok {
		return
	}
	end, ok := listArgLong(c, args[3])
	if !ok {
		return
	}
	l, ok := readList(c, args[1])
	if !ok {
		return
	}
	if l == nil {
		c.Array(0)
		return
	}
	listRangeReply(c, l, start, end, false)
}

// LTRIM key start stop
func cmdLTrim(c *command.Ctx, args [][]byte) {
	start, ok := listArgLong(c, args[2])
	if !ok {
		return
	}
	end, ok := listArgLong(c, args[3])
	if !ok {
		return
	}
	db, key := c.DB(), args[1]
	l, ok := lookupList(c, db, key)
	if !ok {
		return
	}
	if l == nil {
		c.OK()
		c.NoEffect()
		return
	}
	n := int64(l.Len())
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	if start < 0 {
		start = 0
	}
	var ltrim, rtrim int64
	if start > end || start >= n {
		ltrim, rtrim = n, 0
	} else {
		if end >= n {
			end = n - 1
		}
		ltrim, rtrim = start, n-end-1
	}
	l.DelRange(0, int(ltrim))
	l.DelRange(l.Len()-int(rtrim), int(rtrim))
	listChanged(c, db, key, l, "ltrim")
	c.Changed(ltrim + rtrim)
	c.OK()
}

// LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]
func cmdLPos(c *command.Ctx, args [][]byte) {
	rank, count, maxlen := int64(1), int64(-1), int64(0) // count -1: not given
	for j := 3; j < len(args); j++ {
		more := j+1 < len(args)
		var ok bool
		switch {
		case command.ArgEquals(args[j], "rank") && more:
			j++
			if rank, ok = listArgLong(c, args[j]); !ok {
				return
			}
			if rank == 0 {
				c.Error("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")
				return
			}
		case command.ArgEquals(args[j], "count") && more:
			j++
			if count, ok = listArgRange(c, args[j], 0, 1<<63-1, "ERR COUNT can't be negative"); !ok {
				return
			}
		case command.ArgEquals(args[j], "maxlen") && more:
			j++
			if maxlen, ok = listArgRange(c, args[j], 0, 1<<63-1, "ERR MAXLEN can't be negative"); !ok {
				return
			}
		default:
			c.ErrSyntax()
			return
		}
	}
	fromTail := false
	if rank < 0 {
		rank = -rank // -MinInt64 wraps to itself, as in C: every match then qualifies
		fromTail = true
	}
	l, ok := readList(c, args[1])
	if !ok {
		return
	}
	if l == nil {
		if count != -1 {
			c.Array(0)
		} else {
			c.Null()
		}
		return
	}
	ele := args[2]
	n := int64(l.Len())
	var index, matches int64
	matchIndex := int64(-1)
	var found []int64
	if n > 0 {
		l.Range(0, int(n-1), fromTail, func(v []byte) bool {
			if maxlen != 0 && index >= maxlen {
				return false
			}
			if bytes.Equal(v, ele) {
				matches++
				if fromTail {
					matchIndex = n - index - 1
				} else {
					matchIndex = index
				}
				if matches >= rank {
					if count == -1 {
						return false
					}
					found = append(found, matchIndex)
					if count != 0 && matches-rank+1 >= count {
						return false
					}
				}
			}
			index++
			matchIndex = -1
			return true
		})
	}
	if count != -1 {
		c.Array(len(found))
		for _, i := range found {
			c.Int(i)
		}
		return
	}
	if matchIndex != -1 {
		c.Int(matchIndex)
	} else {
		c.Null()
	}
}

// LREM key count element
func cmdLRem(c *command.Ctx, args [][]byte) {
	count, ok := listArgLong(c, args[2])
	if !ok {
		return
	}
	db, key := c.DB(), args[1]
	l, ok := lookupList(c, db, key)
	if !ok {
		return
	}
	if l == nil {
		c.Int(0)
		c.NoEffect()
		return
	}
	removed := l.Remove(args[3], count)
	event := ""
	if removed > 0 {
		event = "lrem"
	}
	listChanged(c, db, key, l, event)
	c.Changed(removed)
	c.Int(removed)
}

// ---------------------------------------------------------------- moves

// LMOVE source destination LEFT|RIGHT LEFT|RIGHT
func cmdLMove(c *command.Ctx, args [][]byte) {
	from, ok := listArgEnd(c, args[3])
	if !ok {
		return
	}
	to, ok := listArgEnd(c, args[4])
	if !ok {
		return
	}
	listMove(c, args[1], args[2], from, to)
}

// listMove is lmoveGenericCommand: pop from src's end, push onto dst's end,
// reply with the element (null if src is missing).
func listMove(c *command.Ctx, src, dst []byte, fromHead, toHead bool) {
	db := c.DB()
	l, ok := lookupList(c, db, src)
	if !ok {
		return
	}
	if l == nil || l.Len() == 0 {
		c.Null()
		c.NoEffect()
		return
	}
	if listMoveElement(c, db, src, l, dst, fromHead, toHead) {
		c.SignalKeyReady(dst)
	}
}

// listMoveElement moves one element from list l (at src) to dst and replies
// with it; if dst holds another type it replies WRONGTYPE and changes
// nothing. It reports whether it moved.
func listMoveElement(c *command.Ctx, db command.DB, src []byte, l *store.List, dst []byte, fromHead, toHead bool) bool {
	dl, ok := lookupList(c, db, dst)
	if !ok {
		return false
	}
	v := l.Pop(fromHead)
	if dl == nil {
		dl = newList(c, db, dst)
	}
	dl.Push(v, toHead)
	c.NotifyIn(db.DB, config.NotifyList, pushEvent(toHead), dst)
	c.Bulk(v)
	listChanged(c, db, src, l, popEvent(fromHead)) // src == dst: not empty
	return true
}

// ---------------------------------------------------------------- blocking variants

// listBPop is BLPOP / BRPOP key [key ...] timeout.
func listBPop(c *command.Ctx, args [][]byte, head bool) {
	listBlockingPop(c, args[1:len(args)-1], head, args[len(args)-1], -1)
}

// listBlockingPop is blockingPopGenericCommand: pop from the first non-empty
// list among keys, or block. count -1 is BLPOP/BRPOP's [key, element]
// reply; count > 0 is BLMPOP's [key, [elements]].
func listBlockingPop(c *command.Ctx, keys [][]byte, head bool, timeoutArg []byte, count int64) {
	timeout, ok := c.ParseBlockTimeout(timeoutArg)
	if !ok {
		return
	}
	db := c.DB()
	for _, key := range keys {
		l, ok := lookupList(c, db, key)
		if !ok {
			return
		}
		if l == nil || l.Len() == 0 {
			continue
		}
		// Served at once: propagated as the non-blocking pop.
		listPopEffect(c, key, head, count, l.Len())
		if count == -1 {
			listPopOneWithKey(c, db, key, l, head)
		} else {
			listPopRangeWithKey(c, db, key, l, head, count)
		}
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
			if e.Type() != store.TypeList {
				return command.ServeSkipped
			}
			l := e.List()
			if l.Len() == 0 {
				return command.ServeKeyExhausted
			}
			listPopEffect(sc.C, sc.Key, head, count, l.Len())
			if count == -1 {
				listPopOneWithKey(sc.C, sc.C.DBOf(sc.DB), sc.Key, l, head)
			} else {
				listPopRangeWithKey(sc.C, sc.C.DBOf(sc.DB), sc.Key, l, head, count)
			}
			return command.ServeDone
		},
		OnTimeout: (*command.Ctx).NullArray,
	})
}

// BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout
func cmdBLMove(c *command.Ctx, args [][]byte) {
	from, ok := listArgEnd(c, args[3])
	if !ok {
		return
	}
	to, ok := listArgEnd(c, args[4])
	if !ok {
		return
	}
	timeout, ok := c.ParseBlockTimeout(args[5])
	if !ok {
		return
	}
	listBlockingMove(c, args[1], args[2], from, to, timeout, false)
}

// BRPOPLPUSH source destination timeout
func cmdBRPopLPush(c *command.Ctx, args [][]byte) {
	timeout, ok := c.ParseBlockTimeout(args[3])
	if !ok {
		return
	}
	listBlockingMove(c, args[1], args[2], false, true, timeout, true)
}

// listBlockingMove is blmoveGenericCommand: LMOVE if the source has elements,
// else block on it (the destination is checked when the client is served).
//
// Either way it is propagated as LMOVE (RPOPLPUSH for BRPOPLPUSH).
func listBlockingMove(c *command.Ctx, src, dst []byte, fromHead, toHead bool, timeout time.Duration, rpoplpush bool) {
	dst = bytes.Clone(dst) // the serve callback may run after the arguments' buffer is reused
	db := c.DB()
	l, ok := lookupList(c, db, src)
	if !ok {
		return
	}
	if l != nil && l.Len() > 0 {
		if listMoveElement(c, db, src, l, dst, fromHead, toHead) {
			c.SignalKeyReady(dst)
			listMoveEffect(c, src, dst, fromHead, toHead, rpoplpush)
		}
		return
	}
	c.BlockOn(command.BlockSpec{
		Keys:      [][]byte{src},
		ExtraKeys: [][]byte{dst},
		Timeout:   timeout,
		Serve: func(sc *command.BlockServe) command.ServeResult {
			e := command.LookupWrite(sc.C.DBOf(sc.DB), sc.Key)
			if e == nil {
				return command.ServeKeyExhausted
			}
			if e.Type() != store.TypeList {
				return command.ServeSkipped
			}
			l := e.List()
			if l.Len() == 0 {
				return command.ServeKeyExhausted
			}
			// A destination of another type: the client gets WRONGTYPE
			// and nothing moves (serveClientBlockedOnList).
			if listMoveElement(sc.C, sc.C.DBOf(sc.DB), sc.Key, l, dst, fromHead, toHead) {
				sc.MarkReady(dst)
				listMoveEffect(sc.C, sc.Key, dst, fromHead, toHead, rpoplpush)
			}
			return command.ServeDone
		},
		OnTimeout: (*command.Ctx).NullArray,
		OnDenied:  (*command.Ctx).Null,
	})
}
