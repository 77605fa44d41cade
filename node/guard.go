package node

import (
	"net"
	"sync/atomic"

	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/resp"
)

// The request guard of every connection is a resp.RequestReader
// (resp/request.go: the bounded parser with Redis's protocol error texts).
// What ties it to the server is here: the live limits CONFIG SET updates,
// and each client's answers to the per-client questions.

// serverLimits are the live settings every connection consults; the server
// updates them when CONFIG SET changes the directives (node/server.go).
type serverLimits struct {
	resp.Limits                // proto-max-bulk-len, client-query-buffer-limit, timeout
	outputCheckAt atomic.Int64 // normal clients' output size that needs a look at the limits (node/output.go)
	// output is client-output-buffer-limit by class, read on every pushed
	// message (node/pubsub.go enqueue) without the configuration's lookup.
	output atomic.Pointer[[3]config.ClientBufferLimit]
}

// newGuard wraps a socket for a client not registered yet: the server's
// limits, no per-client answers (see limitsView).
func (s *Server) newGuard(c net.Conn) *resp.RequestReader {
	return resp.NewRequestReader(c, &resp.ConnLimits{Shared: &s.limits.Limits})
}

// limitsView returns guard limits that share the server's live values but
// answer the per-client questions for c.
func (c *Client) limitsView() *resp.ConnLimits {
	return &resp.ConnLimits{
		AuthRequired: c.authRequired,
		IdleExempt:   c.blocked.Load,
		OnPartial:    c.afterRead, // client eviction (node/client_evict.go)
		Shared:       &c.srv.limits.Limits,
	}
}
