package stream

import (
	"bytes"
	"math"
	"slices"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/store"
)

// Stream commands, Redis 7.0's t_stream.c: XADD, XRANGE, XREVRANGE, XLEN,
// XDEL, XTRIM here; XREAD/XREADGROUP in cmd_stream_read.go; the consumer
// group commands in cmd_stream_group.go; XINFO in cmd_stream_info.go.
// Replies, error texts and the order in which arguments and keys are
// checked are Redis's.

func Handlers() map[string]command.Handler {
	return map[string]command.Handler{
		"xadd":                  cmdXAdd,
		"xrange":                func(c *command.Ctx, args [][]byte) { xrangeGeneric(c, args, false) },
		"xrevrange":             func(c *command.Ctx, args [][]byte) { xrangeGeneric(c, args, true) },
		"xlen":                  cmdXLen,
		"xdel":                  cmdXDel,
		"xtrim":                 cmdXTrim,
		"xread":                 func(c *command.Ctx, args [][]byte) { xreadGeneric(c, args, false) },
		"xreadgroup":            func(c *command.Ctx, args [][]byte) { xreadGeneric(c, args, true) },
		"xgroup|create":         cmdXGroup,
		"xgroup|setid":          cmdXGroup,
		"xgroup|destroy":        cmdXGroup,
		"xgroup|createconsumer": cmdXGroup,
		"xgroup|delconsumer":    cmdXGroup,
		"xgroup|help":           cmdXGroup,
		"xsetid":                cmdXSetID,
		"xack":                  cmdXAck,
		"xpending":              cmdXPending,
		"xclaim":                cmdXClaim,
		"xautoclaim":            cmdXAutoClaim,
		"xinfo|stream":          cmdXInfo,
		"xinfo|groups":          cmdXInfo,
		"xinfo|consumers":       cmdXInfo,
		"xinfo|help":            cmdXInfo,
	}
}

const msgInvalidStreamID = "ERR Invalid stream ID specified as stream command argument"

// streamParseLong is getLongLongFromObjectOrReply.
func streamParseLong(c *command.Ctx, arg []byte) (int64, bool) {
	n, ok := command.ParseInt64(arg)
	if !ok {
		c.ErrNotInteger()
	}
	return n, ok
}

// ---------------------------------------------------------------- IDs

// parseStreamID is streamGenericParseIDOrReply without the reply: "ms-seq",
// "ms" (the sequence is then missingSeq), "-" and "+" (the least and
// greatest IDs; refused when strict). With seqGiven non-nil the XADD form
// "ms-*" is accepted too and *seqGiven tells whether the sequence was
// given. The argument is read as Redis reads it, as a C string.
func parseStreamID(arg []byte, missingSeq uint64, strict bool, seqGiven *bool) (store.StreamID, bool) {
	if len(arg) > 127 {
		return store.StreamID{}, false
	}
	if i := bytes.IndexByte(arg, 0); i >= 0 {
		arg = arg[:i]
	}
	one := len(arg) == 1
	if strict && one && (arg[0] == '-' || arg[0] == '+') {
		return store.StreamID{}, false
	}
	if seqGiven != nil {
		*seqGiven = true
	}
	if one && arg[0] == '-' {
		return store.StreamID{}, true
	}
	if one && arg[0] == '+' {
		return store.MaxStreamID, true
	}
	msPart, seqPart, hasSeq := bytes.Cut(arg, []byte{'-'})
	ms, ok := string2ull(msPart)
	if !ok {
		return store.StreamID{}, false
	}
	seq := missingSeq
	if hasSeq {
		if seqGiven != nil && len(seqPart) == 1 && seqPart[0] == '*' {
			seq = 0
			*seqGiven = false
		} else if seq, ok = string2ull(seqPart); !ok {
			return store.StreamID{}, false
		}
	}
	return store.StreamID{Ms: ms, Seq: seq}, true
}

// string2ull is Redis's string2ull: a strict integer that is not negative,
// or else whatever C's strtoull accepts in full (leading blanks, a sign,
// leading zeros; a minus sign negates modulo 2^64).
func string2ull(s []byte) (uint64, bool) {
	if v, ok := command.ParseInt64(s); ok {
		return uint64(v), v >= 0
	}
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] >= '\t' && s[i] <= '\r') {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	if i == len(s) {
		return 0, false // no digits
	}
	var v uint64
	for ; i < len(s); i++ {
		d := s[i] - '0'
		if d > 9 {
			return 0, false // trailing garbage
		}
		if v > (math.MaxUint64-uint64(d))/10 {
			return 0, false // ERANGE
		}
		v = v*10 + uint64(d)
	}
	if neg {
		v = -v
	}
	return v, true
}

