//go:build !unix

package gossip

import (
	"errors"
	"os"
)

var errWouldBlock = errors.New("would block")

// flockExclusive: no flock here (Redis skips the lock on Solaris likewise).
func flockExclusive(*os.File) error { return nil }
