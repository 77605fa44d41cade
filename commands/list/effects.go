package list

import "github.com/shoal-db/shoal/command"

// The words of the rewritten effects (read-only).
var (
	argLPOP      = []byte("LPOP")
	argRPOP      = []byte("RPOP")
	argLMOVE     = []byte("LMOVE")
	argRPOPLPUSH = []byte("RPOPLPUSH")
)

// listPopEffect sets the effect of a pop served from key: [LR]POP key, or
// [LR]POP key n when the command popped a counted range (n ≥ 0 elements
// asked of a list of llen).
func listPopEffect(c *command.Ctx, key []byte, head bool, count int64, llen int) {
	cmd := argRPOP
	if head {
		cmd = argLPOP
	}
	c.PopEffect(cmd, key, count, llen)
}

// listMoveEffect sets the effect of a move served from src: RPOPLPUSH src
// dst for BRPOPLPUSH, else LMOVE src dst LEFT|RIGHT LEFT|RIGHT.
func listMoveEffect(c *command.Ctx, src, dst []byte, fromHead, toHead, rpoplpush bool) {
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
