package acl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/glob"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testCommands is Redis 7.0.15's command table, numbered and derived as
// node does, every command implemented.
func testCommands(t *testing.T) *Commands {
	t.Helper()
	id := 0
	noop := func(*command.Ctx, [][]byte) {}
	var top []*command.Spec
	var finalize func(spec, parent *command.Spec)
	finalize = func(spec, parent *command.Spec) {
		spec.SetParent(parent)
		spec.ID = id
		id++
		spec.Handler = noop
		spec.Derive()
		for _, sub := range spec.Subcommands {
			finalize(sub, spec)
		}
	}
	for _, spec := range command.AllMeta() {
		finalize(spec, nil)
		top = append(top, spec)
	}
	return NewCommands(top)
}

// refs is a fixed KeySource.
type refs []command.KeyRef

func (r refs) ACLKeyRefs(bool) []command.KeyRef { return r }

// keysOf gives a command's keys through the one key extractor.
type keysOf struct {
	spec *command.Spec
	args [][]byte
}

func (k keysOf) ACLKeyRefs(bool) []command.KeyRef {
	r, _ := command.KeyRefs(k.spec, k.args, nil)
	return r
}

func argv(words ...string) [][]byte {
	out := make([][]byte, len(words))
	for i, w := range words {
		out[i] = []byte(w)
	}
	return out
}

func check(t *testing.T, r *Registry, user string, words ...string) (Result, int) {
	t.Helper()
	args := argv(words...)
	spec := r.Commands().Lookup(words[0])
	if spec != nil && len(spec.Subcommands) > 0 && len(words) > 1 {
		spec = r.Commands().Lookup(words[0] + "|" + words[1])
	}
	require.NotNil(t, spec, words[0])
	return r.Get(user).State().Check(spec, args, keysOf{spec, args})
}

func TestDefaultUser(t *testing.T) {
	r := NewRegistry(testCommands(t))
	st := r.Default().State()
	assert.Equal(t, "on nopass ~* &* +@all", st.Description())
	assert.True(t, st.AllowsAll())
	r.SetDefaultPassword("foo")
	st = r.Default().State()
	assert.Equal(t, "on #2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae ~* &* +@all", st.Description())
	assert.NotNil(t, r.Authenticate([]byte("default"), []byte("foo")))
	assert.Nil(t, r.Authenticate([]byte("default"), []byte("bar")))
	assert.Nil(t, r.Authenticate([]byte("nobody"), []byte("foo")))
}

// The descriptions are redis-server 7.0.15's (ACL LIST) for the same rules.
func TestSetUserDescriptions(t *testing.T) {
	r := NewRegistry(testCommands(t))
	cases := []struct {
		rules []string
		want  string
	}{
		{nil, "off resetchannels -@all"},
		{[]string{"on", ">p", "~k*", "%R~r*", "+@string", "-set", "+config|get", "(+get ~x*)"},
			"on #148de9c5a7a44d19e56cd9ae1a554bf67847afb0c58f6e12fa29ac7ddfca9940 ~k* %R~r* resetchannels -@all +@string +config|get -set (~x* resetchannels -@all +get)"},
		{[]string{"reset", "on", "nopass", "allkeys", "allchannels", "allcommands", "-@dangerous"},
			"on nopass sanitize-payload ~* &* +@all -@dangerous"},
		{[]string{"reset", "%W~w*", "%RW~rw*", "&chan*", "+select|0"},
			"off sanitize-payload %W~w* ~rw* resetchannels &chan* -@all +select|0"},
		{[]string{"reset", "(", "~a", "+get", ")", "(~b +set)", "clearselectors", "(~c +ping)"},
			"off sanitize-payload resetchannels -@all (~c resetchannels -@all +ping)"},
	}
	for i, tc := range cases {
		_, err := r.SetUser("u", tc.rules)
		require.NoError(t, err, tc.rules)
		assert.Equal(t, tc.want, r.Get("u").State().Description(), "case %d", i)
	}
}

