package node

import (
	"fmt"
	"net"
	"strings"

	"github.com/shoal-db/shoal/command"
)

// The refusals of the dispatcher (node/dispatch.go) that live nowhere else:
// unknown commands, the protected commands, and a command overtaken by a
// change of replication role.

// rejectUnknown writes Redis 7.0's unknown-command error.
func (c *Client) rejectUnknown(args [][]byte) {
	var b strings.Builder
	for _, a := range args[1:] {
		if b.Len() >= 128 {
			break
		}
		fmt.Fprintf(&b, "'%.*s' ", 128-b.Len(), a)
	}
	c.Error(fmt.Sprintf("ERR unknown command '%.128s', with args beginning with: %s", args[0], b.String()))
}

// protectedAllowed applies enable-debug-command / enable-module-command
// (no | yes | local) and writes Redis's refusal when not allowed.
func (c *Client) protectedAllowed(spec *command.Spec) bool {
	top := spec
	if spec.Parent != nil {
		top = spec.Parent
	}
	what, directive := "DEBUG", "enable-debug-command"
	if top.Name == "module" {
		what, directive = "MODULE", "enable-module-command"
	}
	switch c.srv.cfg.String(directive) {
	case "yes":
		return true
	case "local":
		if c.isLocal() {
			return true
		}
	}
	c.Error(fmt.Sprintf("ERR %s command not allowed. If the %s option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.", what, directive))
	return false
}

func (c *Client) isLocal() bool {
	ta, ok := c.guard.Conn.RemoteAddr().(*net.TCPAddr)
	return !ok || ta.IP.IsLoopback()
}

// rejudgedAfterRoleChange judges again a command that passed the checks
// before this node became a replica (it changes role with the gate closed,
// so a running command finished first), in processCommand's order: in
// cluster mode the new slot table redirects it first (a write paused by a
// manual failover gets MOVED to the new master, as in Redis, not
// READONLY), then the replica rules. It has answered the client when it
// returns false.
func (c *Client) rejudgedAfterRoleChange(spec *command.Spec, args [][]byte) bool {
	if c.srv.cluster != nil && !c.isMasterLink() && !c.routeCommand(spec, args) {
		return false
	}
	return c.replicationAllows(spec)
}
