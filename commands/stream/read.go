package stream

import (
	"bytes"
	"slices"
	"strconv"
	"time"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/config"

	"github.com/shoal-db/shoal/store"
)

// XREAD and XREADGROUP (xreadCommand), their blocking forms on the
// framework of blocking.go, and the consumer-group side of reading
// (streamReplyWithRange with a group).

// xreadBlockedDefaultCount bounds what a blocked XREAD without COUNT gets
// when it is served (XREAD_BLOCKED_DEFAULT_COUNT).
const xreadBlockedDefaultCount = 1000

// xreadReq is a parsed XREAD / XREADGROUP.
type xreadReq struct {
	group             bool // XREADGROUP
	timeoutMs         int64
	block             bool
	count             int64
	keys, ids         [][]byte
	groupName, member []byte
	noack             bool
}

// parseXRead parses the options as xreadCommand does, replying on error.
func parseXRead(c *command.Ctx, args [][]byte, group bool) (r xreadReq, ok bool) {
	r.group = group
	streamsArg := 0
	for i := 1; i < len(args); i++ {
		more := len(args) - i - 1
		o := args[i]
		switch {
		case command.ArgIs(o, "block") && more > 0:
			i++
			ms, ok := c.ParseMillisTimeout(args[i])
			if !ok {
				return r, false
			}
			r.timeoutMs, r.block = ms, true
		case command.ArgIs(o, "count") && more > 0:
			i++
			n, ok := streamParseLong(c, args[i])
			if !ok {
				return r, false
			}
			r.count = max(n, 0)
		case command.ArgIs(o, "streams") && more > 0:
			streamsArg = i + 1
			n := len(args) - streamsArg
			if n%2 != 0 {
				c.Error("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.")
				return r, false
			}
			r.keys = args[streamsArg : streamsArg+n/2]
			r.ids = args[streamsArg+n/2:]
			i = len(args)
		case command.ArgIs(o, "group") && more >= 2:
			if !group {
				c.Error("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.")
				return r, false
			}
			r.groupName, r.member = args[i+1], args[i+2]
			i += 2
		case command.ArgIs(o, "noack"):
			if !group {
				c.Error("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.")
				return r, false
			}
			r.noack = true
		default:
			c.ErrSyntax()
			return r, false
		}
	}
	if streamsArg == 0 {
		c.ErrSyntax()
		return r, false
	}
	if group && r.groupName == nil {
		c.Error("ERR Missing GROUP option for XREADGROUP")
		return r, false
	}
	return r, true
}

// KeyPositions is Redis's xreadGetKeys: the positions of the stream
// keys of an XREAD / XREADGROUP call, skipping the option values before
// STREAMS. It is the key procedure keys.go's keyProcs should register for
// "xread" and "xreadgroup" (the STREAMS keyword search of the key specs
// stops at an option value spelled "streams", e.g. a consumer name); until
// then xreadGeneric checks that the keys it reads are the locked ones.
func KeyPositions(args [][]byte) ([]int, error) {
	streamsPos := -1
	for i := 1; i < len(args); i++ {
		switch a := args[i]; {
		case command.ArgIs(a, "block"), command.ArgIs(a, "count"):
			i++
		case command.ArgIs(a, "group"):
			i += 2
		case command.ArgIs(a, "noack"):
		case command.ArgIs(a, "streams"):
			streamsPos = i
			i = len(args)
		default:
			i = len(args)
		}
	}
	n := len(args) - streamsPos - 1
	if streamsPos < 0 || n == 0 || n%2 != 0 {
		return nil, command.ErrKeySpec
	}
	pos := make([]int, n/2)
	for i := range pos {
		pos[i] = streamsPos + 1 + i
	}
	return pos, nil
}

