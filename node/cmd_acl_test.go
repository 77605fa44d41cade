package node

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shoal-db/shoal/internal/testharness"

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

// BenchmarkDispatchACL is the dispatcher's cost of one SET and one GET
// (lookup, checks, locks, handler, statistics; no socket) as the default
// user (every permission: one flag test) and as a user restricted to
// ~key:* (every key matched against the pattern). The two users run in
// alternating blocks and each reports its fastest block (ns/op of the
// default and restricted user, and their ratio): on a shared machine the
// minimum is what the code costs, the rest is other load.
func BenchmarkDispatchACL(b *testing.B) {
	s := startTestServer(b)
	ctl := dialTest(b, s)
	if got := ctl.do("ACL", "SETUSER", "bench", "on", ">pw", "~key:*", "+@all"); got != "+OK\r\n" {
		b.Fatalf("ACL SETUSER: %q", got)
	}
	ctl.do("SET", "key:000000123456", strings.Repeat("x", 32)) // GET alone finds it
	clients := map[string]*Client{}
	for _, user := range []string{"default", "bench"} {
		tc := dialTest(b, s)
		if user != "default" {
			if got := tc.do("AUTH", user, "pw"); got != "+OK\r\n" {
				b.Fatalf("AUTH: %q", got)
			}
		}
		tc.do("CLIENT", "SETNAME", "bench-"+user)
		clients[user] = serverClient(b, s, "bench-"+user)
	}
	for _, cmd := range [][][]byte{
		{[]byte("SET"), []byte("key:000000123456"), []byte("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")},
		{[]byte("GET"), []byte("key:000000123456")},
	} {
		b.Run(string(cmd[0]), func(b *testing.B) {
			const block = 2000
			best := map[string]float64{}
			// The connections' goroutines sit in socket reads: the
			// benchmark runs their commands in their place.
			for done := 0; done < b.N; done += 2 * block {
				for _, user := range []string{"default", "bench"} {
					c := clients[user]
					start := time.Now()
					for i := 0; i < block; i++ {
						c.Out = c.Out[:0]
						c.run(cmd)
					}
					ns := float64(time.Since(start).Nanoseconds()) / block
					if best[user] == 0 || ns < best[user] {
						best[user] = ns
					}
					if !strings.HasPrefix(string(c.Out), "+OK") && !strings.HasPrefix(string(c.Out), "$32") {
						b.Fatalf("reply %q", c.Out)
					}
				}
			}
			b.ReportMetric(best["default"], "default-ns/op")
			b.ReportMetric(best["bench"], "restricted-ns/op")
			b.ReportMetric(best["bench"]/best["default"], "restricted/default")
		})
	}
}

// A user's rules change while its connections run commands: every command
// sees either the old or the new rules (go test -race checks the swap),
// the INFO counters count the denials, and deleting the user closes them.
func TestACLRulesChangeUnderTraffic(t *testing.T) {
	s := startTestServer(t)
	ctl := dialTest(t, s)
	require.Equal(t, "+OK\r\n", ctl.do("ACL", "SETUSER", "u", "on", ">pw", "~k*", "+@all"))
	users := make([]*testConn, 3)
	for i := range users {
		users[i] = dialTest(t, s)
		require.Equal(t, "+OK\r\n", users[i].do("AUTH", "u", "pw"))
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 200; i++ {
			rule := "~k*"
			if i%2 == 1 {
				rule = "~x*"
			}
			ctl.do("ACL", "SETUSER", "u", "resetkeys", rule)
		}
	}()
	denied := 0
	for i := 0; i < 300; i++ {
		switch got := users[i%3].do("SET", "k1", "v"); got {
		case "+OK\r\n":
		case "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n":
			denied++
		default:
			t.Fatalf("SET: %q", got)
		}
	}
	<-done
	info := ctl.do("INFO", "stats")
	assert.Contains(t, info, fmt.Sprintf("acl_access_denied_key:%d\r\n", denied))
	require.Equal(t, ":1\r\n", ctl.do("ACL", "DELUSER", "u"))
	for _, u := range users {
		testharness.WaitFor(t, 10*time.Second, "the deleted user's connection to close", func() bool {
			if _, err := u.c.Write([]byte("PING\r\n")); err != nil {
				return true
			}
			_, err := u.r.ReadString('\n')
			return err != nil
		})
	}
}

// The slow log hides secrets as Redis does: AUTH's arguments, HELLO's AUTH
// user and password, ACL SETUSER's user and rules, MIGRATE's AUTH/AUTH2.
func TestSlowlogRedactsSecretsAsRedis(t *testing.T) {
	session := func(addr string) []string {
		c := dialTestAddr(t, addr)
		c.do("ACL", "SETUSER", "u", "on", ">pw", "+@all", "~*")
		c.do("CONFIG", "SET", "slowlog-log-slower-than", "0")
		c.do("SLOWLOG", "RESET")
		c.do("AUTH", "u", "wrong")
		c.do("AUTH", "u", "pw")
		c.do("HELLO", "2", "AUTH", "u", "pw", "SETNAME", "n")
		c.do("ACL", "SETUSER", "v", "on", ">secret")
		c.do("MIGRATE", "127.0.0.1", "1", "", "0", "10", "AUTH2", "user", "pass", "KEYS", "a")
		c.do("CONFIG", "SET", "slowlog-log-slower-than", "-1")
		v, err := testharness.ParseValue(c.do("SLOWLOG", "GET"))
		require.NoError(t, err)
		var out []string
		for _, e := range v.([]any) {
			out = append(out, fmt.Sprint(e.([]any)[3]))
		}
		return out
	}
	want := session(startRealRedis(t))
	require.Len(t, want, 6, "SLOWLOG RESET, two AUTH, HELLO, ACL SETUSER, MIGRATE: %q", want)
	assert.Contains(t, want[0], "(redacted)")
	got := session(startTestServer(t).Addr().String())
	assert.Equal(t, want, got)
}
