package node

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"

	"github.com/shoal-db/shoal/command"
)

// ACL and MODULE: the subcommands whose answer is already Redis's while
// shoal has only the default user (requirepass) and cannot load modules.
// The other ACL subcommands (SETUSER, GETUSER, DELUSER, CAT, DRYRUN, LOG)
// have no handler and answer Redis's unknown-subcommand error until issue
// 20 builds ACL users; the "user" and "aclfile" directives are refused
// (config/unbuilt.go), so the default user is the only user there is.

func aclModuleHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"acl|help":      func(c *Client, args [][]byte) { c.ReplyHelp(args, aclHelpLines) },
		"acl|whoami":    func(c *Client, _ [][]byte) { c.BulkString(defaultUser) },
		"acl|users":     func(c *Client, _ [][]byte) { c.StringArray([]string{defaultUser}) },
		"acl|list":      cmdACLList,
		"acl|genpass":   cmdACLGenpass,
		"acl|load":      cmdACLNoFile,
		"acl|save":      cmdACLNoFile,
		"module|help":   func(c *Client, args [][]byte) { c.ReplyHelp(args, moduleHelpLines) },
		"module|list":   func(c *Client, _ [][]byte) { c.Array(0) },
		"module|load":   cmdModuleLoad,
		"module|loadex": cmdModuleLoad,
		"module|unload": func(c *Client, _ [][]byte) {
			c.Error("ERR Error unloading module: no such module with that name")
		},
	}
}

// defaultUser is the name of the one user shoal has.
const defaultUser = "default"

// aclHelpLines are Redis 7.0.15's ACL HELP lines of the subcommands shoal
// answers.
var aclHelpLines = []string{
	"GENPASS [<bits>]",
	"    Generate a secure 256-bit user password. The optional `bits` argument can",
	"    be used to specify a different size.",
	"LIST",
	"    Show users details in config file format.",
	"LOAD",
	"    Reload users from the ACL file.",
	"SAVE",
	"    Save the current config to the ACL file.",
	"USERS",
	"    List all the registered usernames.",
	"WHOAMI",
	"    Return the current connection username.",
}

var moduleHelpLines = []string{
	"LIST",
	"    Return a list of loaded modules.",
	"LOAD <path> [<arg> ...]",
	"    Load a module library from <path>, passing to it any optional arguments.",
	"LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
	"    Load a module library from <path>, while passing it module configurations and optional arguments.",
	"UNLOAD <name>",
	"    Unload a module.",
}

// cmdACLList describes the default user as Redis does: all keys, channels
// and commands, with requirepass as its only password.
func cmdACLList(c *Client, _ [][]byte) {
	pass := "nopass"
	if p := c.srv.cfg.String("requirepass"); p != "" {
		sum := sha256.Sum256([]byte(p))
		pass = "#" + hex.EncodeToString(sum[:])
	}
	c.StringArray([]string{"user " + defaultUser + " on " + pass + " ~* &* +@all"})
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

// cmdACLNoFile: aclfile is refused at start-up, so there is never an ACL
// file to load or save.
func cmdACLNoFile(c *Client, _ [][]byte) {
	c.Error("ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.")
}

// cmdModuleLoad answers MODULE LOAD and LOADEX as Redis does when the
// library cannot be loaded, and logs why, as Redis logs dlopen's error.
func cmdModuleLoad(c *Client, args [][]byte) {
	c.srv.log.Warn("Module " + string(args[2]) + " failed to load: shoal cannot load Redis modules (native C extensions)")
	c.Error("ERR Error loading the extension. Please check the server logs.")
}
