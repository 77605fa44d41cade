package node

import (
	"github.com/shoal-db/shoal/acl"
	"strings"
	"time"

	"github.com/shoal-db/shoal/command"
)

// CLIENT subcommands. Every connection is a "normal" client for now: shoal
// has no replicas, no master link and (yet) no Pub/Sub clients, so the other
// types select nobody. Killed clients whose goroutine has not finished yet
// are no longer listed, as Redis frees them at once.

func clientHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"client|id":           func(c *Client, args [][]byte) { c.Int(c.id) },
		"client|setname":      cmdClientSetName,
		"client|getname":      cmdClientGetName,
		"client|info":         func(c *Client, args [][]byte) { c.Verbatim(c.infoLine(args)+"\n", "txt") },
		"client|list":         cmdClientList,
		"client|kill":         cmdClientKill,
		"client|setinfo":      cmdClientSetInfo,
		"client|no-evict":     cmdClientNoEvict,
		"client|pause":        cmdClientPause,
		"client|unpause":      cmdClientUnpause,
		"client|reply":        cmdClientReply,
		"client|unblock":      cmdClientUnblock,
		"client|getredir":     cmdClientGetredir, // node/tracking.go
		"client|tracking":     cmdClientTracking,
		"client|caching":      cmdClientCaching,
		"client|trackinginfo": cmdClientTrackingInfo,
		"client|help":         func(c *Client, args [][]byte) { c.ReplyHelp(args, clientHelpLines) },
	}
}

var clientHelpLines = []string{
	"CACHING (YES|NO)",
	"    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
	"GETREDIR",
	"    Return the client ID we are redirecting to when tracking is enabled.",
	"GETNAME",
	"    Return the name of the current connection.",
	"ID",
	"    Return the ID of the current connection.",
	"INFO",
	"    Return information about the current client connection.",
	"KILL <ip:port>",
	"    Kill connection made from <ip:port>.",
	"KILL <option> <value> [<option> <value> [...]]",
	"    Kill connections. Options are:",
	"    * ADDR (<ip:port>|<unixsocket>:0)",
	"      Kill connections made from the specified address",
	"    * LADDR (<ip:port>|<unixsocket>:0)",
	"      Kill connections made to specified local address",
	"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
	"      Kill connections by type.",
	"    * USER <username>",
	"      Kill connections authenticated by <username>.",
	"    * SKIPME (YES|NO)",
	"      Skip killing current connection (default: yes).",
	"LIST [options ...]",
	"    Return information about client connections. Options:",
	"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
	"      Return clients of specified type.",
	"UNPAUSE",
	"    Stop the current client pause, resuming traffic.",
	"PAUSE <timeout> [WRITE|ALL]",
	"    Suspend all, or just write, clients for <timeout> milliseconds.",
	"REPLY (ON|OFF|SKIP)",
	"    Control the replies sent to the current connection.",
	"SETNAME <name>",
	"    Assign the name <name> to the current connection.",
	"UNBLOCK <clientid> [TIMEOUT|ERROR]",
	"    Unblock the specified blocked client.",
	"TRACKINGINFO",
	"    Report tracking status for the current connection.",
	"NO-EVICT (ON|OFF)",
	"    Protect current client connection from eviction.",
}

func cmdClientSetName(c *Client, args [][]byte) {
	name := args[2]
	if !validClientName(name) {
		c.Error("ERR Client names cannot contain spaces, newlines or special characters.")
		return
	}
	c.SetName(string(name))
	c.OK()
}

func cmdClientGetName(c *Client, args [][]byte) {
	if name := c.Name(); name != "" {
		c.BulkString(name)
		return
	}
	c.Null()
}

// clientType is a client class of CLIENT LIST TYPE and CLIENT KILL TYPE.
type clientType int

const (
	clientNormal clientType = iota
	clientReplica
	clientPubSub
	clientMaster
)

// parseClientType mirrors getClientTypeByName; ok is false for unknown names.
func parseClientType(b []byte) (clientType, bool) {
	switch strings.ToLower(string(b)) {
	case "normal":
		return clientNormal, true
	case "slave", "replica":
		return clientReplica, true
	case "pubsub":
		return clientPubSub, true
	case "master":
		return clientMaster, true
	}
	return 0, false
}