func TestSetUserErrors(t *testing.T) {
	r := NewRegistry(testCommands(t))
	_, err := r.SetUser("u", []string{"on", ">pw", "~a"})
	require.NoError(t, err)
	before := r.Get("u").State().Description()
	for rule, want := range map[string]string{
		"+nosuch":       "Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL",
		"+@nosuch":      "Error in ACL SETUSER modifier '+@nosuch': Unknown command or category name in ACL",
		"bogus":         "Error in ACL SETUSER modifier 'bogus': Syntax error",
		"#abc":          "Error in ACL SETUSER modifier '#abc': The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters",
		"<nopw":         "Error in ACL SETUSER modifier '<nopw': The password you are trying to remove from the user does not exist",
		"+config|get|x": "Error in ACL SETUSER modifier '+config|get|x': Allowing first-arg of a subcommand is not supported",
		"+select|":      "Error in ACL SETUSER modifier '+select|': Syntax error",
		"%X~a":          "Error in ACL SETUSER modifier '%X~a': Syntax error",
		"(+nosuch)":     "Error in ACL SETUSER modifier '(+nosuch)': Unknown command or category name in ACL",
	} {
		_, err := r.SetUser("u", []string{"+get", rule})
		require.Error(t, err, rule)
		assert.Equal(t, want, err.Error())
		assert.Equal(t, before, r.Get("u").State().Description(), "all or nothing: %s", rule)
	}
	_, err = r.SetUser("u", []string{"allkeys", "~b"})
	assert.Equal(t, "Error in ACL SETUSER modifier '~b': "+errKeyAfterAll.Error(), err.Error())
	_, err = r.SetUser("u", []string{"&*", "&b"})
	assert.Equal(t, "Error in ACL SETUSER modifier '&b': "+errChanAfterAll.Error(), err.Error())
	_, err = r.SetUser("u", []string{"(~a", "+get"})
	assert.Equal(t, "Unmatched parenthesis in acl selector starting at '(~a'.", err.Error())
	_, err = r.SetUser("a b", nil)
	assert.Equal(t, "Usernames can't contain spaces or null characters", err.Error())
	_, err = r.DelUsers([]string{"u", "default"})
	assert.Equal(t, ErrDeleteDefault, err)
	gone, err := r.DelUsers([]string{"u", "nobody"})
	require.NoError(t, err)
	require.Len(t, gone, 1)
	assert.True(t, gone[0].Deleted())
	assert.Nil(t, r.Get("u"))
}

func TestChecks(t *testing.T) {
	r := NewRegistry(testCommands(t))
	_, err := r.SetUser("u", []string{"on", "nopass", "+@all", "-flushall", "~k*", "%R~r*", "%W~w*", "&news.*",
		"(+set ~sel* %R~other)"})
	require.NoError(t, err)
	for _, tc := range []struct {
		words []string
		want  Result
		pos   int
	}{
		{[]string{"get", "k1"}, OK, 0},
		{[]string{"get", "r1"}, OK, 0},
		{[]string{"get", "w1"}, DeniedKey, 1},
		{[]string{"lpush", "w1", "v"}, OK, 0}, // RW insert: write only
		{[]string{"append", "r1", "x"}, DeniedKey, 1},
		{[]string{"mget", "k1", "r1", "w1"}, DeniedKey, 3},
		{[]string{"set", "sel1", "v"}, OK, 0}, // the second selector
		{[]string{"flushall"}, DeniedCmd, 0},
		{[]string{"publish", "news.a", "x"}, OK, 0},
		{[]string{"publish", "sport", "x"}, DeniedChannel, 1},
		{[]string{"subscribe", "news.a", "other"}, DeniedChannel, 2},
		{[]string{"psubscribe", "news.*"}, OK, 0}, // a pattern matches literally
		{[]string{"psubscribe", "news.a*"}, DeniedChannel, 1},
		{[]string{"auth", "x"}, OK, 0}, // no_auth commands are never denied
	} {
		got, pos := check(t, r, "u", tc.words...)
		assert.Equal(t, tc.want, got, "%v", tc.words)
		assert.Equal(t, tc.pos, pos, "%v", tc.words)
	}
	// The most relevant denial wins: a key beats the command.
	_, err = r.SetUser("v", []string{"on", "+get", "~a", "(+set ~b)"})
	require.NoError(t, err)
	got, pos := check(t, r, "v", "get", "zz")
	assert.Equal(t, DeniedKey, got)
	assert.Equal(t, 1, pos)
	// First arguments of a command without subcommands.
	_, err = r.SetUser("w", []string{"on", "-@all", "+select|0"})
	require.NoError(t, err)
	got, _ = check(t, r, "w", "select", "0")
	assert.Equal(t, OK, got)
	got, _ = check(t, r, "w", "select", "1")
	assert.Equal(t, DeniedCmd, got)
	// Subscriptions revoked by a change.
	old := r.Get("u").State()
	ch, err := r.SetUser("u", []string{"resetchannels", "&news.a"})
	require.NoError(t, err)
	require.NotNil(t, ch.Revoked)
	assert.False(t, ch.Revoked("news.a", false))
	assert.True(t, ch.Revoked("news.b", false))
	assert.Nil(t, r.Get("u").State().SubscriptionsRevoked(r.Get("u").State()), "the same channels revoke nothing")
	assert.NotNil(t, r.Get("u").State().SubscriptionsRevoked(old), "patterns are compared literally")
}

