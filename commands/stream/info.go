package stream

import (
	"math"
	"strings"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/resp"
	"github.com/shoal-db/shoal/store"
)

// XINFO STREAM / GROUPS / CONSUMERS / HELP (xinfoCommand): maps in RESP3,
// flat arrays in RESP2, with Redis 7.0's counters.

var xinfoHelpLines = []string{
	"CONSUMERS <key> <groupname>",
	"    Show consumers of <groupname>.",
	"GROUPS <key>",
	"    Show the stream consumer groups.",
	"STREAM <key> [FULL [COUNT <count>]",
	"    Show information about the stream.",
}

func cmdXInfo(c *command.Ctx, args [][]byte) {
	sub := strings.ToLower(string(args[1]))
	if sub == "help" {
		c.ReplyHelp(args, xinfoHelpLines)
		return
	}
	key := args[2]
	s, ok := lookupStreamRead(c, key)
	if !ok {
		return
	}
	if s == nil {
		c.Error(resp.MsgNoSuchKey)
		return
	}
	switch {
	case sub == "consumers" && len(args) == 4:
		xinfoConsumers(c, s, key, args[3])
	case sub == "groups" && len(args) == 3:
		xinfoGroups(c, s)
	case sub == "stream":
		xinfoStream(c, args, s)
	default:
		c.ErrSubcommandSyntax(args)
	}
}

func xinfoConsumers(c *command.Ctx, s *store.Stream, key, groupName []byte) {
	g := s.Group(groupName)
	if g == nil {
		c.Error("NOGROUP No such consumer group '" + command.CString(groupName) + "' for key name '" + command.CString(key) + "'")
		return
	}
	now := c.NowMs()
	c.Array(len(g.Consumers()))
	for _, consumer := range g.Consumers() {
		c.Map(3)
		c.BulkString("name")
		c.BulkString(consumer.Name())
		c.BulkString("pending")
		c.Int(int64(consumer.PendingLen()))
		c.BulkString("idle")
		c.Int(max(now-consumer.SeenTime, 0))
	}
}

func xinfoGroups(c *command.Ctx, s *store.Stream) {
	c.Array(len(s.Groups()))
	for _, g := range s.Groups() {
		c.Map(6)
		c.BulkString("name")
		c.BulkString(g.Name())
		c.BulkString("consumers")
		c.Int(int64(len(g.Consumers())))
		c.BulkString("pending")
		c.Int(int64(g.PendingLen()))
		c.BulkString("last-delivered-id")
		streamIDReply(c, g.LastID)
		xinfoReadCounters(c, s, g)
	}
}

// xinfoReadCounters writes a group's entries-read and lag (null when
// unknown).
func xinfoReadCounters(c *command.Ctx, s *store.Stream, g *store.StreamGroup) {
	c.BulkString("entries-read")
	if g.EntriesRead != store.InvalidEntriesRead {
		c.Int(g.EntriesRead)
	} else {
		c.Null()
	}
	c.BulkString("lag")
	if lag, ok := s.Lag(g); ok {
		c.Int(lag)
	} else {
		c.Null()
	}
}

func uint64Int(n uint64) int64 { return int64(min(n, math.MaxInt64)) }

// XINFO STREAM key [FULL [COUNT count]]
func xinfoStream(c *command.Ctx, args [][]byte, s *store.Stream) {
	opts := args[3:]
	full := len(opts) > 0
	count := int64(10) // FULL shows 10 entries and PEL entries unless told otherwise
	if full {
		if len(opts) != 1 && len(opts) != 3 || !command.ArgIs(opts[0], "full") {
			c.ErrSubcommandSyntax(args)
			return
		}
		if len(opts) == 3 {
			if !command.ArgIs(opts[1], "count") {
				c.ErrSubcommandSyntax(args)
				return
			}
			n, ok := streamParseLong(c, opts[2])
			if !ok {
				return
			}
			if n < 0 {
				n = 10
			}
			count = n
		}
	}
	if full {
		c.Map(9)
	} else {
		c.Map(10)
	}
	c.BulkString("length")
	c.Int(uint64Int(s.Length()))
	c.BulkString("radix-tree-keys")
	c.Int(int64(s.NodeCount()))
	c.BulkString("radix-tree-nodes")
	c.Int(s.RaxNodes())
	c.BulkString("last-generated-id")
	streamIDReply(c, s.LastID())
	c.BulkString("max-deleted-entry-id")
	streamIDReply(c, s.MaxDeletedID())
	c.BulkString("entries-added")
	c.Int(uint64Int(s.EntriesAdded()))
	c.BulkString("recorded-first-entry-id")
	streamIDReply(c, s.FirstID())
	if !full {
		c.BulkString("groups")
		c.Int(int64(len(s.Groups())))
		for _, rev := range []bool{false, true} {
			if rev {
				c.BulkString("last-entry")
			} else {
				c.BulkString("first-entry")
			}
			if streamRangeEntries(c, s, store.StreamID{}, store.MaxStreamID, 1, rev) == 0 {
				c.Null()
			}
		}
		return
	}
	c.BulkString("entries")
	streamRangeReply(c, s, store.StreamID{}, store.MaxStreamID, count, false)
	c.BulkString("groups")
	c.Array(len(s.Groups()))
	for _, g := range s.Groups() {
		c.Map(7)
		c.BulkString("name")
		c.BulkString(g.Name())
		c.BulkString("last-delivered-id")
		streamIDReply(c, g.LastID)
		xinfoReadCounters(c, s, g)
		c.BulkString("pel-count")
		c.Int(int64(g.PendingLen()))
		c.BulkString("pending")
		mark := len(c.Out)
		var n int64
		g.EachPending(func(p store.PendingEntry) bool {
			if count != 0 && n >= count {
				return false
			}
			c.Array(4)
			streamIDReply(c, p.ID)
			c.BulkString(p.Consumer.Name())
			c.Int(p.DeliveryTime)
			c.Int(uint64Int(p.DeliveryCount))
			n++
			return true
		})
		c.InsertArrayHeader(mark, n)
		c.BulkString("consumers")
		c.Array(len(g.Consumers()))
		for _, consumer := range g.Consumers() {
			c.Map(4)
			c.BulkString("name")
			c.BulkString(consumer.Name())
			c.BulkString("seen-time")
			c.Int(consumer.SeenTime)
			c.BulkString("pel-count")
			c.Int(int64(consumer.PendingLen()))
			c.BulkString("pending")
			mark := len(c.Out)
			var n int64
			g.EachConsumerPending(consumer, func(p store.PendingEntry) bool {
				if count != 0 && n >= count {
					return false
				}
				c.Array(3)
				streamIDReply(c, p.ID)
				c.Int(p.DeliveryTime)
				c.Int(uint64Int(p.DeliveryCount))
				n++
				return true
			})
			c.InsertArrayHeader(mark, n)
		}
	}
}
