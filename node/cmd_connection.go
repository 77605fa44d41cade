package node

import (
	"strings"

	"github.com/shoal-db/shoal/acl"
	"github.com/shoal-db/shoal/command"
)

// connectionHandlers: PING, ECHO, QUIT, RESET, HELLO, AUTH, SELECT.
func connectionHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"ping":    cmdPing,
		"echo":    func(c *Client, args [][]byte) { c.Bulk(args[1]) },
		"quit":    cmdQuit,
		"reset":   cmdReset,
		"hello":   cmdHello,
		"auth":    cmdAuth,
		"select":  cmdSelect,
		"monitor": cmdMonitor, // node/monitor.go
	}
}

func cmdPing(c *Client, args [][]byte) {
	if len(args) > 2 {
		c.ErrArity("ping")
		return
	}
	if c.Proto == 2 && c.subscribed() { // RESP2 subscribe context: a two-element reply
		c.Array(2)
		c.BulkString("pong")
		if len(args) == 2 {
			c.Bulk(args[1])
		} else {
			c.BulkString("")
		}
		return
	}
	if len(args) == 2 {
		c.Bulk(args[1])
		return
	}
	c.Status("PONG")
}

func cmdQuit(c *Client, args [][]byte) {
	c.OK()
	c.CloseAfterReply()
}

// cmdReset puts the connection back in its just-connected state.
func cmdReset(c *Client, args [][]byte) {
	c.dbIndex.Store(0)
	c.setResp(2)
	c.SetName("")
	c.replyMode = replyOn
	c.noEvict.Store(false)
	c.discardTransaction()
	c.srv.tx.watch.unwatchAll(c)
	c.unsubscribeAll() // node/pubsub.go
	c.stopMonitoring() // node/monitor.go
	c.trackingClosed() // node/tracking.go
	c.user.Store(c.srv.acl.Default())
	c.authenticated = c.srv.defaultAuthenticated()
	c.Status("RESET")
}

func cmdHello(c *Client, args [][]byte) {
	ver := int64(0)
	if len(args) >= 2 {
		v, ok := command.ParseInt64(args[1])
		if !ok {
			c.Error("ERR Protocol version is not an integer or out of range")
			return
		}
		ver = v
		if ver < 2 || ver > 3 {
			c.Error("NOPROTO unsupported protocol version")
			return
		}
	}
	// Options apply in order, as Redis's helloCommand: AUTH authenticates
	// at once, SETNAME names the client at once.
	for i := 2; i < len(args); i++ {
		more := len(args) - i - 1
		switch {
		case command.EqualFoldASCII(args[i], "auth") && more >= 2:
			if !c.authenticate(args[i+1], args[i+2], args[0]) { // node/acl.go
				return
			}
			i += 2
		case command.EqualFoldASCII(args[i], "setname") && more >= 1:
			if !validClientName(args[i+1]) {
				c.Error("ERR Client names cannot contain spaces, newlines or special characters.")
				return
			}
			c.SetName(string(args[i+1]))
			i++
		default:
			c.Error("ERR Syntax error in HELLO option '" + string(args[i]) + "'")
			return
		}
	}
	if !c.authenticated {
		c.Error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if ver != 0 {
		c.setResp(int(ver))
	}
	c.Map(7)
	c.BulkString("server")
	c.BulkString("redis")
	c.BulkString("version")
	c.BulkString(Version)
	c.BulkString("proto")
	c.Int(int64(c.Proto))
	c.BulkString("id")
	c.Int(c.id)
	c.BulkString("mode")
	c.BulkString(c.srv.mode())
	c.BulkString("role")
	c.BulkString("master")
	c.BulkString("modules")
	c.Array(0)
}

// mode is "cluster" or "standalone" (HELLO, INFO redis_mode).
func (s *Server) mode() string {
	if s.cfg.Bool("cluster-enabled") {
		return "cluster"
	}
	return "standalone"
}

// validClientName: no spaces, newlines or characters outside '!'..'~'.
func validClientName(name []byte) bool {
	for _, b := range name {
		if b < '!' || b > '~' {
			return false
		}
	}
	return true
}

func cmdAuth(c *Client, args [][]byte) {
	if len(args) > 3 {
		c.ErrSyntax()
		return
	}
	user, pass := []byte(acl.DefaultUserName), args[1]
	if len(args) == 3 {
		user, pass = args[1], args[2]
	} else if c.srv.acl.Default().State().NoPass() {
		c.Error("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
		return
	}
	if c.authenticate(user, pass, args[0]) { // node/acl.go
		c.OK()
	}
}

func cmdSelect(c *Client, args [][]byte) {
	n, ok := command.ParseDBIndex(&c.Ctx, args[1], "")
	if !ok {
		return
	}
	if c.srv.cfg.Bool("cluster-enabled") && n != 0 {
		c.Error("ERR SELECT is not allowed in cluster mode")
		return
	}
	if !c.ValidDB(n) {
		c.Error("ERR DB index is out of range")
		return
	}
	c.dbIndex.Store(int32(n))
	c.OK()
}

// upper is a small helper for messages that quote a command in capitals.
func upper(b []byte) string { return strings.ToUpper(string(b)) }
