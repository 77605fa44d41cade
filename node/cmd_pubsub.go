package node

import (
	"fmt"
	"sort"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/glob"
)

// pubsubHandlers: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE,
// PUBLISH, SSUBSCRIBE, SUNSUBSCRIBE, SPUBLISH and the PUBSUB container
// (node/pubsub.go has the registry and the delivery path).
func pubsubHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"subscribe":            cmdSubscribe(kindChannel),
		"psubscribe":           cmdSubscribe(kindPattern),
		"ssubscribe":           cmdSubscribe(kindShard),
		"unsubscribe":          func(c *Client, args [][]byte) { c.unsubscribeCmd(kindChannel, args[1:]) },
		"punsubscribe":         func(c *Client, args [][]byte) { c.unsubscribeCmd(kindPattern, args[1:]) },
		"sunsubscribe":         func(c *Client, args [][]byte) { c.unsubscribeCmd(kindShard, args[1:]) },
		"publish":              cmdPublish(false),
		"spublish":             cmdPublish(true),
		"pubsub|help":          cmdPubsubHelp,
		"pubsub|channels":      cmdPubsubChannels(kindChannel),
		"pubsub|shardchannels": cmdPubsubChannels(kindShard),
		"pubsub|numsub":        cmdPubsubNumsub(kindChannel),
		"pubsub|shardnumsub":   cmdPubsubNumsub(kindShard),
		"pubsub|numpat":        cmdPubsubNumpat,
	}
}

func cmdSubscribe(k pubsubKind) HandlerFunc {
	return func(c *Client, args [][]byte) {
		// Inside EXEC (a client expecting one reply per command) Redis
		// refuses SSUBSCRIBE; SUBSCRIBE and PSUBSCRIBE are allowed there
		// for backward compatibility.
		if k == kindShard && c.inExec {
			c.Error("ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client")
			return
		}
		c.subscribeCmd(k, args[1:])
	}
}

func cmdPublish(shard bool) HandlerFunc {
	return func(c *Client, args [][]byte) {
		s := c.srv
		n := s.publish(c, args[1], args[2], shard)
		if s.cluster != nil {
			// Every node's subscribers hear a PUBLISH; an SPUBLISH
			// reaches the shard (master and replicas) only.
			if shard {
				s.cluster.PublishShard(args[1], args[2])
			} else {
				s.cluster.Publish(args[1], args[2])
			}
			c.NoEffect()
		} else {
			// Replicas deliver the message to their own subscribers.
			c.ReplaceEffect(args...)
		}
		c.Int(n)
	}
}

func cmdPubsubHelp(c *Client, args [][]byte) {
	c.ReplyHelp(args, []string{
		"CHANNELS [<pattern>]",
		"    Return the currently active channels matching a <pattern> (default: '*').",
		"NUMPAT",
		"    Return number of subscriptions to patterns.",
		"NUMSUB [<channel> ...]",
		"    Return the number of subscribers for the specified channels, excluding",
		"    pattern subscriptions(default: no channels).",
		"SHARDCHANNELS [<pattern>]",
		"    Return the currently active shard level channels matching a <pattern> (default: '*').",
		"SHARDNUMSUB [<shardchannel> ...]",
		"    Return the number of subscribers for the specified shard level channel(s)",
	})
}

func cmdPubsubChannels(k pubsubKind) HandlerFunc {
	return func(c *Client, args [][]byte) {
		if len(args) > 3 {
			c.ErrSubcommandSyntax(args)
			return
		}
		var pattern string
		if len(args) == 3 {
			pattern = string(args[2])
		}
		r := c.srv.pubsub
		r.mu.RLock()
		names := make([]string, 0, len(r.table(k)))
		for name := range r.table(k) {
			if len(args) < 3 || glob.Match(pattern, name, false) {
				names = append(names, name)
			}
		}
		r.mu.RUnlock()
		sort.Strings(names) // Redis's order is its dict's; sorted is as good and stable
		c.Array(len(names))
		for _, n := range names {
			c.BulkString(n)
		}
	}
}

func cmdPubsubNumsub(k pubsubKind) HandlerFunc {
	return func(c *Client, args [][]byte) {
		r := c.srv.pubsub
		c.Array(2 * (len(args) - 2))
		r.mu.RLock()
		defer r.mu.RUnlock()
		for _, name := range args[2:] {
			c.Bulk(name)
			c.Int(int64(len(r.table(k)[string(name)])))
		}
	}
}

func cmdPubsubNumpat(c *Client, args [][]byte) {
	_, pats, _ := c.srv.pubsubCounts()
	c.Int(pats)
}

// pubsubContextAllows applies Redis's RESP2 subscribe context: a
// subscribed RESP2 client may only run (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE,
// PING, QUIT and RESET. RESP3 clients run anything (messages are pushes).
func (c *Client) pubsubContextAllows(spec *command.Spec) bool {
	if c.ps.push == nil || c.Proto != 2 || !c.subscribed() { // the first test: never subscribed
		return true
	}
	top := spec
	if spec.Parent != nil {
		top = spec.Parent
	}
	switch top.Name {
	case "ping", "subscribe", "ssubscribe", "unsubscribe", "sunsubscribe", "psubscribe", "punsubscribe", "quit", "reset":
		return true
	}
	c.Error(fmt.Sprintf("ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context", spec.FullName()))
	return false
}

// shardChannelPositions appends the positions of SSUBSCRIBE's,
// SUNSUBSCRIBE's and SPUBLISH's channels: their key specs are "not_key"
// (COMMAND GETKEYS does not list them), yet a cluster routes them by the
// channel's slot as keys (Redis's getNodeByQuery goes through the legacy
// first/last/step range, which includes them).
func shardChannelPositions(spec *command.Spec, args [][]byte, dst []int) []int {
	last := len(args) - 1
	if spec.Name == "spublish" { // SPUBLISH channel message
		last = min(last, 1)
	}
	for i := 1; i <= last; i++ {
		dst = append(dst, i)
	}
	return dst
}