// kind returns the client's class. Every shoal connection is a normal one
// until Pub/Sub and replication exist.
func (c *Client) kind() clientType {
	k := clientType(c.replKind.Load())
	if k == clientNormal && c.subscribed() {
		return clientPubSub
	}
	return k
}

// liveClients returns the connected clients that were not killed, by id.
func (s *Server) liveClients() []*Client {
	all := s.Clients()
	live := all[:0]
	for _, cl := range all {
		if !cl.killed.Load() {
			live = append(live, cl)
		}
	}
	return live
}

func (s *Server) clientByID(id int64) *Client {
	s.mu.Lock()
	cl := s.clients[id]
	s.mu.Unlock()
	if cl == nil || cl.killed.Load() {
		return nil
	}
	return cl
}

func cmdClientList(c *Client, args [][]byte) {
	var b strings.Builder
	line := func(cl *Client) string {
		if cl == c {
			return cl.infoLine(args)
		}
		return cl.InfoLine()
	}
	switch {
	case len(args) == 2:
		for _, cl := range c.srv.liveClients() {
			b.WriteString(line(cl))
			b.WriteByte('\n')
		}
	case len(args) == 4 && command.ArgEquals(args[2], "type"):
		typ, ok := parseClientType(args[3])
		if !ok {
			c.Error("ERR Unknown client type '" + string(args[3]) + "'")
			return
		}
		for _, cl := range c.srv.liveClients() {
			if cl.kind() == typ {
				b.WriteString(line(cl))
				b.WriteByte('\n')
			}
		}
	case len(args) > 3 && command.ArgEquals(args[2], "id"):
		for _, a := range args[3:] {
			id, ok := command.ParseInt64(a)
			if !ok {
				c.Error("ERR Invalid client ID")
				return
			}
			if cl := c.srv.clientByID(id); cl != nil {
				b.WriteString(line(cl))
				b.WriteByte('\n')
			}
		}
	default:
		c.ErrSyntax()
		return
	}
	c.Verbatim(b.String(), "txt")
}

// clientFilter is the set of conditions of CLIENT KILL.
type clientFilter struct {
	addr, laddr string
	hasAddr     bool
	hasLaddr    bool
	typ         clientType
	hasType     bool
	id          int64
	user        *acl.User
	hasUser     bool
	skipMe      bool
}

func (f *clientFilter) matches(self, cl *Client) bool {
	cl.infoMu.Lock()
	addr, laddr := cl.addr, cl.laddr
	cl.infoMu.Unlock()
	switch {
	case f.hasAddr && addr != f.addr,
		f.hasLaddr && laddr != f.laddr,
		f.hasType && cl.kind() != f.typ,
		f.id != 0 && cl.id != f.id,
		f.hasUser && cl.user.Load() != f.user,
		cl == self && f.skipMe:
		return false
	}
	return true
}

func cmdClientKill(c *Client, args [][]byte) {
	f := clientFilter{skipMe: true}
	oldForm := len(args) == 3
	if oldForm {
		// CLIENT KILL addr: the old form may kill the calling client too.
		f.addr, f.hasAddr, f.skipMe = string(args[2]), true, false
	} else {
		for i := 2; i < len(args); i += 2 {
			if i+1 >= len(args) {
				c.ErrSyntax()
				return
			}
			opt, val := args[i], args[i+1]
			switch {
			case command.ArgEquals(opt, "id"):
				id, ok := command.ParseInt64(val)
				if !ok || id < 1 {
					c.Error("ERR client-id should be greater than 0")
					return
				}
				f.id = id
			case command.ArgEquals(opt, "type"):
				typ, ok := parseClientType(val)
				if !ok {
					c.Error("ERR Unknown client type '" + string(val) + "'")
					return
				}
				f.typ, f.hasType = typ, true
			case command.ArgEquals(opt, "addr"):
				f.addr, f.hasAddr = string(val), true
			case command.ArgEquals(opt, "laddr"):
				f.laddr, f.hasLaddr = string(val), true
			case command.ArgEquals(opt, "user"):
				u := c.srv.acl.Get(string(val))
				if u == nil {
					c.Error("ERR No such user '" + string(val) + "'")
					return
				}
				f.user, f.hasUser = u, true
			case command.ArgEquals(opt, "skipme"):
				switch {
				case command.ArgEquals(val, "yes"):
					f.skipMe = true
				case command.ArgEquals(val, "no"):
					f.skipMe = false
				default:
					c.ErrSyntax()
					return
				}
			default:
				c.ErrSyntax()
				return
			}
		}
	}
	killed, killSelf := 0, false
	for _, cl := range c.srv.liveClients() {
		if !f.matches(c, cl) {
			continue
		}
		if cl == c {
			killSelf = true
		} else {
			cl.kill()
		}
		killed++
	}
	if oldForm {
		if killed == 0 {
			c.Error("ERR No such client")
		} else {
			c.OK()
		}
	} else {
		c.Int(int64(killed))
	}
	if killSelf {
		// Like Redis: the reply is sent, then the connection is closed.
		c.CloseAfterReply()
	}
}

