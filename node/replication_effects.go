package node

import (
	"strconv"

	"github.com/shoal-db/shoal/store"
)

// The words of rewritten effects (Redis's shared objects): the effect of a
// non-deterministic or relative command is written with these, never with
// the client's own argv[0]. Read-only.
var (
	argSET         = []byte("SET")
	argPXAT        = []byte("PXAT")
	argKEEPTTL     = []byte("KEEPTTL")
	argDEL         = []byte("DEL")
	argPEXPIREAT   = []byte("PEXPIREAT")
	argPERSIST     = []byte("PERSIST")
	argLPOP        = []byte("LPOP")
	argRPOP        = []byte("RPOP")
	argLMOVE       = []byte("LMOVE")
	argRPOPLPUSH   = []byte("RPOPLPUSH")
	argZPOPMIN     = []byte("ZPOPMIN")
	argZPOPMAX     = []byte("ZPOPMAX")
	argXCLAIM      = []byte("XCLAIM")
	argXGROUP      = []byte("XGROUP")
	argSETID       = []byte("SETID")
	argTIME        = []byte("TIME")
	argRETRYCOUNT  = []byte("RETRYCOUNT")
	argFORCE       = []byte("FORCE")
	argJUSTID      = []byte("JUSTID")
	argLASTID      = []byte("LASTID")
	argENTRIESREAD = []byte("ENTRIESREAD")
	argEqualsSign  = []byte("=")
)

// listPopEffect sets the effect of a pop served from key: [LR]POP key, or
// [LR]POP key n when the command popped a counted range (n ≥ 0 elements
// asked of a list of llen).
func (c *Client) listPopEffect(key []byte, head bool, count int64, llen int) {
	cmd := argRPOP
	if head {
		cmd = argLPOP
	}
	c.popEffect(cmd, key, count, llen)
}

// popEffect sets the effect of a pop from a container of size elements:
// cmd key, or cmd key min(count, size) for a counted pop (count ≥ 0).
func (c *Client) popEffect(cmd, key []byte, count int64, size int) {
	if count < 0 {
		c.ReplaceEffect(cmd, key)
		return
	}
	c.ReplaceEffect(cmd, key, strconv.AppendInt(nil, min(count, int64(size)), 10))
}

// listMoveEffect sets the effect of a move served from src: RPOPLPUSH src
// dst for BRPOPLPUSH, else LMOVE src dst LEFT|RIGHT LEFT|RIGHT.
func (c *Client) listMoveEffect(src, dst []byte, fromHead, toHead, rpoplpush bool) {
	if rpoplpush {
		c.ReplaceEffect(argRPOPLPUSH, src, dst)
		return
	}
	end := func(head bool) []byte {
		if head {
			return []byte("LEFT")
		}
		return []byte("RIGHT")
	}
	c.ReplaceEffect(argLMOVE, src, dst, end(fromHead), end(toHead))
}

// zpopEffect sets the effect of a pop from sorted set key: ZPOPMIN|ZPOPMAX
// key, with min(count, zlen) when the command counted (count ≥ 0).
func (c *Client) zpopEffect(key []byte, max bool, count int64, zlen int) {
	cmd := argZPOPMIN
	if max {
		cmd = argZPOPMAX
	}
	c.popEffect(cmd, key, count, zlen)
}

// streamExactTrimEffect rewrites approximate trimming in an XADD / XTRIM
// effect as exact: "~ threshold" becomes "= <length>" (MAXLEN) or "= <first
// ID>" (MINID), what the stream holds after trimming, as Redis's
// streamRewriteTrimArgument.
func (c *Client) streamExactTrimEffect(fx [][]byte, s *store.Stream, a addTrimArgs) {
	if !a.trimming || !a.trim.Approx || a.trimPos < 1 {
		return
	}
	fx[a.trimPos-1] = argEqualsSign
	if a.trim.ByID {
		fx[a.trimPos] = s.FirstID().AppendTo(nil)
	} else {
		fx[a.trimPos] = strconv.AppendUint(nil, s.Length(), 10)
	}
}

// xclaimEffect adds the idempotent form a delivered or claimed pending
// entry is propagated in (streamPropagateXCLAIM): XCLAIM key group consumer
// 0 id TIME <delivery time> RETRYCOUNT <deliveries> FORCE JUSTID LASTID
// <group's last ID>.
func (c *Client) xclaimEffect(key, group []byte, g *store.StreamGroup, id store.StreamID) {
	c.xclaimEffectArg(key, group, g, id, id.AppendTo(nil))
}

// xclaimEffectArg is xclaimEffect with the ID written as idArg (XCLAIM
// propagates the ID as its client spelled it).
func (c *Client) xclaimEffectArg(key, group []byte, g *store.StreamGroup, id store.StreamID, idArg []byte) {
	p, ok := g.Pending(id)
	if !ok || p.Consumer == nil {
		return
	}
	c.ReplaceEffect(argXCLAIM, key, group, []byte(p.Consumer.Name()), []byte("0"), idArg,
		argTIME, strconv.AppendInt(nil, p.DeliveryTime, 10), argRETRYCOUNT, strconv.AppendUint(nil, p.DeliveryCount, 10),
		argFORCE, argJUSTID, argLASTID, g.LastID.AppendTo(nil))
}