// parseStreamIDArg parses an ID argument or replies the invalid-ID error.
func parseStreamIDArg(c *command.Ctx, arg []byte, missingSeq uint64, strict bool) (store.StreamID, bool) {
	id, ok := parseStreamID(arg, missingSeq, strict, nil)
	if !ok {
		c.Error(msgInvalidStreamID)
	}
	return id, ok
}

// parseIntervalID is streamParseIntervalIDOrReply: a "(" prefix makes the
// bound exclusive (and the ID strict).
func parseIntervalID(c *command.Ctx, arg []byte, missingSeq uint64) (id store.StreamID, exclusive, ok bool) {
	if len(arg) > 1 && arg[0] == '(' {
		id, ok = parseStreamIDArg(c, arg[1:], missingSeq, true)
		return id, true, ok
	}
	id, ok = parseStreamIDArg(c, arg, missingSeq, false)
	return id, false, ok
}

// parseRangeStart and parseRangeEnd parse the bounds of a range, making
// exclusive bounds inclusive ones.
func parseRangeStart(c *command.Ctx, arg []byte) (store.StreamID, bool) {
	id, ex, ok := parseIntervalID(c, arg, 0)
	if !ok {
		return id, false
	}
	if ex {
		if id, ok = id.Next(); !ok {
			c.Error("ERR invalid start ID for the interval")
			return id, false
		}
	}
	return id, true
}

func parseRangeEnd(c *command.Ctx, arg []byte) (store.StreamID, bool) {
	id, ex, ok := parseIntervalID(c, arg, math.MaxUint64)
	if !ok {
		return id, false
	}
	if ex {
		if id, ok = id.Prev(); !ok {
			c.Error("ERR invalid end ID for the interval")
			return id, false
		}
	}
	return id, true
}

// ---------------------------------------------------------------- replies

// streamIDReply writes an ID as a bulk string.
func streamIDReply(c *command.Ctx, id store.StreamID) {
	var buf [48]byte
	c.Bulk(id.AppendTo(buf[:0]))
}

// streamEntryReply writes the iterator's current entry: [id, [f, v, ...]].
func streamEntryReply(c *command.Ctx, it *store.StreamIterator) {
	c.Array(2)
	streamIDReply(c, it.ID())
	c.Array(2 * it.NumFields())
	for it.NextField() {
		f, v := it.Field()
		c.Bulk(f)
		c.Bulk(v)
	}
}

// streamRangeReply writes the entries of [start, end] (at most count, 0 =
// all) as an array and returns how many (streamReplyWithRange without a
// group).
func streamRangeReply(c *command.Ctx, s *store.Stream, start, end store.StreamID, count int64, rev bool) int64 {
	mark := len(c.Out)
	n := streamRangeEntries(c, s, start, end, count, rev)
	c.InsertArrayHeader(mark, n)
	return n
}

// streamRangeEntries writes the entries without an array header.
func streamRangeEntries(c *command.Ctx, s *store.Stream, start, end store.StreamID, count int64, rev bool) int64 {
	var n int64
	it := s.Range(start, end, rev)
	for it.Next() {
		streamEntryReply(c, it)
		n++
		if n == count {
			break
		}
	}
	return n
}

// ---------------------------------------------------------------- lookups

// lookupStreamWrite finds key for a write (Redis's lookupKeyWrite). It
// replies WRONGTYPE and returns ok=false for another type; s is nil when
// the key is missing.
func lookupStreamWrite(c *command.Ctx, key []byte) (s *store.Stream, ok bool) {
	return streamOf(c, command.LookupWrite(c.DB(), key))
}

// lookupStreamRead is lookupStreamWrite for reads: hits and misses count.
func lookupStreamRead(c *command.Ctx, key []byte) (s *store.Stream, ok bool) {
	return streamOf(c, c.DB().Find(key))
}

func streamOf(c *command.Ctx, e *store.Entry) (*store.Stream, bool) {
	if e == nil {
		return nil, true
	}
	if e.Type() != store.TypeStream {
		c.ErrWrongType()
		return nil, false
	}
	return e.Stream(), true
}

// streamLimits reads the node size limits from the configuration.
func streamLimits(c *command.Ctx) store.StreamLimits {
	return store.StreamLimits{
		MaxBytes:   c.Config().Int("stream-node-max-bytes"),
		MaxEntries: c.Config().Int("stream-node-max-entries"),
	}
}

// ---------------------------------------------------------------- XADD / XTRIM

// addTrimArgs are XADD's and XTRIM's parsed options.
type addTrimArgs struct {
	trim       store.TrimArgs
	trimming   bool
	id         store.StreamID
	idGiven    bool
	seqGiven   bool
	noMkStream bool
	idPos      int // XADD: the position of the ID argument
	trimPos    int // the position of the MAXLEN / MINID threshold
}

