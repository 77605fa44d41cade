package node

import (
	"maps"
)

// serverHandlers returns the handlers of the server-level commands, gathered
// from the files that implement them: INFO (cmd_info.go), CONFIG
// (cmd_config.go), CLIENT (cmd_client.go), COMMAND (cmd_command.go), DEBUG
// (cmd_debug.go) and the smaller ones (cmd_misc.go).
func serverHandlers() map[string]HandlerFunc {
	all := map[string]HandlerFunc{}
	for _, group := range []map[string]HandlerFunc{
		infoHandlers(),
		configHandlers(),
		clientHandlers(),
		commandHandlers(),
		debugHandlers(),
		miscHandlers(),
	} {
		maps.Copy(all, group)
	}
	return all
}

// attribute writes a RESP3 attribute header for n key/value pairs. Callers
// only send attributes to RESP3 clients; RESP2 has no such type.
func (c *Client) attribute(n int) { c.Aggregate('|', n) }
