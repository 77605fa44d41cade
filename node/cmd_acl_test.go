package node

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestACLDefaultUserCommands(t *testing.T) {
	s := startTestServer(t)
	tc := dialTest(t, s)
	assert.Equal(t, "$7\r\ndefault\r\n", tc.do("ACL", "WHOAMI"))
	assert.Equal(t, "*1\r\n$7\r\ndefault\r\n", tc.do("ACL", "USERS"))
	assert.Equal(t, "*1\r\n$34\r\nuser default on nopass ~* &* +@all\r\n", tc.do("ACL", "LIST"))
	require.Equal(t, "+OK\r\n", tc.do("CONFIG", "SET", "requirepass", "foo"))
	require.Equal(t, "+OK\r\n", tc.do("AUTH", "foo"))
	// sha256("foo"), as redis-server 7.0.15 lists it.
	assert.Equal(t, "*1\r\n$93\r\nuser default on #2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae ~* &* +@all\r\n",
		tc.do("ACL", "LIST"))

	for bits, chars := range map[string]int{"": 64, "1": 1, "5": 2, "8": 2, "4096": 1024} {
		args := []string{"ACL", "GENPASS"}
		if bits != "" {
			args = append(args, bits)
		}
		pass := bulkBody(t, tc.do(args...))
		assert.Len(t, pass, chars, bits)
		assert.Equal(t, strings.Trim(pass, "0123456789abcdef"), "", "hex: %q", pass)
	}
	assert.NotEqual(t, tc.do("ACL", "GENPASS"), tc.do("ACL", "GENPASS"))
	const bitsErr = "-ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096\r\n"
	assert.Equal(t, bitsErr, tc.do("ACL", "GENPASS", "0"))
	assert.Equal(t, bitsErr, tc.do("ACL", "GENPASS", "4097"))
	assert.Equal(t, "-ERR value is not an integer or out of range\r\n", tc.do("ACL", "GENPASS", "x"))
	assert.Equal(t, "-ERR unknown subcommand or wrong number of arguments for 'GENPASS'. Try ACL HELP.\r\n",
		tc.do("ACL", "GENPASS", "1", "2"))

	noFile := "-ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.\r\n"
	assert.Equal(t, noFile, tc.do("ACL", "LOAD"))
	assert.Equal(t, noFile, tc.do("ACL", "SAVE"))
	help := statusLines(t, tc.do("ACL", "HELP"))
	assert.Equal(t, "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", help[0])
	assert.Contains(t, help, "WHOAMI")
	assert.Contains(t, help, "SETUSER <username> <attribute> [<attribute> ...]")
}
