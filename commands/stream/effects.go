package stream

import (
	"strconv"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/store"
)

// The words of the rewritten effects (read-only).
var (
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

// streamExactTrimEffect rewrites approximate trimming in an XADD / XTRIM
// effect as exact: "~ threshold" becomes "= <length>" (MAXLEN) or "= <first
// ID>" (MINID), what the stream holds after trimming, as Redis's
// streamRewriteTrimArgument.
func streamExactTrimEffect(c *command.Ctx, fx [][]byte, s *store.Stream, a addTrimArgs) {
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
func xclaimEffect(c *command.Ctx, key, group []byte, g *store.StreamGroup, id store.StreamID) {
	xclaimEffectArg(c, key, group, g, id, id.AppendTo(nil))
}

// xclaimEffectArg is xclaimEffect with the ID written as idArg (XCLAIM
// propagates the ID as its client spelled it).
func xclaimEffectArg(c *command.Ctx, key, group []byte, g *store.StreamGroup, id store.StreamID, idArg []byte) {
	p, ok := g.Pending(id)
	if !ok || p.Consumer == nil {
		return
	}
	c.ReplaceEffect(argXCLAIM, key, group, []byte(p.Consumer.Name()), []byte("0"), idArg,
		argTIME, strconv.AppendInt(nil, p.DeliveryTime, 10), argRETRYCOUNT, strconv.AppendUint(nil, p.DeliveryCount, 10),
		argFORCE, argJUSTID, argLASTID, g.LastID.AppendTo(nil))
}
