package node

import "github.com/shoal-db/shoal/resp"

// The reply writers are resp.Writer's, embedded in Client through
// command.Ctx; these names keep node's own uses short.

const (
	msgNotInteger = resp.MsgNotInteger
	msgWrongType  = resp.MsgWrongType
)

// formatDouble formats like C's "%.17g", with inf/-inf/nan spelled as Redis does.
func formatDouble(dst []byte, f float64) []byte { return resp.FormatDouble(dst, f) }
