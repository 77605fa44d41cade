package replication

import "github.com/shoal-db/shoal/resp"

// ErrProtocol is returned for a malformed stream or slot image; the stream
// reader's own error (resp.ErrStreamProtocol) is this very value.
var ErrProtocol = resp.ErrStreamProtocol
