package node

import (
	"errors"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/config"
)

func shutdownHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{"shutdown": cmdShutdown}
}

// cmdShutdown is SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]
// (shutdownCommand): the client waits while the shutdown runs
// (node/persistence.go); it gets no reply when the server exits — its
// connection closes, as when Redis exits — and Redis's error when the
// shutdown fails or is aborted.
func cmdShutdown(c *Client, args [][]byte) {
	flags := 0
	abort := false
	for _, a := range args[1:] {
		switch {
		case command.ArgEquals(a, "nosave"):
			flags |= config.ShutdownNoSave
		case command.ArgEquals(a, "save"):
			flags |= config.ShutdownSave
		case command.ArgEquals(a, "now"):
			flags |= config.ShutdownNow
		case command.ArgEquals(a, "force"):
			flags |= config.ShutdownForce
		case command.ArgEquals(a, "abort"):
			abort = true
		default:
			c.ErrSyntax()
			return
		}
	}
	if (abort && flags != 0) || (flags&config.ShutdownSave != 0 && flags&config.ShutdownNoSave != 0) {
		c.ErrSyntax()
		return
	}
	s := c.srv
	if s.loading.active.Load() {
		// Redis: a server still loading never saves (the dataset is
		// partial), whatever SHUTDOWN says.
		flags = flags&^config.ShutdownSave | config.ShutdownNoSave
	}
	if abort {
		if s.abortShutdown() {
			c.OK()
		} else {
			c.Error("ERR No shutdown in progress.")
		}
		return
	}
	if flags&config.ShutdownNoSave == 0 {
		// A script past busy-reply-threshold: only SHUTDOWN NOSAVE stops
		// the server (the script's changes are not saved).
		if busy, eval := s.tx.gate.busyState(c); busy {
			c.Error(busyScriptError(eval))
			return
		}
	}
	err := s.prepareShutdown(flags, c)
	if errors.Is(err, errShutdownRunning) {
		// The client waits for the shutdown under way, blocked as in Redis.
		c.parkedWhile(func() { err = s.waitShutdown() })
	}
	if err != nil {
		c.Error(errShutdownFailed.Error())
		return
	}
	c.CloseAfterReply()
	s.shutdownFromCommand()
}

// shutdownFromCommand stops the server on behalf of SHUTDOWN: the binary's
// hook (which exits) when there is one, otherwise Shutdown. It runs in its
// own goroutine because Shutdown waits for the connections, including the
// one running SHUTDOWN.
func (s *Server) shutdownFromCommand() {
	go func() {
		if s.shutdownHook != nil {
			s.shutdownHook()
			return
		}
		s.Shutdown()
	}()
}

// stopping reports whether Shutdown has begun.
func (s *Server) stopping() bool {
	select {
	case <-s.stopCron:
		return true
	default:
		return false
	}
}