// parseAddTrimArgs is streamParseAddOrTrimArgsOrReply.
func parseAddTrimArgs(c *command.Ctx, args [][]byte, xadd bool) (a addTrimArgs, ok bool) {
	limitGiven := false
	i := 2
	for ; i < len(args); i++ {
		more := len(args) - 1 - i
		opt := args[i]
		switch {
		case xadd && len(opt) == 1 && opt[0] == '*':
			// The common auto-ID case.
			a.idPos = i
			goto done
		case command.ArgIs(opt, "maxlen") && more > 0, command.ArgIs(opt, "minid") && more > 0:
			if a.trimming {
				c.Error("ERR syntax error, MAXLEN and MINID options at the same time are not compatible")
				return a, false
			}
			byID := command.ArgIs(opt, "minid")
			a.trim.Approx = false
			next := args[i+1]
			if more >= 2 && len(next) == 1 && next[0] == '~' {
				a.trim.Approx = true
				i++
			} else if more >= 2 && len(next) == 1 && next[0] == '=' {
				i++
			}
			if byID {
				id, ok := parseStreamIDArg(c, args[i+1], 0, true)
				if !ok {
					return a, false
				}
				a.trim.ByID, a.trim.MinID = true, id
			} else {
				n, ok := streamParseLong(c, args[i+1])
				if !ok {
					return a, false
				}
				if n < 0 {
					c.Error("ERR The MAXLEN argument must be >= 0.")
					return a, false
				}
				a.trim.ByID, a.trim.MaxLen = false, n
			}
			i++
			a.trimPos = i
			a.trimming = true
		case command.ArgIs(opt, "limit") && more > 0:
			n, ok := streamParseLong(c, args[i+1])
			if !ok {
				return a, false
			}
			if n < 0 {
				c.Error("ERR The LIMIT argument must be >= 0.")
				return a, false
			}
			a.trim.Limit = n
			limitGiven = true
			i++
		case xadd && command.ArgIs(opt, "nomkstream"):
			a.noMkStream = true
		case xadd:
			// An ID, or a syntax error reported as an invalid ID.
			id, ok := parseStreamID(opt, 0, true, &a.seqGiven)
			if !ok {
				c.Error(msgInvalidStreamID)
				return a, false
			}
			a.id, a.idGiven, a.idPos = id, true, i
			goto done
		default:
			c.ErrSyntax()
			return a, false
		}
	}
	a.idPos = i
done:
	if a.trim.Limit != 0 && !a.trimming {
		c.Error("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
		return a, false
	}
	if !xadd && !a.trimming {
		c.Error("ERR syntax error, XTRIM must be called with a trimming strategy")
		return a, false
	}
	if c.Session().IsMasterLink() {
		// The master rewrote approximate trimming as exact (LIMIT may
		// remain): do what it says, unlimited (mustObeyClient).
		a.trim.Limit = 0
	} else if limitGiven {
		if !a.trim.Approx {
			c.Error("ERR syntax error, LIMIT cannot be used without the special ~ option")
			return a, false
		}
	} else if a.trim.Approx {
		// Approximate trimming does at most 100 nodes' worth of work
		// unless told otherwise; exact trimming is never limited.
		lim := 100 * c.Config().Int("stream-node-max-entries")
		if lim <= 0 || lim/100 != c.Config().Int("stream-node-max-entries") {
			lim = 10000
		}
		a.trim.Limit = min(lim, 1000000)
	} else {
		a.trim.Limit = 0
	}
	return a, true
}

// XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value [field value ...]
func cmdXAdd(c *command.Ctx, args [][]byte) {
	a, ok := parseAddTrimArgs(c, args, true)
	if !ok {
		return
	}
	fieldPos := a.idPos + 1
	if n := len(args) - fieldPos; n < 2 || n%2 == 1 {
		c.ErrArity("xadd")
		return
	}
	// 0-0 is refused before the key is created, so that the error leaves
	// no empty stream behind.
	if a.idGiven && a.seqGiven && a.id.IsZero() {
		c.Error("ERR The ID specified in XADD must be greater than 0-0")
		return
	}
	key := args[1]
	s, ok := lookupStreamWrite(c, key)
	if !ok {
		return
	}
	if s == nil && a.noMkStream {
		c.Null()
		return
	}
	created := s == nil
	if created {
		s = store.NewStream()
	}
	if s.LastID() == store.MaxStreamID {
		c.Error("ERR The stream has exhausted the last possible ID, unable to add more items")
		return
	}
	id, res := streamNewID(c, s, a)
	if res == store.AddOK {
		res = s.Add(id, args[fieldPos:], streamLimits(c))
	}
	switch res {
	case store.AddIDTooSmall:
		c.Error("ERR The ID specified in XADD is equal or smaller than the target stream top item")
		return
	case store.AddTooLarge:
		c.Error("ERR Elements are too large to be stored")
		return
	}
	if created {
		c.DB().SetValue(key, s)
	}
	streamIDReply(c, id)
	c.Notify(config.NotifyStream, "xadd", key)
	if a.trimming && s.Trim(a.trim) > 0 {
		c.Notify(config.NotifyStream, "xtrim", key)
	}
	c.SignalKeyReady(key)
	// Propagated with the ID generated and approximate trimming made exact.
	if !a.idGiven || !a.seqGiven || a.trimming && a.trim.Approx {
		fx := slices.Clone(args)
		fx[a.idPos] = id.AppendTo(nil)
		streamExactTrimEffect(c, fx, s, a)
		c.ReplaceEffect(fx...)
	}
}

// streamNewID resolves XADD's ID: generated (*), partial (ms-*) or given.
func streamNewID(c *command.Ctx, s *store.Stream, a addTrimArgs) (store.StreamID, store.AddErr) {
	last := s.LastID()
	switch {
	case !a.idGiven:
		id, ok := s.NextAutoID(uint64(max(c.NowMs(), 0)))
		if !ok {
			return id, store.AddIDTooSmall
		}
		return id, store.AddOK
	case !a.seqGiven:
		if a.id.Ms == last.Ms {
			if last.Seq == math.MaxUint64 {
				// Redis fails here without setting errno, and so answers
				// with the size error.
				return a.id, store.AddTooLarge
			}
			return store.StreamID{Ms: last.Ms, Seq: last.Seq + 1}, store.AddOK
		}
	}
	return a.id, store.AddOK
}

// XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]
func cmdXTrim(c *command.Ctx, args [][]byte) {
	a, ok := parseAddTrimArgs(c, args, false)
	if !ok {
		return
	}
	s, ok := lookupStreamWrite(c, args[1])
	if !ok {
		return
	}
	if s == nil {
		c.Int(0)
		c.NoEffect()
		return
	}
	n := s.Trim(a.trim)
	if n > 0 {
		c.Notify(config.NotifyStream, "xtrim", args[1])
	}
	c.Int(n)
	c.Dirty(n) // one change per entry trimmed, as Redis
	if n == 0 {
		c.NoEffect()
	} else if a.trim.Approx {
		fx := slices.Clone(args)
		streamExactTrimEffect(c, fx, s, a)
		c.ReplaceEffect(fx...)
	}
}

// ---------------------------------------------------------------- XRANGE / XREVRANGE / XLEN / XDEL

// xrangeGeneric is XRANGE key start end [COUNT n] and XREVRANGE key end
// start [COUNT n].
func xrangeGeneric(c *command.Ctx, args [][]byte, rev bool) {
	startArg, endArg := args[2], args[3]
	if rev {
		startArg, endArg = endArg, startArg
	}
	start, ok := parseRangeStart(c, startArg)
	if !ok {
		return
	}
	end, ok := parseRangeEnd(c, endArg)
	if !ok {
		return
	}
	count := int64(-1)
	for j := 4; j < len(args); j++ {
		if command.ArgIs(args[j], "count") && j+1 < len(args) {
			n, ok := streamParseLong(c, args[j+1])
			if !ok {
				return
			}
			count = max(n, 0)
			j++
			continue
		}
		c.ErrSyntax()
		return
	}
	s, ok := lookupStreamRead(c, args[1])
	if !ok {
		return
	}
	switch {
	case s == nil:
		c.Array(0)
	case count == 0:
		c.NullArray()
	default:
		streamRangeReply(c, s, start, end, max(count, 0), rev)
	}
}

// XLEN key
func cmdXLen(c *command.Ctx, args [][]byte) {
	s, ok := lookupStreamRead(c, args[1])
	if !ok {
		return
	}
	if s == nil {
		c.Int(0)
		return
	}
	c.Int(int64(min(s.Length(), math.MaxInt64)))
}

// XDEL key id [id ...]
func cmdXDel(c *command.Ctx, args [][]byte) {
	s, ok := lookupStreamWrite(c, args[1])
	if !ok {
		return
	}
	if s == nil {
		c.Int(0)
		c.NoEffect()
		return
	}
	// All IDs are checked first: the command runs in full or not at all.
	ids := make([]store.StreamID, 0, len(args)-2)
	for _, a := range args[2:] {
		id, ok := parseStreamIDArg(c, a, 0, true)
		if !ok {
			return
		}
		ids = append(ids, id)
	}
	var deleted int64
	for _, id := range ids {
		if s.Delete(id) {
			deleted++
		}
	}
	c.Changed(deleted) // one change per entry deleted; none, no effect
	if deleted > 0 {
		c.Notify(config.NotifyStream, "xdel", args[1])
	}
	c.Int(deleted)
}
