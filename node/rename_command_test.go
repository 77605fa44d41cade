package node

import (
	"strings"
	"testing"
)

// rename-command (a configuration line only): the command answers to its
// new name only, "" removes it; COMMAND COUNT/INFO and scripts follow; the
// server's own effect commands keep working under the original names.
func TestRenameCommand(t *testing.T) {
	plain := dialTest(t, startTestServer(t))
	s := startTestServer(t, "--rename-command", "config", "myconfig", "--rename-command", "flushall", "",
		"--rename-command", "set", "myset")
	c := dialTest(t, s)

	if got := c.do("CONFIG", "GET", "port"); got != "-ERR unknown command 'CONFIG', with args beginning with: 'GET' 'port' \r\n" {
		t.Fatalf("CONFIG after renaming = %q", got)
	}
	if got := c.do("MYCONFIG", "GET", "maxclients"); got != "*2\r\n$10\r\nmaxclients\r\n$5\r\n10000\r\n" {
		t.Fatalf("MYCONFIG GET maxclients = %q", got)
	}
	if got := c.do("MYCONFIG", "nosuch"); got != "-ERR unknown subcommand 'nosuch'. Try MYCONFIG HELP.\r\n" {
		t.Fatalf("MYCONFIG nosuch = %q", got)
	}
	if got := c.do("FLUSHALL"); !strings.HasPrefix(got, "-ERR unknown command 'FLUSHALL'") {
		t.Fatalf("FLUSHALL renamed to \"\" = %q", got)
	}
	// Removing a command lowers COMMAND COUNT; renaming keeps it.
	if got, want := c.do("COMMAND", "COUNT"), plain.do("COMMAND", "COUNT"); atoi([]byte(got[1:len(got)-2])) != atoi([]byte(want[1:len(want)-2]))-1 {
		t.Fatalf("COMMAND COUNT = %q, without renames %q", got, want)
	}
	// COMMAND INFO finds it by the new name and shows its own (Redis's
	// fullname); the old name is unknown.
	if got := c.do("COMMAND", "INFO", "myconfig", "config", "flushall"); !strings.HasPrefix(got, "*3\r\n*10\r\n$6\r\nconfig\r\n") ||
		!strings.HasSuffix(got, "$-1\r\n$-1\r\n") {
		t.Fatalf("COMMAND INFO myconfig config flushall = %q", got)
	}
	if got := c.do("EVAL", "return redis.call('set','k','v')", "0"); !strings.HasPrefix(got, "-ERR Unknown Redis command called from script") {
		t.Fatalf("redis.call('set') after renaming = %q", got)
	}
	if got := c.do("EVAL", "return redis.call('myset','k','1')", "0"); got != "+OK\r\n" {
		t.Fatalf("redis.call('myset') = %q", got)
	}

	// INCRBYFLOAT's effect is a SET the server builds: WATCH still sees it.
	c.do("WATCH", "k")
	other := dialTest(t, s)
	if got := other.do("INCRBYFLOAT", "k", "1.5"); got != "$3\r\n2.5\r\n" {
		t.Fatalf("INCRBYFLOAT = %q", got)
	}
	c.do("MULTI")
	c.do("MYSET", "k", "x")
	if got := c.do("EXEC"); got != "*-1\r\n" {
		t.Fatalf("EXEC after a watched key changed through an effect = %q", got)
	}
}
