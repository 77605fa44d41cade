package node

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/shoal-db/shoal/acl"
	"github.com/shoal-db/shoal/command"
)

// ACL: users, rules and the log are package acl's; these handlers give
// Redis 7.0.15's replies (acl.c aclCommand).

func aclHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"acl|help":    func(c *Client, args [][]byte) { c.ReplyHelp(args, aclHelpLines) },
		"acl|setuser": cmdACLSetuser,
		"acl|deluser": cmdACLDeluser,
		"acl|getuser": cmdACLGetuser,
		"acl|list":    func(c *Client, _ [][]byte) { cmdACLList(c, false) },
		"acl|users":   func(c *Client, _ [][]byte) { cmdACLList(c, true) },
		"acl|whoami":  cmdACLWhoami,
		"acl|cat":     cmdACLCat,
		"acl|genpass": cmdACLGenpass,
		"acl|log":     cmdACLLog,
		"acl|dryrun":  cmdACLDryrun,
		"acl|load":    cmdACLLoad,
		"acl|save":    cmdACLSave,
	}
}

var aclHelpLines = []string{
	"CAT [<category>]",
	"    List all commands that belong to <category>, or all command categories",
	"    when no category is specified.",
	"DELUSER <username> [<username> ...]",
	"    Delete a list of users.",
	"DRYRUN <username> <command> [<arg> ...]",
	"    Returns whether the user can execute the given command without executing the command.",
	"GETUSER <username>",
	"    Get the user's details.",
	"GENPASS [<bits>]",
	"    Generate a secure 256-bit user password. The optional `bits` argument can",
	"    be used to specify a different size.",
	"LIST",
	"    Show users details in config file format.",
	"LOAD",
	"    Reload users from the ACL file.",
	"LOG [<count> | RESET]",
	"    Show the ACL log entries.",
	"SAVE",
	"    Save the current config to the ACL file.",
	"SETUSER <username> <attribute> [<attribute> ...]",
	"    Create or modify a user with the specified attributes.",
	"USERS",
	"    List all the registered usernames.",
	"WHOAMI",
	"    Return the current connection username.",
}

func cmdACLSetuser(c *Client, args [][]byte) {
	ops := make([]string, len(args)-3)
	for i, a := range args[3:] {
		ops[i] = string(a)
	}
	ch, err := c.srv.acl.SetUser(string(args[2]), ops)
	if err != nil {
		c.Error("ERR " + err.Error())
		return
	}
	c.srv.closeRevokedSubscribers(c, ch) // node/acl.go
	c.OK()
}

func cmdACLDeluser(c *Client, args [][]byte) {
	names := make([]string, len(args)-2)
	for i, a := range args[2:] {
		names[i] = string(a)
	}
	gone, err := c.srv.acl.DelUsers(names)
	if err != nil {
		c.Error("ERR " + err.Error())
		return
	}
	c.srv.closeUserClients(c, gone) // node/acl.go
	c.Int(int64(len(gone)))
}

func cmdACLGetuser(c *Client, args [][]byte) {
	u := c.srv.acl.Get(string(args[2]))
	if u == nil {
		c.Null()
		return
	}
	st := u.State()
	sels := st.Selectors(c.srv.acl.Commands())
	c.Map(6)
	c.BulkString("flags")
	flags := st.Flags()
	c.Set(len(flags))
	for _, f := range flags {
		c.BulkString(f)
	}
	c.BulkString("passwords")
	c.StringArray(st.Passwords())
	aclSelectorReply(c, sels[0])
	c.BulkString("selectors")
	c.Array(len(sels) - 1)
	for _, s := range sels[1:] {
		c.Map(3)
		aclSelectorReply(c, s)
	}
}

// aclSelectorReply writes GETUSER's three fields of a selector.
func aclSelectorReply(c *Client, s acl.SelectorView) {
	c.BulkString("commands")
	c.BulkString(s.Commands)
	c.BulkString("keys")
	c.BulkString(s.Keys)
	c.BulkString("channels")
	c.BulkString(s.Channels)
}

func cmdACLList(c *Client, namesOnly bool) {
	users := c.srv.acl.Users()
	c.Array(len(users))
	for _, u := range users {
		if namesOnly {
			c.BulkString(u.Name())
		} else {
			c.BulkString("user " + u.Name() + " " + u.State().Description())
		}
	}
}

func cmdACLWhoami(c *Client, _ [][]byte) {
	u := c.user.Load()
	if u == nil {
		c.Null()
		return
	}
	c.BulkString(u.Name())
}

