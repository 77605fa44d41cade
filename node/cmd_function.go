package node

import "bytes"

// scriptingHandlers: the scripting group. Functions and Lua arrive with the
// scripting issue; until then the function library is always empty, and
// FUNCTION FLUSH — which Redis's test harness sends before every test file —
// empties it exactly as Redis does an empty library.
func scriptingHandlers() map[string]HandlerFunc {
	h := map[string]HandlerFunc{
		"function|flush": cmdFunctionFlush,
	}
	for name, fn := range scriptHandlers() { // EVAL and SCRIPT: node/script.go
		h[name] = fn
	}
	return h
}

// cmdFunctionFlush: FUNCTION FLUSH [ASYNC|SYNC].
func cmdFunctionFlush(c *Client, args [][]byte) {
	if len(args) > 3 {
		c.Error("ERR unknown subcommand or wrong number of arguments for 'flush'. Try FUNCTION HELP.")
		return
	}
	if len(args) == 3 && !bytes.EqualFold(args[2], []byte("async")) && !bytes.EqualFold(args[2], []byte("sync")) {
		c.Error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
		return
	}
	c.OK()
}
