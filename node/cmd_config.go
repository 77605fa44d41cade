package node

import (
	"fmt"

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
		"config|help":      func(c *Client, args [][]byte) { c.replyHelp(args, config.HelpLines()) },
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
// the server commands apply at run time. New calls it once; calling it
// again registers nothing.
//
//   - maxclients: the open-files limit is raised to fit the new number of
//     clients; if the system refuses, CONFIG SET fails with Redis's message
//     and the old value is restored.
func (s *Server) registerServerConfigHooks() {
	s.aux().hooksOnce.Do(func() {
		s.cfg.OnChange("maxclients", func(string) error {
			want := s.cfg.Int("maxclients")
			if got := adjustFileLimit(want); got < want {
				return fmt.Errorf("The operating system is not able to handle the specified number of clients, try with %d", max(got, 1))
			}
			return nil
		})
	})
}
