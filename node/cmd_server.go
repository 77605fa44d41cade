package node

import (
	"bytes"
	"maps"
	"strings"
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

// replyHelp writes Redis's HELP reply (addReplyHelp): a header naming the
// command as the client spelled it, the given lines, and the HELP entry,
// all as status replies.
func (c *Client) replyHelp(args [][]byte, lines []string) {
	c.Array(len(lines) + 3)
	c.Status(strings.ToUpper(string(args[0])) + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
	for _, l := range lines {
		c.Status(l)
	}
	c.Status("HELP")
	c.Status("    Prints this help.")
}

// errSubcommandSyntax writes Redis's addReplySubcommandSyntaxError text.
func (c *Client) errSubcommandSyntax(args [][]byte) {
	c.Error("ERR unknown subcommand or wrong number of arguments for '" + truncate128(args[1]) +
		"'. Try " + strings.ToUpper(string(args[0])) + " HELP.")
}

// truncate128 returns at most the first 128 bytes of b, as Redis's "%.128s".
func truncate128(b []byte) string {
	if len(b) > 128 {
		b = b[:128]
	}
	return string(b)
}

// attribute writes a RESP3 attribute header for n key/value pairs. Callers
// only send attributes to RESP3 clients; RESP2 has no such type.
func (c *Client) attribute(n int) { c.Aggregate('|', n) }

// argEquals reports whether an argument equals word, ignoring ASCII case.
func argEquals(arg []byte, word string) bool {
	return len(arg) == len(word) && bytes.EqualFold(arg, []byte(word))
}