// xreadGeneric is XREAD [COUNT n] [BLOCK ms] STREAMS key... id... and
// XREADGROUP GROUP g consumer [COUNT n] [BLOCK ms] [NOACK] STREAMS key... id...
func xreadGeneric(c *command.Ctx, args [][]byte, group bool) {
	if group {
		// XREADGROUP is propagated only as the XCLAIM / XGROUP effects of
		// what it delivers (streamGroupReadReply).
		c.NoEffect()
	}
	r, ok := parseXRead(c, args, group)
	if !ok {
		return
	}
	if !c.Session().KeysLocked(r.keys) {
		c.Error("ERR the stream keys of this command could not be located: an option value is spelled STREAMS")
		return
	}
	db := c.DB()
	ids := make([]store.StreamID, len(r.keys))
	var groups []*store.StreamGroup
	if group {
		groups = make([]*store.StreamGroup, len(r.keys))
	}
	for i, key := range r.keys {
		s, ok := lookupStreamRead(c, key)
		if !ok {
			return
		}
		if group {
			var g *store.StreamGroup
			if s != nil {
				g = s.Group(r.groupName)
			}
			if g == nil {
				c.Error("NOGROUP No such key '" + command.CString(key) + "' or consumer group '" + command.CString(r.groupName) +
					"' in XREADGROUP with GROUP option")
				return
			}
			groups[i] = g
		}
		switch idArg := r.ids[i]; {
		case len(idArg) == 1 && idArg[0] == '$':
			if group {
				c.Error("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of " +
					"this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would " +
					"just return an empty result set.")
				return
			}
			if s != nil {
				ids[i] = s.LastID()
			}
		case len(idArg) == 1 && idArg[0] == '>':
			if !group {
				c.Error("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.")
				return
			}
			ids[i] = store.MaxStreamID // ">" is the greatest ID, as in Redis
		default:
			id, ok := parseStreamIDArg(c, idArg, 0, true)
			if !ok {
				return
			}
			ids[i] = id
		}
	}
	// Serve what can be served now.
	mark := len(c.Out)
	var served int64
	now := c.NowMs()
	for i, key := range r.keys {
		e := db.Find(key) // Redis looks every key up a second time here
		if e == nil || e.Type() != store.TypeStream {
			continue
		}
		s := e.Stream()
		gt := ids[i]
		history, serve := false, false
		if group {
			if gt != store.MaxStreamID {
				serve, history = true, true
			} else if s.Length() > 0 {
				if maxID, _ := s.LastValidID(); maxID.Compare(groups[i].LastID) > 0 {
					serve = true
					gt = groups[i].LastID
				}
			}
		} else if s.Length() > 0 {
			if maxID, _ := s.LastValidID(); maxID.Compare(gt) > 0 {
				serve = true
			}
		}
		if !serve {
			continue
		}
		served++
		start, _ := gt.Next()
		if c.Proto == 2 {
			c.Array(2)
		}
		c.Bulk(key)
		if !group {
			streamRangeReply(c, s, start, store.MaxStreamID, r.count, false)
			continue
		}
		g := groups[i]
		consumer := g.Consumer(r.member)
		created := consumer == nil
		if created {
			consumer = g.CreateConsumer(r.member, now)
			c.Dirty(1) // Redis counts the consumer created ...
			c.Notify(config.NotifyStream, "xgroup-createconsumer", key)
		} else {
			consumer.SeenTime = now
		}
		c.Dirty(1) // ... and each stream served to a group
		if history {
			streamHistoryReply(c, s, g, consumer, start, r.count, now)
		} else {
			streamGroupReadReply(c, key, r.groupName, s, g, consumer, created, start, r.count, r.noack, now)
		}
	}
	if served > 0 {
		if c.Proto == 2 {
			c.InsertArrayHeader(mark, served)
		} else {
			c.InsertMapHeader(mark, served)
		}
		return
	}
	if !r.block {
		c.NullArray()
		return
	}
	blockOnStreams(c, r, ids)
}

// streamGroupReadReply writes the entries from start on (at most count, 0 =
// all) as delivered to a consumer of a group: the group's last delivered ID
// and read counter advance, and unless noack each entry becomes pending for
// the consumer (streamReplyWithRange with a group).
//
// Its effect is Redis's: an XCLAIM ... FORCE JUSTID LASTID per entry
// delivered, or with NOACK an XGROUP CREATECONSUMER for a new consumer and an
// XGROUP SETID for the advanced group.
func streamGroupReadReply(c *command.Ctx, key, groupName []byte, s *store.Stream, g *store.StreamGroup, consumer *store.StreamConsumer,
	created bool, start store.StreamID, count int64, noack bool, now int64) {
	if created && noack {
		c.ReplaceEffect(argXGROUP, []byte("CREATECONSUMER"), key, groupName, []byte(consumer.Name()))
	}
	mark := len(c.Out)
	var n int64
	advanced := false
	it := s.Range(start, store.MaxStreamID, false)
	for it.Next() {
		id := it.ID()
		before := g.LastID
		s.AdvanceGroup(g, id)
		advanced = advanced || g.LastID != before
		streamEntryReply(c, it)
		if !noack {
			g.Deliver(id, consumer, now)
			xclaimEffect(c, key, groupName, g, id)
		}
		n++
		if n == count {
			break
		}
	}
	c.InsertArrayHeader(mark, n)
	if noack && advanced {
		c.ReplaceEffect(argXGROUP, argSETID, key, groupName, g.LastID.AppendTo(nil),
			argENTRIESREAD, strconv.AppendInt(nil, g.EntriesRead, 10))
	}
}

