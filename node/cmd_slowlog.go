package node

import (
	"time"

	"github.com/shoal-db/shoal/command"
)

func slowlogHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"slowlog|get":   cmdSlowlogGet,
		"slowlog|len":   cmdSlowlogLen,
		"slowlog|reset": cmdSlowlogReset,
		"slowlog|help":  func(c *Client, args [][]byte) { c.ReplyHelp(args, slowlogHelpLines) },
	}
}

var slowlogHelpLines = []string{
	"GET [<count>]",
	"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
	"    Entries are made of:",
	"    id, timestamp, time in microseconds, arguments array, client IP and port,",
	"    client name",
	"LEN",
	"    Return the length of the slowlog.",
	"RESET",
	"    Reset the slowlog.",
}

func cmdSlowlogGet(c *Client, args [][]byte) {
	if len(args) > 3 {
		c.ErrSubcommandSyntax(args)
		return
	}
	count := int64(10)
	if len(args) == 3 {
		n, ok := command.ParseInt64(args[2])
		if !ok || n < -1 {
			c.Error("ERR count should be greater than or equal to -1")
			return
		}
		count = n
	}
	l := &c.srv.slowlog
	l.mu.Lock()
	entries := l.entries
	if count >= 0 && int64(len(entries)) > count {
		entries = entries[:count]
	}
	entries = append([]slowlogEntry(nil), entries...)
	l.mu.Unlock()
	c.Array(len(entries))
	for _, e := range entries {
		c.Array(6)
		c.Int(e.id)
		c.Int(e.at.Unix())
		c.Int(int64(e.duration / time.Microsecond))
		c.StringArray(e.args)
		c.BulkString(e.addr)
		c.BulkString(e.name)
	}
}

func cmdSlowlogLen(c *Client, args [][]byte) {
	l := &c.srv.slowlog
	l.mu.Lock()
	n := len(l.entries)
	l.mu.Unlock()
	c.Int(int64(n))
}

func cmdSlowlogReset(c *Client, args [][]byte) {
	l := &c.srv.slowlog
	l.mu.Lock()
	l.entries = nil
	l.mu.Unlock()
	c.OK()
}