func TestLog(t *testing.T) {
	var l Log
	l.SetMaxLen(3)
	now := time.Now()
	add := func(obj string, at time.Time) {
		l.Add(Entry{Reason: DeniedCmd, Object: obj, Username: "u", At: at, ClientInfo: "id=1"})
	}
	add("get", now)
	add("get", now.Add(time.Second)) // grouped
	add("set", now)
	e := l.Entries(10)
	require.Len(t, e, 2)
	assert.Equal(t, "set", e[0].Object)
	assert.Equal(t, int64(2), e[1].Count)
	add("get", now.Add(2*time.Second)) // moves to the front
	assert.Equal(t, "get", l.Entries(1)[0].Object)
	add("get", now.Add(2*time.Minute)) // too late to group
	add("a", now)
	add("b", now)
	assert.Len(t, l.Entries(10), 3)
	assert.Equal(t, int64(7), l.DeniedCmd.Load())
	l.Reset()
	assert.Empty(t, l.Entries(10))
}

func TestConfigUserLines(t *testing.T) {
	v := ConfigUserValidator()
	bad, err := v([]string{"alice", "on", ">pw", "+nosuch", "~*"})
	require.NoError(t, err, "unknown commands are found at load")
	bad, err = v([]string{"alice", "on"})
	assert.Equal(t, "alice", bad)
	assert.Equal(t, errDuplicateUser, err)
	bad, err = v([]string{"bob", "on", "bogus"})
	assert.Equal(t, "bob", bad, "Redis names argv[j] of the line (\"user\" first), two words early")
	assert.Equal(t, errSyntax, err)

	r := NewRegistry(testCommands(t))
	_, err = r.LoadConfigUsers([][]string{{"default", "on", "nopass", "~*", "+@all"}, {"alice", "on", ">pw", "+get", "~a*"}})
	require.NoError(t, err)
	assert.Equal(t, "on nopass sanitize-payload ~* resetchannels +@all", r.Default().State().Description())
	assert.Equal(t, []string{"alice on #30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4 ~a* resetchannels -@all +get",
		"default on nopass sanitize-payload ~* resetchannels +@all"}, r.ConfigLines())
	_, err = r.LoadConfigUsers([][]string{{"carol", "+nosuch"}})
	assert.Equal(t, "Error loading ACL rule '+nosuch' for the user named 'carol': Unknown command or category name in ACL", err.Error())
}

