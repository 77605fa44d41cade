package stream

import (
	"math"
	"strconv"
	"strings"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/resp"
	"github.com/shoal-db/shoal/store"
)

// Consumer group commands: XGROUP, XSETID, XACK, XPENDING, XCLAIM,
// XAUTOCLAIM (t_stream.c).

var xgroupHelpLines = []string{
	"CREATE <key> <groupname> <id|$> [option]",
	"    Create a new consumer group. Options are:",
	"    * MKSTREAM",
	"      Create the empty stream if it does not exist.",
	"    * ENTRIESREAD entries_read",
	"      Set the group's entries_read counter (internal use).",
	"CREATECONSUMER <key> <groupname> <consumer>",
	"    Create a new consumer in the specified group.",
	"DELCONSUMER <key> <groupname> <consumer>",
	"    Remove the specified consumer.",
	"DESTROY <key> <groupname>",
	"    Remove the specified group.",
	"SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
	"    Set the current group ID and entries_read counter.",
}

// noGroupError is the NOGROUP text of the commands that name a key and a
// group (XPENDING, XCLAIM, XAUTOCLAIM).
func noGroupError(key, group []byte) string {
	return "NOGROUP No such key '" + command.CString(key) + "' or consumer group '" + command.CString(group) + "'"
}

// XGROUP CREATE key group id|$ [MKSTREAM] [ENTRIESREAD n]
// XGROUP SETID key group id|$ [ENTRIESREAD n]
// XGROUP DESTROY key group
// XGROUP CREATECONSUMER key group consumer
// XGROUP DELCONSUMER key group consumer
// XGROUP HELP
func cmdXGroup(c *command.Ctx, args [][]byte) {
	sub := strings.ToLower(string(args[1]))
	if sub == "help" {
		c.ReplyHelp(args, xgroupHelpLines)
		return
	}
	mkstream := false
	entriesRead := int64(store.InvalidEntriesRead)
	for i := 5; i < len(args); {
		switch {
		case sub == "create" && command.ArgIs(args[i], "mkstream"):
			mkstream = true
			i++
		case (sub == "create" || sub == "setid") && command.ArgIs(args[i], "entriesread") && i+1 < len(args):
			n, ok := streamParseLong(c, args[i+1])
			if !ok {
				return
			}
			if n < 0 && n != store.InvalidEntriesRead {
				c.Error("ERR value for ENTRIESREAD must be positive or -1")
				return
			}
			entriesRead = n
			i += 2
		default:
			c.ErrSubcommandSyntax(args)
			return
		}
	}
	key, groupName := args[2], args[3]
	s, ok := lookupStreamWrite(c, key)
	if !ok {
		return
	}
	var g *store.StreamGroup
	if !mkstream {
		if s == nil {
			c.Error("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to " +
				"use the MKSTREAM option to create an empty stream automatically.")
			return
		}
		if g = s.Group(groupName); g == nil && (sub == "setid" || sub == "createconsumer" || sub == "delconsumer") {
			c.Error("NOGROUP No such consumer group '" + command.CString(groupName) + "' for key name '" + command.CString(key) + "'")
			return
		}
	}
	switch sub {
	case "create":
		if len(args) > 8 {
			c.ErrSubcommandSyntax(args)
			return
		}
		var id store.StreamID
		if a := args[4]; len(a) == 1 && a[0] == '$' {
			if s != nil {
				id = s.LastID()
			}
		} else if id, ok = parseStreamIDArg(c, a, 0, true); !ok {
			return
		}
		if s == nil {
			s = store.NewStream()
			c.DB().SetValue(key, s)
			c.SignalKeyReady(key)
		}
		if s.CreateGroup(groupName, id, entriesRead) == nil {
			c.Error("BUSYGROUP Consumer Group name already exists")
			return
		}
		c.OK()
		c.Notify(config.NotifyStream, "xgroup-create", key)
	case "setid":
		if len(args) != 5 && len(args) != 7 {
			c.ErrSubcommandSyntax(args)
			return
		}
		var id store.StreamID
		if a := args[4]; len(a) == 1 && a[0] == '$' {
			id = s.LastID()
		} else if id, ok = parseStreamIDArg(c, a, 0, false); !ok {
			return
		}
		g.LastID = id
		g.EntriesRead = entriesRead
		c.OK()
		c.Notify(config.NotifyStream, "xgroup-setid", key)
	case "destroy":
		if g == nil {
			c.Int(0)
			c.NoEffect()
			return
		}
		s.DestroyGroup(groupName)
		c.Int(1)
		c.Notify(config.NotifyStream, "xgroup-destroy", key)
		// XREADGROUP clients blocked on the group get -NOGROUP.
		c.SignalKeyReady(key)
	case "createconsumer":
		if g.CreateConsumer(args[4], c.NowMs()) == nil {
			c.Int(0)
			c.NoEffect()
			return
		}
		c.Int(1)
		c.Notify(config.NotifyStream, "xgroup-createconsumer", key)
	case "delconsumer":
		var pending int
		if consumer := g.Consumer(args[4]); consumer != nil {
			pending = g.DeleteConsumer(consumer)
			c.Notify(config.NotifyStream, "xgroup-delconsumer", key)
		} else {
			c.NoEffect() // no such consumer: no change, as Redis
		}
		c.Int(int64(pending))
	default:
		c.ErrSubcommandSyntax(args)
	}
}

// XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]
func cmdXSetID(c *command.Ctx, args [][]byte) {
	id, ok := parseStreamIDArg(c, args[2], 0, true)
	if !ok {
		return
	}
	entriesAdded := int64(-1)
	var maxDeleted store.StreamID
	for i := 3; i < len(args); i += 2 {
		more := len(args) - 1 - i
		switch {
		case command.ArgIs(args[i], "entriesadded") && more > 0:
			n, ok := streamParseLong(c, args[i+1])
			if !ok {
				return
			}
			if n < 0 {
				c.Error("ERR entries_added must be positive")
				return
			}
			entriesAdded = n
		case command.ArgIs(args[i], "maxdeletedid") && more > 0:
			md, ok := parseStreamIDArg(c, args[i+1], 0, true)
			if !ok {
				return
			}
			if id.Compare(md) < 0 {
				c.Error("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id")
				return
			}
			maxDeleted = md
		default:
			c.ErrSyntax()
			return
		}
	}
	s, ok := lookupStreamWrite(c, args[1])
	if !ok {
		return
	}
	if s == nil {
		c.Error(resp.MsgNoSuchKey)
		return
	}
	if s.Length() > 0 {
		if top, _ := s.LastValidID(); id.Compare(top) < 0 {
			c.Error("ERR The ID specified in XSETID is smaller than the target stream top item")
			return
		}
		if entriesAdded != -1 && s.Length() > uint64(entriesAdded) {
			c.Error("ERR The entries_added specified in XSETID is smaller than the target stream length")
			return
		}
	}
	s.SetID(id, entriesAdded, maxDeleted)
	c.OK()
	c.Notify(config.NotifyStream, "xsetid", args[1])
}

// lookupGroup finds key's stream and its group for XACK, XPENDING, XCLAIM
// and XAUTOCLAIM (a read lookup). ok is false after a WRONGTYPE reply; g
// is nil when the key or the group is missing.
func lookupGroup(c *command.Ctx, key, group []byte) (s *store.Stream, g *store.StreamGroup, ok bool) {
	s, ok = lookupStreamRead(c, key)
	if !ok || s == nil {
		return s, nil, ok
	}
	return s, s.Group(group), true
}

