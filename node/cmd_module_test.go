package node

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// statusLines splits an array of simple strings (a HELP reply).
func statusLines(t *testing.T, reply string) []string {
	t.Helper()
	parts := strings.Split(strings.TrimSuffix(reply, "\r\n"), "\r\n")
	require.True(t, strings.HasPrefix(parts[0], "*"), "not an array: %q", reply)
	out := make([]string, 0, len(parts)-1)
	for _, p := range parts[1:] {
		require.True(t, strings.HasPrefix(p, "+"), "not a simple string: %q in %q", p, reply)
		out = append(out, p[1:])
	}
	return out
}

// Every container command answers HELP, and every subcommand its HELP
// names is one shoal accepts (has a handler): HELP never advertises what
// answers "unknown subcommand".
func TestEveryHelpListsOnlyAcceptedSubcommands(t *testing.T) {
	s := startTestServer(t, "--cluster-enabled", "yes", "--cluster-config-file", t.TempDir()+"/nodes.conf",
		"--enable-module-command", "yes")
	tc := dialTest(t, s)
	checked := 0
	for _, spec := range s.table.all {
		if !spec.IsContainer() {
			continue
		}
		name := strings.ToUpper(spec.Name)
		help := spec.Subcommands["help"]
		if !assert.True(t, help != nil && help.Handler != nil, "%s HELP has no handler", name) {
			continue
		}
		lines := statusLines(t, tc.do(name, "HELP"))
		require.Equal(t, name+" <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", lines[0])
		require.Equal(t, []string{"HELP", "    Prints this help."}, lines[len(lines)-2:], name)
		for _, l := range lines[1:] {
			if strings.HasPrefix(l, " ") || strings.HasPrefix(l, "(no subcommand)") {
				continue // a description, or COMMAND without subcommand
			}
			word := strings.ToLower(strings.Fields(l)[0])
			sub := spec.Subcommands[word]
			assert.True(t, sub != nil && sub.Handler != nil, "%s HELP lists %s, which shoal does not accept", name, word)
		}
		checked++
	}
	// acl client cluster command config function latency memory module
	// object pubsub script slowlog xgroup xinfo
	assert.GreaterOrEqual(t, checked, 15)
}

func TestModuleCommands(t *testing.T) {
	s := startTestServer(t, "--enable-module-command", "yes")
	tc := dialTest(t, s)
	assert.Equal(t, "*0\r\n", tc.do("MODULE", "LIST"))
	const loadErr = "-ERR Error loading the extension. Please check the server logs.\r\n"
	assert.Equal(t, loadErr, tc.do("MODULE", "LOAD", "/usr/lib/redis/modules/redisbloom.so"))
	assert.Equal(t, loadErr, tc.do("MODULE", "LOAD", "/x.so", "arg1", "arg2"))
	assert.Equal(t, loadErr, tc.do("MODULE", "LOADEX", "/x.so", "CONFIG", "a", "b", "ARGS", "c"))
	assert.Equal(t, "-ERR Error unloading module: no such module with that name\r\n", tc.do("MODULE", "UNLOAD", "bf"))
	assert.Equal(t, "*0\r\n", tc.do("MODULE", "LIST"), "nothing was loaded")
	assert.Equal(t, "-ERR wrong number of arguments for 'module|list' command\r\n", tc.do("MODULE", "LIST", "x"))
	assert.Equal(t, "-ERR unknown subcommand 'foo'. Try MODULE HELP.\r\n", tc.do("MODULE", "foo"))
	help := statusLines(t, tc.do("MODULE", "HELP"))
	assert.Equal(t, []string{"MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"LIST", "    Return a list of loaded modules.",
		"LOAD <path> [<arg> ...]", "    Load a module library from <path>, passing to it any optional arguments.",
		"LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
		"    Load a module library from <path>, while passing it module configurations and optional arguments.",
		"UNLOAD <name>", "    Unload a module.", "HELP", "    Prints this help."}, help)

	// enable-module-command no (the default) protects LOAD/LOADEX/UNLOAD
	// only, as in Redis.
	s2 := startTestServer(t)
	tc2 := dialTest(t, s2)
	assert.Equal(t, "*0\r\n", tc2.do("MODULE", "LIST"))
	assert.True(t, strings.HasPrefix(tc2.do("MODULE", "LOAD", "/x.so"), "-ERR MODULE command not allowed."))
}
