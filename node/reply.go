package node

import (
	"github.com/shoal-db/shoal/resp"
)

// The reply writers are resp.Writer's, embedded in Client through
// command.Ctx; these names keep node's own uses short.

const (
	msgNotInteger = resp.MsgNotInteger
	msgWrongType  = resp.MsgWrongType
)
