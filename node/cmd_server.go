package node

import (
	"maps"
	"strconv"
	"time"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/internal/buildinfo"
)

// serverHandlers returns the handlers of the server-level commands, gathered
// from the files that implement them: INFO (cmd_info.go), CONFIG
// (cmd_config.go), CLIENT (cmd_client.go), COMMAND (cmd_command.go), DEBUG
// (cmd_debug.go and debug_*.go), SLOWLOG (cmd_slowlog.go), LATENCY
// (cmd_latency.go), MEMORY (cmd_memory.go), SHUTDOWN (cmd_shutdown.go),
// SAVE, BGSAVE and LASTSAVE (cmd_dump_save.go), and TIME and LOLWUT here.
func serverHandlers() map[string]HandlerFunc {
	all := map[string]HandlerFunc{
		"time":   cmdTime,
		"lolwut": cmdLolwut,
	}
	for _, group := range []map[string]HandlerFunc{
		infoHandlers(),
		configHandlers(),
		clientHandlers(),
		commandHandlers(),
		debugHandlers(),
		slowlogHandlers(),
		latencyHandlers(),
		memoryHandlers(),
		shutdownHandlers(),
		saveHandlers(),
		{"bgrewriteaof": cmdBgrewriteaof}, // node/aof.go
	} {
		maps.Copy(all, group)
	}
	return all
}

// attribute writes a RESP3 attribute header for n key/value pairs. Callers
// only send attributes to RESP3 clients; RESP2 has no such type.
func (c *Client) attribute(n int) { c.Aggregate('|', n) }

func cmdTime(c *Client, args [][]byte) {
	now := time.Now()
	c.Array(2)
	c.BulkInt(now.Unix())
	c.BulkInt(int64(now.Nanosecond() / 1000))
}

// LOLWUT [VERSION v]
func cmdLolwut(c *Client, args [][]byte) {
	version := Version
	if len(args) >= 3 && command.ArgEquals(args[1], "version") {
		v, ok := command.ParseInt64(args[2])
		if !ok || v < -1<<63 || v > 1<<63-1 {
			c.ErrNotInteger()
			return
		}
		version = strconv.FormatUint(uint64(uint32(v)), 10) + ".0.0"
	}
	c.Verbatim("Redis ver. "+version+"\nshoal ver. "+buildinfo.Version+"\n", "txt")
}