// cmdClientSetInfo is Redis 7.2's CLIENT SETINFO LIB-NAME|LIB-VER value,
// which clients such as go-redis send on connect.
func cmdClientSetInfo(c *Client, args [][]byte) {
	if len(args) != 4 {
		c.ErrArity("client|setinfo")
		return
	}
	attr, val := args[2], args[3]
	var isName bool
	switch {
	case command.ArgEquals(attr, "lib-name"):
		isName = true
	case command.ArgEquals(attr, "lib-ver"):
	default:
		c.Error("ERR Unrecognized option '" + string(attr) + "'")
		return
	}
	if !validClientName(val) {
		c.Error("ERR " + strings.ToLower(string(attr)) + " cannot contain spaces, newlines or special characters.")
		return
	}
	v := string(val)
	if isName {
		c.SetLib(&v, nil)
	} else {
		c.SetLib(nil, &v)
	}
	c.OK()
}

func cmdClientNoEvict(c *Client, args [][]byte) {
	switch {
	case command.ArgEquals(args[2], "on"):
		c.noEvict.Store(true)
	case command.ArgEquals(args[2], "off"):
		c.noEvict.Store(false)
	default:
		c.ErrSyntax()
		return
	}
	c.srv.updateClientMemory(c) // in or out of the eviction buckets (node/client_evict.go)
	c.OK()
}

func cmdClientPause(c *Client, args [][]byte) {
	if len(args) > 4 {
		c.ErrSubcommandSyntax(args)
		return
	}
	all := true
	if len(args) == 4 {
		switch {
		case command.ArgEquals(args[3], "write"):
			all = false
		case command.ArgEquals(args[3], "all"):
		default:
			c.Error("ERR CLIENT PAUSE mode must be WRITE or ALL")
			return
		}
	}
	ms, ok := c.ParseMillisTimeout(args[2])
	if !ok {
		return
	}
	// Bound the duration so that now+timeout cannot overflow time.Time.
	const maxPause = int64(100 * 365 * 24 * time.Hour / time.Millisecond)
	c.srv.pause.Pause(time.Duration(min(ms, maxPause))*time.Millisecond, all)
	c.OK()
}

func cmdClientUnpause(c *Client, args [][]byte) {
	c.srv.pause.Unpause()
	c.OK()
}

// cmdClientReply switches replies on, off, or off for the next command. OFF
// and SKIP are not answered (the dispatcher drops what follows).
func cmdClientReply(c *Client, args [][]byte) {
	switch {
	case command.ArgEquals(args[2], "on"):
		c.replyMode = replyOn
		c.OK()
	case command.ArgEquals(args[2], "off"):
		c.replyMode = replyOff
	case command.ArgEquals(args[2], "skip"):
		if c.replyMode != replyOff {
			c.replyMode = replySkip
		}
	default:
		c.ErrSyntax()
	}
}

// cmdClientUnblock ends the wait of a client blocked on keys (node/blocking.go).
func cmdClientUnblock(c *Client, args [][]byte) {
	if len(args) > 4 {
		c.ErrSubcommandSyntax(args)
		return
	}
	if len(args) == 4 && !command.ArgEquals(args[3], "timeout") && !command.ArgEquals(args[3], "error") {
		c.Error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
		return
	}
	id, ok := command.ParseInt64(args[2])
	if !ok {
		c.ErrNotInteger()
		return
	}
	if c.srv.unblockClient(id, len(args) == 4 && command.ArgEquals(args[3], "error")) {
		c.Int(1)
	} else {
		c.Int(0)
	}
}
