package node

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/shoal-db/shoal/config"
	"go.uber.org/zap"
)

// CONFIG GET/SET/RESETSTAT/REWRITE/HELP. The config package holds the
// directives, their validation and Redis's error texts; directives the
// server applies at run time are applied by the OnChange hooks that New
// registers (the other ones are read live where they are used, e.g.
// maxclients when a connection is accepted).

func configHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"config|get":       cmdConfigGet,
		"config|set":       cmdConfigSet,
		"config|resetstat": cmdConfigResetStat,
		"config|rewrite":   cmdConfigRewrite,
		"config|help":      func(c *Client, args [][]byte) { c.ReplyHelp(args, config.HelpLines()) },
	}
}

func cmdConfigGet(c *Client, args [][]byte) {
	patterns := make([]string, 0, len(args)-2)
	for _, a := range args[2:] {
		patterns = append(patterns, string(a))
	}
	pairs := c.srv.cfg.Get(patterns...)
	c.Map(len(pairs) / 2)
	for _, s := range pairs {
		c.BulkString(s)
	}
}

func cmdConfigSet(c *Client, args [][]byte) {
	pairs := make([]string, 0, len(args)-2)
	for _, a := range args[2:] {
		pairs = append(pairs, string(a))
	}
	// The hooks only matter to CONFIG SET: registering them here, on first
	// use, needs nothing from New.
	c.srv.registerServerConfigHooks()
	if err := c.srv.cfg.SetFromClient(c.isLocal(), pairs...); err != nil {
		c.Error(err.Error())
		return
	}
	c.OK()
}

// cmdConfigResetStat zeroes the server's statistics and then runs the reset
// hooks other subsystems registered with the config package.
func cmdConfigResetStat(c *Client, args [][]byte) {
	c.srv.resetServerStats()
	c.srv.acl.Log.ResetCounters()
	c.srv.cfg.ResetStat()
	c.OK()
}

func cmdConfigRewrite(c *Client, args [][]byte) {
	s := c.srv
	path := s.cfg.ConfigFile()
	if err := s.cfg.Rewrite(path); err != nil {
		if path != "" {
			s.log.Warn("CONFIG REWRITE failed", zap.Error(err))
		}
		c.Error(err.Error())
		return
	}
	s.log.Warn("CONFIG REWRITE executed with success.")
	c.OK()
}

// registerServerConfigHooks registers the OnChange hooks of the directives
// the server commands apply at run time. CONFIG SET calls it before its
// first change (New may call it too); calling it again registers nothing.
//
//   - maxclients: the open-files limit is raised to fit the new number of
//     clients; if the system refuses, CONFIG SET fails with Redis's message
//     and the old value is restored.
//   - port, bind: the listeners are replaced (clients already connected
//     stay); if the new address cannot be bound, CONFIG SET fails and the
//     server keeps listening where it did.
func (s *Server) registerServerConfigHooks() {
	a := s.aux()
	a.hooksOnce.Do(func() {
		a.listenMu.Lock()
		a.listenPort, a.listenBinds = s.cfg.Int("port"), s.cfg.Strings("bind")
		a.listenMu.Unlock()
		s.cfg.OnChange("port", func(string) error {
			if err := s.applyListenConfig(); err != nil {
				s.log.Warn("CONFIG SET port failed", zap.Error(err))
				return errors.New("Unable to listen on this port. Check server logs.")
			}
			return nil
		})
		s.cfg.OnChange("bind", func(string) error {
			if err := s.applyListenConfig(); err != nil {
				s.log.Warn("CONFIG SET bind failed", zap.Error(err))
				return errors.New("Failed to bind to specified addresses.")
			}
			return nil
		})
		s.registerTLSHooks() // node/tls.go (after port and bind: CONFIG SET bind moves both)
		s.cfg.OnChange("maxclients", func(string) error {
			want := s.cfg.Int("maxclients")
			if got := adjustFileLimit(want); got < want {
				return fmt.Errorf("The operating system is not able to handle the specified number of clients, try with %d", max(got, 1))
			}
			return nil
		})
	})
}

// applyListenConfig moves the listeners to the configured port and bind
// addresses. The new sockets are opened first, so a failure leaves the old
// ones untouched; config's rollback then calls it again with the old values,
// which match what is open and change nothing.
func (s *Server) applyListenConfig() error {
	a := s.aux()
	a.listenMu.Lock()
	defer a.listenMu.Unlock()
	port, binds := s.cfg.Int("port"), s.cfg.Strings("bind")
	if port == a.listenPort && slices.Equal(binds, a.listenBinds) {
		return nil
	}
	var lns []net.Listener
	if port != 0 || s.cfg.Int("tls-port") == 0 { // port 0 beside a tls-port: TLS only, as Redis
		var err error
		if lns, err = openListeners(port, binds, s.stopCron); err != nil {
			return err
		}
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		for _, ln := range lns {
			_ = ln.Close()
		}
		return nil
	}
	old := s.listeners
	s.listeners = lns
	for _, ln := range lns {
		s.goServe(ln)
	}
	s.mu.Unlock()
	for _, ln := range old {
		if rl, ok := ln.(*retirableListener); ok {
			rl.retire()
		} else {
			// A listener Listen opened without the retirable wrapper:
			// closing it ends its serveListener, which closes the
			// connections it accepted.
			_ = ln.Close()
		}
	}
	a.listenPort, a.listenBinds = port, binds
	return nil
}

// retirableListener lets a listener stop accepting without ending the
// serveListener loop that runs it: that loop closes every connection the
// listener accepted when it returns, and clients connected before CONFIG SET
// port/bind must stay. After retire, the socket is closed (the port is
// free) and Accept blocks until the server stops.
type retirableListener struct {
	net.Listener
	retired chan struct{}
	once    sync.Once
	stop    <-chan struct{} // closed when the server shuts down
}

// newRetirableListener wraps ln; stop is closed when the server shuts down.
func newRetirableListener(ln net.Listener, stop <-chan struct{}) *retirableListener {
	return &retirableListener{Listener: ln, retired: make(chan struct{}), stop: stop}
}

func (l *retirableListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		select {
		case <-l.retired:
			<-l.stop
			return nil, net.ErrClosed
		default:
		}
	}
	return c, err
}

// retire closes the socket but keeps the Serve loop, and so the
// connections it accepted, until the server stops.
func (l *retirableListener) retire() {
	l.once.Do(func() { close(l.retired) })
	_ = l.Listener.Close()
}

// openListeners binds port on every address ("*" is every IPv4 address,
// "::*" every IPv6 one, a leading "-" makes an address optional). No
// address means no TCP listener at all, as CONFIG SET bind "" does.
func openListeners(port int64, binds []string, stop <-chan struct{}) ([]net.Listener, error) {
	var lns []net.Listener
	for _, b := range binds {
		optional := strings.HasPrefix(b, "-")
		host := strings.TrimPrefix(b, "-")
		switch host {
		case "*":
			host = "0.0.0.0"
		case "::*":
			host = "::"
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.FormatInt(port, 10)))
		if err != nil {
			if optional {
				continue
			}
			for _, l := range lns {
				_ = l.Close()
			}
			return nil, err
		}
		lns = append(lns, newRetirableListener(ln, stop))
	}
	if len(lns) == 0 && len(binds) > 0 {
		return nil, fmt.Errorf("no address of %q could be bound on port %d", binds, port)
	}
	return lns, nil
}