func TestACLFile(t *testing.T) {
	r := NewRegistry(testCommands(t))
	_, err := r.SetUser("alice", []string{"on", ">pw", "~a*", "+get"})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "users.acl")
	require.NoError(t, r.SaveFile(path))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "user alice on #30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4 ~a* resetchannels -@all +get\nuser default on nopass ~* &* +@all\n", string(data))

	alice := r.Get("alice")
	require.NoError(t, os.WriteFile(path, []byte("user bob on nopass +@all ~*\n\nuser default on >x ~* &* +@all\n"), 0o644))
	replaced, msg := r.LoadFile(path, "users.acl")
	require.Empty(t, msg)
	assert.Equal(t, []*User{alice}, replaced)
	assert.True(t, alice.Deleted())
	names := []string{}
	for _, u := range r.Users() {
		names = append(names, u.Name())
	}
	assert.Equal(t, []string{"bob", "default"}, names)
	assert.False(t, r.Default().State().NoPass())

	require.NoError(t, os.WriteFile(path, []byte("user bob on\nuser bob off\nfoo\nuser carol +nosuch\n"), 0o644))
	_, msg = r.LoadFile(path, "users.acl")
	assert.Equal(t, "WARNING: Duplicate user 'bob' found on line 2. users.acl:3 should start with user keyword followed by the username. "+
		"users.acl:4: Error in applying operation '+nosuch': Unknown command or category name in ACL. "+
		"WARNING: ACL errors detected, no change to the previously active ACL rules was performed", msg)
	assert.NotNil(t, r.Get("bob"), "nothing changed")
	_, msg = r.LoadFile(filepath.Join(t.TempDir(), "none.acl"), "none.acl")
	assert.True(t, strings.HasPrefix(msg, "Error loading ACLs, opening file 'none.acl': No such file or directory"), msg)
}

func TestMergeSelectors(t *testing.T) {
	out, bad := mergeSelectors([]string{"on", "(~a", "+get)", "(~b)", "x"})
	assert.Equal(t, -1, bad)
	assert.Equal(t, []string{"on", "(~a +get)", "(~b)", "x"}, out)
	_, bad = mergeSelectors([]string{"on", "(~a", "+get"})
	assert.Equal(t, 1, bad)
}

func BenchmarkCheckKeyPattern(b *testing.B) {
	r := NewRegistry(testCommands(&testing.T{}))
	if _, err := r.SetUser("bench", []string{"on", "nopass", "~key:*", "+@all"}); err != nil {
		b.Fatal(err)
	}
	st := r.Get("bench").State()
	spec := r.Commands().Lookup("set")
	args := argv("set", "key:000000123456", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")
	src := &keyBuf{spec: spec, args: args}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if res, _ := st.Check(spec, args, src); res != OK {
			b.Fatal(res)
		}
	}
}

type keyBuf struct {
	spec *command.Spec
	args [][]byte
	buf  []command.KeyRef
}

func (k *keyBuf) ACLKeyRefs(bool) []command.KeyRef {
	k.buf, _ = command.KeyRefs(k.spec, k.args, k.buf[:0])
	return k.buf
}

// The short-cuts for literal and prefix patterns decide as the glob
// matcher does.
func TestKeyPatternShortcuts(t *testing.T) {
	patterns := []string{"*", "a*", "app:*", "app", "", "a?*", "a\\*", "[ab]*", "a**", "*a"}
	keys := []string{"", "a", "app", "app:", "app:1", "b", "a*", "ab", "xa"}
	for _, p := range patterns {
		k := KeyPattern{Pattern: p, match: classify(p)}
		for _, key := range keys {
			assert.Equal(t, glob.Match(p, key, false), k.matches(key), "pattern %q key %q", p, key)
		}
	}
	assert.Equal(t, matchPrefix, classify("app:*"))
	assert.Equal(t, matchExact, classify("app"))
	assert.Equal(t, matchGlob, classify("a?*"))
}

// Names compare as Redis's strcasecmp does: ASCII letters only.
func TestRulesFoldASCIIOnly(t *testing.T) {
	r := NewRegistry(testCommands(t))
	_, err := r.SetUser("u", []string{"ON", "+GET", "+@STRING", "AllKeys"})
	require.NoError(t, err)
	assert.Equal(t, "on ~* resetchannels -@all +@string", r.Get("u").State().Description())
	_, err = r.SetUser("u", []string{"+\u212Aeys"}) // the Kelvin sign folds to "k" in Unicode only
	assert.Equal(t, "Error in ACL SETUSER modifier '+\u212Aeys': Unknown command or category name in ACL", err.Error())
}