// XACK key group id [id ...]
func cmdXAck(c *command.Ctx, args [][]byte) {
	_, g, ok := lookupGroup(c, args[1], args[2])
	if !ok {
		return
	}
	if g == nil {
		c.Int(0)
		return
	}
	// All IDs are checked first: the command runs in full or not at all.
	ids := make([]store.StreamID, 0, len(args)-3)
	for _, a := range args[3:] {
		id, ok := parseStreamIDArg(c, a, 0, true)
		if !ok {
			return
		}
		ids = append(ids, id)
	}
	var acked int64
	for _, id := range ids {
		if g.Ack(id) {
			acked++
		}
	}
	c.Int(acked)
}

// XPENDING key group [[IDLE min-idle-time] start end count [consumer]]
func cmdXPending(c *command.Ctx, args [][]byte) {
	argc := len(args)
	if argc != 3 && (argc < 6 || argc > 9) {
		c.ErrSyntax()
		return
	}
	var start, end store.StreamID
	var count, minIdle int64
	var consumerName []byte
	if argc >= 6 {
		at := 3
		if command.ArgIs(args[3], "idle") {
			n, ok := streamParseLong(c, args[4])
			if !ok {
				return
			}
			minIdle = n
			if argc < 8 {
				c.ErrSyntax()
				return
			}
			at += 2
		}
		n, ok := streamParseLong(c, args[at+2])
		if !ok {
			return
		}
		count = max(n, 0)
		if start, ok = parseRangeStart(c, args[at]); !ok {
			return
		}
		if end, ok = parseRangeEnd(c, args[at+1]); !ok {
			return
		}
		if at+3 < argc {
			consumerName = args[at+3]
		}
	}
	_, g, ok := lookupGroup(c, args[1], args[2])
	if !ok {
		return
	}
	if g == nil {
		c.Error(noGroupError(args[1], args[2]))
		return
	}
	if argc == 3 {
		c.Array(4)
		first, last, any := g.PendingBounds()
		c.Int(int64(g.PendingLen()))
		if !any {
			c.Null()
			c.Null()
			c.NullArray()
			return
		}
		streamIDReply(c, first)
		streamIDReply(c, last)
		mark := len(c.Out)
		var n int64
		for _, consumer := range g.Consumers() {
			if consumer.PendingLen() == 0 {
				continue
			}
			c.Array(2)
			c.BulkString(consumer.Name())
			c.BulkInt(int64(consumer.PendingLen()))
			n++
		}
		c.InsertArrayHeader(mark, n)
		return
	}
	var consumer *store.StreamConsumer
	if consumerName != nil {
		if consumer = g.Consumer(consumerName); consumer == nil {
			c.Array(0)
			return
		}
	}
	now := c.NowMs()
	mark := len(c.Out)
	var n int64
	next := func(from store.StreamID) (store.PendingEntry, bool) {
		if consumer != nil {
			return g.NextConsumerPending(consumer, from)
		}
		return g.NextPending(from)
	}
	for from, more := start, true; count > 0 && more; {
		p, ok := next(from)
		if !ok || p.ID.Compare(end) > 0 {
			break
		}
		from, more = p.ID.Next()
		if minIdle != 0 && now-p.DeliveryTime < minIdle {
			continue
		}
		n++
		count--
		c.Array(4)
		streamIDReply(c, p.ID)
		c.BulkString(p.Consumer.Name())
		c.Int(max(now-p.DeliveryTime, 0))
		c.Int(int64(min(p.DeliveryCount, math.MaxInt64)))
	}
	c.InsertArrayHeader(mark, n)
}

// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-ms]
// [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID id]
func cmdXClaim(c *command.Ctx, args [][]byte) {
	s, g, ok := lookupGroup(c, args[1], args[2])
	if !ok {
		return
	}
	if g == nil {
		c.Error(noGroupError(args[1], args[2]))
		return
	}
	minIdle, ok := command.ParseInt64(args[4])
	if !ok {
		c.Error("ERR Invalid min-idle-time argument for XCLAIM")
		return
	}
	minIdle = max(minIdle, 0)
	// The IDs run up to the first argument that is not one; the options
	// follow.
	var ids []store.StreamID
	j := 5
	for ; j < len(args); j++ {
		id, ok := parseStreamID(args[j], 0, true, nil)
		if !ok {
			break
		}
		ids = append(ids, id)
	}
	now := c.NowMs()
	deliveryTime, timeGiven := now, false
	retryCount := int64(-1)
	force, justID := false, false
	var lastID store.StreamID
	for ; j < len(args); j++ {
		more := len(args) - 1 - j
		opt := args[j]
		switch {
		case command.ArgIs(opt, "force"):
			force = true
		case command.ArgIs(opt, "justid"):
			justID = true
		case command.ArgIs(opt, "idle") && more > 0:
			j++
			n, ok := command.ParseInt64(args[j])
			if !ok {
				c.Error("ERR Invalid IDLE option argument for XCLAIM")
				return
			}
			deliveryTime, timeGiven = now-n, true
		case command.ArgIs(opt, "time") && more > 0:
			j++
			n, ok := command.ParseInt64(args[j])
			if !ok {
				c.Error("ERR Invalid TIME option argument for XCLAIM")
				return
			}
			deliveryTime, timeGiven = n, true
		case command.ArgIs(opt, "retrycount") && more > 0:
			j++
			n, ok := command.ParseInt64(args[j])
			if !ok {
				c.Error("ERR Invalid RETRYCOUNT option argument for XCLAIM")
				return
			}
			retryCount = n
		case command.ArgIs(opt, "lastid") && more > 0:
			j++
			id, ok := parseStreamIDArg(c, args[j], 0, true)
			if !ok {
				return
			}
			lastID = id
		default:
			c.Error("ERR Unrecognized XCLAIM option '" + command.CString(opt) + "'")
			return
		}
	}
	// XCLAIM is propagated as its effects: one idempotent XCLAIM per entry
	// claimed or dropped, else XGROUP SETID for a LASTID that moved the
	// group (streamPropagateXCLAIM, streamPropagateGroupID).
	c.NoEffect()
	propagateLastID := false
	if lastID.Compare(g.LastID) > 0 {
		g.LastID = lastID
		propagateLastID = true
	}
	// A delivery time in the future or before the epoch is taken as now
	// (clients may compute it from a skewed clock); Redis's -1 "not given"
	// marker makes TIME -1 mean now as well.
	if timeGiven && (deliveryTime < 0 || deliveryTime > now) {
		deliveryTime = now
	}
	var consumer *store.StreamConsumer
	mark := len(c.Out)
	var n int64
	var it store.StreamIterator
	for i, id := range ids {
		p, pending := g.Pending(id)
		it.Reset(s, id, id, false)
		if !it.Next() {
			// The entry is gone: so goes its pending entry.
			if pending {
				xclaimEffectArg(c, args[1], args[2], g, id, args[5+i])
				propagateLastID = false
				g.Ack(id)
			}
			continue
		}
		if !pending && !force {
			continue
		}
		count := uint64(1) // a new pending entry (FORCE) starts at one delivery
		if pending {
			if minIdle != 0 && now-p.DeliveryTime < minIdle {
				continue
			}
			count = p.DeliveryCount
		}
		if consumer == nil {
			if consumer = g.Consumer(args[3]); consumer == nil {
				consumer = g.CreateConsumer(args[3], now)
				c.Dirty(1) // Redis counts a consumer created
				c.Notify(config.NotifyStream, "xgroup-createconsumer", args[1])
			} else {
				consumer.SeenTime = now
			}
		}
		switch {
		case retryCount >= 0:
			count = uint64(retryCount)
		case !justID:
			count++
		}
		g.Claim(id, consumer, deliveryTime, count)
		if justID {
			streamIDReply(c, id)
		} else {
			streamEntryReply(c, &it)
		}
		xclaimEffectArg(c, args[1], args[2], g, id, args[5+i])
		propagateLastID = false
		n++
	}
	c.InsertArrayHeader(mark, n)
	if propagateLastID {
		c.ReplaceEffect(argXGROUP, argSETID, args[1], args[2], g.LastID.AppendTo(nil),
			argENTRIESREAD, strconv.AppendInt(nil, g.EntriesRead, 10))
	}
	countStreamEffects(c)
}

// XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]
func cmdXAutoClaim(c *command.Ctx, args [][]byte) {
	minIdle, ok := command.ParseInt64(args[4])
	if !ok {
		c.Error("ERR Invalid min-idle-time argument for XAUTOCLAIM")
		return
	}
	minIdle = max(minIdle, 0)
	start, ok := parseRangeStart(c, args[5])
	if !ok {
		return
	}
	count := int64(100)
	justID := false
	const attemptsFactor = 10
	for j := 6; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case command.ArgIs(args[j], "count") && more > 0:
			n, ok := command.ParseInt64(args[j+1])
			if !ok || n < 1 || n > math.MaxInt64/16 {
				c.Error("ERR COUNT must be > 0")
				return
			}
			count = n
			j++
		case command.ArgIs(args[j], "justid"):
			justID = true
		default:
			c.ErrSyntax()
			return
		}
	}
	s, g, ok := lookupGroup(c, args[1], args[2])
	if !ok {
		return
	}
	if g == nil {
		c.Error(noGroupError(args[1], args[2]))
		return
	}
	now := c.NowMs()
	// Propagated as one idempotent XCLAIM per entry claimed or dropped.
	c.NoEffect()
	var consumer *store.StreamConsumer
	var deleted []store.StreamID
	attempts := count * attemptsFactor
	c.Array(3)
	idMark := len(c.Out)
	var claimed int64
	var it store.StreamIterator
	cursor, eof := start, false
	for attempts > 0 && count > 0 {
		attempts--
		p, ok := g.NextPending(cursor)
		if !ok {
			eof = true
			break
		}
		if cursor, ok = p.ID.Next(); !ok {
			eof = true // nothing can follow the greatest ID
		}
		it.Reset(s, p.ID, p.ID, false)
		if !it.Next() {
			xclaimEffect(c, args[1], args[2], g, p.ID)
			g.Ack(p.ID)
			deleted = append(deleted, p.ID)
			count--
		} else if minIdle == 0 || now-p.DeliveryTime >= minIdle {
			if consumer == nil {
				if consumer = g.Consumer(args[3]); consumer == nil {
					consumer = g.CreateConsumer(args[3], now)
					c.Dirty(1) // Redis counts a consumer created
					c.Notify(config.NotifyStream, "xgroup-createconsumer", args[1])
				} else {
					consumer.SeenTime = now
				}
			}
			n := p.DeliveryCount
			if !justID {
				n++
			}
			g.Claim(p.ID, consumer, now, n)
			if justID {
				streamIDReply(c, p.ID)
			} else {
				streamEntryReply(c, &it)
			}
			xclaimEffect(c, args[1], args[2], g, p.ID)
			claimed++
			count--
		}
		if eof {
			break
		}
	}
	c.InsertArrayHeader(idMark, claimed)
	// The cursor: the next pending entry after the last one looked at.
	var next store.StreamID
	if !eof {
		if p, ok := g.NextPending(cursor); ok {
			next = p.ID
		}
	}
	c.InsertBulk(idMark, next.AppendTo(nil))
	c.Array(len(deleted))
	for _, id := range deleted {
		streamIDReply(c, id)
	}
	countStreamEffects(c)
}

// countStreamEffects adds what XCLAIM / XAUTOCLAIM change for Redis's
// server.dirty: one per change they propagate (an entry claimed or dropped
// from the PEL, the group's last ID), after the consumer they may have
// created; with none they propagate nothing, as Redis.
func countStreamEffects(c *command.Ctx) {
	c.Dirty(int64(len(c.Effects().Cmds)))
	if len(c.Effects().Cmds) == 0 {
		c.NoEffect()
	}
}
