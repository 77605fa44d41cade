package node

// MODULE: shoal cannot load Redis modules (native C extensions); these
// are Redis's answers when none is loaded and a load fails.

func moduleHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"module|help":   func(c *Client, args [][]byte) { c.ReplyHelp(args, moduleHelpLines) },
		"module|list":   func(c *Client, _ [][]byte) { c.Array(0) },
		"module|load":   cmdModuleLoad,
		"module|loadex": cmdModuleLoad,
		"module|unload": func(c *Client, _ [][]byte) {
			c.Error("ERR Error unloading module: no such module with that name")
		},
	}
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

// cmdModuleLoad answers MODULE LOAD and LOADEX as Redis does when the
// library cannot be loaded, and logs why, as Redis logs dlopen's error.
func cmdModuleLoad(c *Client, args [][]byte) {
	c.srv.log.Warn("Module " + string(args[2]) + " failed to load: shoal cannot load Redis modules (native C extensions)")
	c.Error("ERR Error loading the extension. Please check the server logs.")
}