func cmdACLCat(c *Client, args [][]byte) {
	switch len(args) {
	case 2:
		c.Array(len(command.ACLCatNames))
		for _, cat := range command.ACLCatNames {
			c.BulkString(cat.Name)
		}
	case 3:
		cat := acl.Category(string(args[2]))
		if cat == 0 {
			c.Error(fmt.Sprintf("ERR Unknown category '%.128s'", args[2]))
			return
		}
		c.StringArray(c.srv.acl.Commands().InCategory(cat))
	default:
		c.ErrSubcommandSyntax(args)
	}
}

func cmdACLLog(c *Client, args [][]byte) {
	if len(args) > 3 {
		c.ErrSubcommandSyntax(args)
		return
	}
	count := int64(10)
	if len(args) == 3 {
		if command.EqualFoldASCII(args[2], "reset") {
			c.srv.acl.Log.Reset()
			c.OK()
			return
		}
		n, ok := command.ParseInt64(args[2])
		if !ok {
			c.ErrNotInteger()
			return
		}
		count = max(n, 0)
	}
	entries := c.srv.acl.Log.Entries(int(min(count, 1<<30)))
	now := time.Now()
	c.Array(len(entries))
	for _, e := range entries {
		c.Map(7)
		c.BulkString("count")
		c.Int(e.Count)
		c.BulkString("reason")
		c.BulkString(e.Reason.ReasonText())
		c.BulkString("context")
		c.BulkString(e.Context.String())
		c.BulkString("object")
		c.BulkString(e.Object)
		c.BulkString("username")
		c.BulkString(e.Username)
		c.BulkString("age-seconds")
		c.Double(float64(now.UnixMilli()-e.At.UnixMilli()) / 1000)
		c.BulkString("client-info")
		c.BulkString(e.ClientInfo)
	}
}

func cmdACLDryrun(c *Client, args [][]byte) {
	u := c.srv.acl.Get(string(args[2]))
	if u == nil {
		c.Error("ERR User '" + string(args[2]) + "' not found")
		return
	}
	cmdArgs := args[3:]
	spec, unknownSub := c.srv.table.lookup(cmdArgs)
	if spec == nil || unknownSub {
		c.Error("ERR Command '" + string(args[3]) + "' not found")
		return
	}
	if !spec.ArityOK(len(cmdArgs)) {
		c.Error("ERR wrong number of arguments for '" + spec.FullName() + "' command")
		return
	}
	keys := aclKeySource{spec: spec, args: cmdArgs}
	r, pos := u.State().Check(spec, cmdArgs, &keys)
	switch r {
	case acl.OK:
		c.OK()
	case acl.DeniedCmd:
		c.BulkString("This user has no permissions to run the '" + spec.FullName() + "' command")
	case acl.DeniedKey:
		c.BulkString("This user has no permissions to access the '" + string(cmdArgs[pos]) + "' key")
	default:
		c.BulkString("This user has no permissions to access the '" + string(cmdArgs[pos]) + "' channel")
	}
}

// errNoACLFile is ACL LOAD and SAVE's answer without an aclfile.
const errNoACLFile = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration."

func cmdACLLoad(c *Client, _ [][]byte) {
	file := c.srv.cfg.String("aclfile")
	if file == "" {
		c.Error(errNoACLFile)
		return
	}
	replaced, msg := c.srv.acl.LoadFile(file, file)
	if msg != "" {
		c.Error("ERR " + msg)
		return
	}
	c.srv.closeUserClients(c, replaced)
	c.OK()
}

func cmdACLSave(c *Client, _ [][]byte) {
	file := c.srv.cfg.String("aclfile")
	if file == "" {
		c.Error(errNoACLFile)
		return
	}
	if err := c.srv.acl.SaveFile(file); err != nil {
		c.srv.log.Warn(err.Error())
		c.Error("ERR There was an error trying to save the ACLs. Please check the server logs for more information")
		return
	}
	c.OK()
}

// genpassMaxBits is Redis's GENPASS_MAX_BITS.
const genpassMaxBits = 4096

func cmdACLGenpass(c *Client, args [][]byte) {
	if len(args) > 3 {
		c.ErrSubcommandSyntax(args)
		return
	}
	bits := int64(256)
	if len(args) == 3 {
		n, ok := command.ParseInt64(args[2])
		if !ok {
			c.ErrNotInteger()
			return
		}
		bits = n
	}
	if bits <= 0 || bits > genpassMaxBits {
		c.Error("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096")
		return
	}
	chars := (bits + 3) / 4
	raw := make([]byte, (chars+1)/2)
	_, _ = rand.Read(raw) // crypto/rand.Read does not fail on Linux
	c.BulkString(hex.EncodeToString(raw)[:chars])
}
