package integration

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/shoal-db/shoal/internal/testharness"
	"github.com/stretchr/testify/require"
)

// rawConn is one RESP connection whose replies are kept byte for byte.
type rawConn struct {
	t  *testing.T
	c  net.Conn
	rd *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, rd: bufio.NewReader(c)}
}

// do sends a command and returns its raw reply, or "<closed>" when the
// server closed the connection instead of answering.
func (rc *rawConn) do(args ...string) string {
	var req bytes.Buffer
	fmt.Fprintf(&req, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&req, "$%d\r\n%s\r\n", len(a), a)
	}
	_ = rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := rc.c.Write(req.Bytes()); err != nil {
		return "<closed>"
	}
	return rc.read()
}

func (rc *rawConn) read() string {
	var out bytes.Buffer
	if err := testharness.ReadRaw(rc.rd, &out); err != nil {
		return "<closed>"
	}
	return out.String()
}

// aclLogFields keeps the fields of ACL LOG entries that do not depend on
// the connection (not age-seconds and client-info).
func aclLogFields(t *testing.T, raw string) string {
	v, err := testharness.ParseValue(raw)
	require.NoError(t, err, raw)
	var b strings.Builder
	for _, e := range v.([]any) {
		kv := e.([]any)
		for i := 0; i+1 < len(kv); i += 2 {
			switch k := fmt.Sprint(kv[i]); k {
			case "age-seconds", "client-info":
			default:
				fmt.Fprintf(&b, "%s=%v ", k, kv[i+1])
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// sortedArray returns the elements of an array reply sorted (Redis lists
// ACL CAT in its command table's hash order).
func sortedArray(t *testing.T, raw string) string {
	v, err := testharness.ParseValue(raw)
	require.NoError(t, err, raw)
	var s []string
	for _, e := range v.([]any) {
		s = append(s, fmt.Sprint(e))
	}
	sort.Strings(s)
	return strings.Join(s, " ")
}

// aclTranscript is one scripted ACL session: requirepass, users from the
// configuration and from ACL SETUSER, key patterns with %R/%W, channel
// patterns, selectors, NOPERM in and out of MULTI and scripts, WRONGPASS,
// ACL LOG, DRYRUN, GETUSER, LIST, DELUSER closing the user's connection.
// Rules keep at most one single command per selector: Redis emits single
// commands in its command table's hash order, which changes per process.
func aclTranscript(t *testing.T, addr string) []string {
	var out []string
	rec := func(s string) { out = append(out, s) }
	// requirepass as set at run time (the harnesses wait for PING).
	rec(dialRaw(t, addr).do("CONFIG", "SET", "requirepass", "adminpw"))
	admin := dialRaw(t, addr)
	rec(admin.do("PING"))
	rec(admin.do("AUTH", "wrong"))
	rec(admin.do("AUTH", "adminpw"))
	rec(admin.do("AUTH", "default", "adminpw"))
	rec(admin.do("ACL", "WHOAMI"))
	rec(admin.do("ACL", "LOG", "RESET"))
	rec(admin.do("ACL", "SETUSER", "alice", "on", ">apw", "~app:*", "%R~shared:*", "%W~log:*", "&chan:*",
		"-@all", "+@string", "+@list", "+@scripting", "+@transaction", "+@connection", "+@pubsub", "-getdel", "(+get ~sel:*)"))
	rec(admin.do("ACL", "GETUSER", "alice"))
	rec(admin.do("ACL", "GETUSER", "reader"))
	rec(admin.do("ACL", "LIST"))
	rec(admin.do("ACL", "USERS"))

	alice := dialRaw(t, addr)
	rec(alice.do("AUTH", "alice", "nope"))
	rec(alice.do("AUTH", "alice", "apw"))
	rec(alice.do("ACL", "WHOAMI"))
	rec(alice.do("SET", "app:1", "v"))
	rec(alice.do("GET", "shared:1"))
	rec(alice.do("SET", "shared:1", "v"))
	rec(alice.do("APPEND", "log:1", "x"))
	rec(alice.do("GET", "log:1"))
	rec(alice.do("SET", "log:2", "v"))
	rec(alice.do("SET", "log:2", "v", "GET"))
	rec(alice.do("GETDEL", "app:1"))
	rec(alice.do("MGET", "app:1", "shared:1", "log:1"))
	rec(alice.do("LPUSH", "app:l", "a", "b"))
	rec(alice.do("GET", "sel:1"))
	rec(alice.do("DEL", "app:1"))
	rec(alice.do("FLUSHALL"))
	rec(alice.do("PUBLISH", "chan:1", "x"))
	rec(alice.do("PUBLISH", "other", "x"))
	rec(alice.do("SUBSCRIBE", "chan:1", "other"))
	rec(alice.do("PSUBSCRIBE", "chan:*"))
	rec(alice.do("PUNSUBSCRIBE"))
	rec(alice.do("MULTI"))
	rec(alice.do("SET", "app:2", "v"))
	rec(alice.do("GET", "shared:2"))
	rec(alice.do("EXEC"))
	rec(alice.do("MULTI"))
	rec(alice.do("SET", "nope", "v"))
	rec(alice.do("EXEC"))
	rec(alice.do("MULTI"))
	rec(alice.do("SET", "app:3", "v"))
	rec(admin.do("ACL", "SETUSER", "alice", "resetkeys", "~x:*"))
	rec(alice.do("EXEC"))
	rec(admin.do("ACL", "SETUSER", "alice", "resetkeys", "~app:*", "%R~shared:*", "%W~log:*"))
	rec(alice.do("EVAL", "return redis.call('set','nope','v')", "0"))
	rec(alice.do("EVAL", "return redis.pcall('set','nope','v')", "0"))
	rec(alice.do("EVAL", "return redis.call('set',KEYS[1],'v')", "1", "app:4"))
	rec(aclLogFields(t, admin.do("ACL", "LOG")))
	rec(admin.do("ACL", "DRYRUN", "alice", "SET", "x", "v"))
	rec(admin.do("ACL", "DRYRUN", "alice", "GET", "app:1"))
	rec(admin.do("ACL", "DRYRUN", "alice", "DEL", "app:1"))
	rec(admin.do("ACL", "DRYRUN", "alice", "PUBLISH", "zz", "x"))
	rec(admin.do("ACL", "DRYRUN", "nobody", "GET", "x"))
	rec(admin.do("ACL", "DRYRUN", "alice", "NOSUCH", "x"))

	// Selectors, errors, the default user.
	rec(admin.do("ACL", "SETUSER", "sel", "on", "nopass", "-@all", "(+get ~a*)", "(", "+set", "~b*", ")"))
	rec(admin.do("ACL", "GETUSER", "sel"))
	sel := dialRaw(t, addr)
	rec(sel.do("AUTH", "sel", "any"))
	rec(sel.do("GET", "a1"))
	rec(sel.do("GET", "b1"))
	rec(sel.do("SET", "b1", "v"))
	rec(sel.do("SET", "a1", "v"))
	rec(admin.do("ACL", "SETUSER", "bad", "+nosuch"))
	rec(admin.do("ACL", "SETUSER", "bad", "(~a", "+get"))
	rec(admin.do("ACL", "SETUSER", "bad", "~a", "allkeys", "~b"))
	rec(admin.do("ACL", "SETUSER", "bad", "#xyz"))
	rec(admin.do("ACL", "SETUSER", "bad user"))
	rec(admin.do("ACL", "GETUSER", "bad"))
	rec(admin.do("ACL", "DELUSER", "default"))
	rec(admin.do("ACL", "CAT", "nosuch"))
	rec(sortedArray(t, admin.do("ACL", "CAT", "hyperloglog")))
	rec(admin.do("CLIENT", "KILL", "USER", "nosuch"))

	// Configuration users and HELLO AUTH.
	reader := dialRaw(t, addr)
	rec(reader.do("HELLO", "2", "AUTH", "reader", "wrong"))
	rec(reader.do("HELLO", "2"))
	rec(reader.do("AUTH", "reader", "rpw"))
	rec(reader.do("GET", "data:1"))
	rec(reader.do("SET", "data:1", "v"))
	rec(reader.do("PSUBSCRIBE", "news.*"))
	rec(reader.do("PSUBSCRIBE", "news.a*"))

	// Deleting a user closes its connections; others stay.
	rec(admin.do("ACL", "DELUSER", "alice", "nobody"))
	rec(alice.read())
	rec(admin.do("PING"))
	rec(admin.do("ACL", "USERS"))

	// requirepass is the default user's password.
	rec(admin.do("CONFIG", "SET", "requirepass", "newpw"))
	fresh := dialRaw(t, addr)
	rec(fresh.do("GET", "x"))
	rec(fresh.do("AUTH", "adminpw"))
	rec(fresh.do("AUTH", "newpw"))
	rec(fresh.do("ACL", "GETUSER", "default"))
	rec(admin.do("ACL", "SETUSER", "default", "off"))
	other := dialRaw(t, addr)
	rec(other.do("AUTH", "newpw"))
	rec(admin.do("ACL", "SETUSER", "default", "on", "nopass"))
	rec(dialRaw(t, addr).do("GET", "x"))
	rec(aclLogFields(t, admin.do("ACL", "LOG", "3")))
	// RESP3: GETUSER's map and flag set.
	admin.do("HELLO", "3") // its reply holds the connection id
	rec(admin.do("ACL", "GETUSER", "sel"))
	return out
}

// TestACLTranscriptMatchesRedis runs the same ACL session against
// redis-server 7.0.15 and shoal-server and compares every reply byte for
// byte.
func TestACLTranscriptMatchesRedis(t *testing.T) {
	args := []string{"--user", "reader", "on", ">rpw", "%R~data:*", "resetchannels", "&news.*", "-@all", "+@read", "+@connection", "+@pubsub"}
	want := aclTranscript(t, startRedisServer(t, t.TempDir(), append([]string{"--save", ""}, args...)...))
	s := StartServer(t, append([]string{"--save", ""}, args...)...)
	got := aclTranscript(t, s.Addr)
	require.Equal(t, len(want), len(got))
	for i := range want {
		require.Equal(t, want[i], got[i], "step %d", i)
	}
}