// streamHistoryReply writes the consumer's pending entries from start on
// (at most count, 0 = all): each with its fields, or with a null in their
// place when the entry is no longer in the stream; every entry served
// counts as one more delivery (streamReplyWithRangeFromConsumerPEL).
func streamHistoryReply(c *command.Ctx, s *store.Stream, g *store.StreamGroup, consumer *store.StreamConsumer,
	start store.StreamID, count int64, now int64) {
	mark := len(c.Out)
	var n int64
	var it store.StreamIterator
	from := start
	for count == 0 || n < count {
		p, ok := g.NextConsumerPending(consumer, from)
		if !ok {
			break
		}
		it.Reset(s, p.ID, p.ID, false)
		if it.Next() {
			streamEntryReply(c, &it)
			g.Redeliver(p.ID, now)
		} else {
			c.Array(2)
			streamIDReply(c, p.ID)
			c.NullArray()
		}
		n++
		if from, ok = p.ID.Next(); !ok {
			break
		}
	}
	c.InsertArrayHeader(mark, n)
}

// ---------------------------------------------------------------- blocking

// blockOnStreams blocks the client until one of its streams gets entries
// past its ID (serveClientsBlockedOnStreamKey). A key given twice waits
// for the ID given first.
func blockOnStreams(c *command.Ctx, r xreadReq, ids []store.StreamID) {
	type wait struct {
		key string
		id  store.StreamID
	}
	var waits []wait
	keys := make([][]byte, 0, len(r.keys))
	for i, k := range r.keys {
		if !slices.ContainsFunc(waits, func(w wait) bool { return w.key == string(k) }) {
			waits = append(waits, wait{string(k), ids[i]})
			keys = append(keys, k)
		}
	}
	count := r.count
	if count == 0 {
		count = xreadBlockedDefaultCount
	}
	// The arguments alias the connection's read buffer: keep copies for
	// the serve callback.
	group, groupName, member, noack := r.group, bytes.Clone(r.groupName), bytes.Clone(r.member), r.noack
	serve := func(sc *command.BlockServe) command.ServeResult {
		wc := sc.C
		e := sc.DB.Lookup(sc.Key, store.LookupNoStats)
		if e == nil || e.Type() != store.TypeStream {
			// A deleted or replaced stream ends XREADGROUP waits; XREAD
			// waits on for a stream to appear (and the next waiters on
			// the key still get their turn).
			if group {
				wc.Error("UNBLOCKED the stream key no longer exists")
				return command.ServeDone
			}
			return command.ServeSkipped
		}
		s := e.Stream()
		i := slices.IndexFunc(waits, func(w wait) bool { return w.key == string(sc.Key) })
		if i < 0 {
			return command.ServeSkipped
		}
		gt := waits[i].id
		var g *store.StreamGroup
		if group {
			if g = s.Group(groupName); g == nil {
				wc.Error("NOGROUP the consumer group this client was blocked on no longer exists")
				return command.ServeDone
			}
			gt = g.LastID
		}
		if s.LastID().Compare(gt) <= 0 {
			return command.ServeSkipped
		}
		start, _ := gt.Next()
		now := sc.DB.Keyspace().Now()
		if wc.Proto == 2 {
			wc.Array(1)
			wc.Array(2)
		} else {
			wc.Map(1)
		}
		wc.Bulk(sc.Key)
		if !group {
			streamRangeReply(wc, s, start, store.MaxStreamID, count, false)
			return command.ServeDone
		}
		consumer := g.Consumer(member)
		created := consumer == nil
		if created {
			consumer = g.CreateConsumer(member, now)
			wc.Dirty(1) // as for a synchronous read
			wc.NotifyIn(sc.DB, config.NotifyStream, "xgroup-createconsumer", sc.Key)
		} else {
			consumer.SeenTime = now
		}
		wc.Dirty(1)
		streamGroupReadReply(wc, sc.Key, groupName, s, g, consumer, created, start, count, noack, now)
		return command.ServeDone
	}
	timeout := time.Duration(0)
	if r.timeoutMs > 0 {
		timeout = time.Duration(min(r.timeoutMs, int64(1<<62)/int64(time.Millisecond))) * time.Millisecond
	}
	c.BlockOn(command.BlockSpec{Keys: keys, Timeout: timeout, Serve: serve, OnTimeout: (*command.Ctx).NullArray})
	if group {
		c.Session().WatchStreamKeys(keys)
	}
}
