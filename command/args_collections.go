package command

import (
	"github.com/shoal-db/shoal/config"
)

// Helpers the collection families (hash, set, SORT) share with node's
// option parsers: C-string views of arguments and the guard of sampling
// replies.

// RandomReplyFits refuses (replying an error) a sampling-with-repetition
// reply that could not be built in memory. Redis grows its output buffer
// until the client passes its output buffer limit and is closed, or the
// process runs out of memory. shoal does the first when the client's hard
// limit will stop the sampling (Ctx.ReplyOverLimit), and otherwise answers
// "value is out of range" when the reply would pass proto-max-bulk-len
// (512 MiB by default), the largest single value it accepts. avgLen is the
// average element size (field plus value for a hash).
func RandomReplyFits(c *Ctx, count int64, avgLen int, pairs bool) bool {
	per := int64(avgLen) + 16 // "$<len>\r\n...\r\n" and an array header
	if pairs {
		per += 16
	}
	limit := c.Config().Int("proto-max-bulk-len")
	if count <= limit/per {
		return true
	}
	if c.Session().NormalClient() {
		if hard := c.Config().ClientOutputBufferLimits()[config.ClientNormal].HardBytes; hard > 0 && hard <= uint64(limit) {
			return true
		}
	}
	c.Error("ERR value is out of range")
	return false
}
