package config

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Comparisons with a live redis-server 7.0.15 (skipped when absent).

func hiddenNames(c *Config) []string {
	var out []string
	for _, in := range c.Directives() {
		if in.Flags&FlagHidden != 0 && in.Flags&FlagExtension == 0 {
			out = append(out, in.Name)
		}
	}
	return out
}

// TestLiveDefaults checks that the default of every directive equals what a
// freshly started Redis 7.0.15 returns for CONFIG GET *. Allowlist, because
// of how the test server must be started:
//   - port: the test server listens on a free port, not on 6379;
//   - save: the test server runs with --save "" so it never writes a dump;
//   - dir:  the test server runs in a temporary directory (ours defaults to
//     the process working directory, as Redis's does).
func TestLiveDefaults(t *testing.T) {
	dir := t.TempDir()
	r := startRedis(t, dir)
	live := r.configGet("*")
	c := newParsing()
	ours := pairsToMap(t, c.Get("*"))

	allow := map[string]string{
		"port": "6379",
		"save": "3600 1 300 100 60 10000",
		"dir":  currentDir(),
	}
	assert.Equal(t, sortedKeys(live), sortedKeys(ours), "same directive names")
	for k, v := range live {
		if want, ok := allow[k]; ok {
			assert.Equal(t, want, ours[k], "documented default of %s", k)
			continue
		}
		assert.Equal(t, v, ours[k], "default of %s", k)
	}
	for _, h := range hiddenNames(c) {
		assert.Equal(t, r.configGet(h), pairsToMap(t, c.Get(h)), "hidden %s", h)
	}
	assert.Equal(t, 192, len(live))
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestLiveLoadMatches starts Redis with various command lines and config
// files and checks that Load of the same arguments gives exactly the same
// CONFIG GET * (no allowlist at all).
func TestLiveLoadMatches(t *testing.T) {
	dir := t.TempDir()
	inc := filepath.Join(dir, "inc.conf")
	require.NoError(t, os.WriteFile(inc, []byte("save 50 5\nmaxmemory 2mb\n"), 0o644))
	conf := filepath.Join(dir, "main.conf")
	require.NoError(t, os.WriteFile(conf, []byte(strings.Join([]string{
		"# a comment",
		"   ",
		"save 100 1",
		"save 200 2",
		"include " + inc,
		"save 300 3",
		`SLAVE-PRIORITY 7`,
		`bind "127.0.0.1 127.0.0.2"`,
		`requirepass 'it\'s'`,
		`requirepass "a\x41\n\"b"`,
		`masteruser ''`,
		"list-max-ziplist-entries 10",
		`notify-keyspace-events "Kx$"`,
		"hash-max-ziplist-value 1kb",
		"shutdown-on-sigint save now",
		"rename-command FLUSHALL \"\"",
		"user bob on >pw",
		"sentinel",
		"",
	}, "\n")), 0o644))

	cases := [][]string{
		{},
		{"--save", "100 1", "--save", "200", "2"},
		{"--maxmemory", "1GB", "--maxmemory-clients", "10%", "--shutdown-on-sigterm", "now", "save",
			"--oom-score-adj", "relative", "--hz", "1000", "--notify-keyspace-events", "KEA",
			"--client-output-buffer-limit", "pubsub 1mb 2mb 3", "--latency-tracking-info-percentiles", "1 2.5 99.99",
			"--slave-priority", "5", "--list-max-ziplist-size", "5", "--unixsocketperm", "700",
			"--bind", "127.0.0.1", "--oom-score-adj-values", "-5 10 2000", "--proto-max-bulk-len", "2m",
			"--enable-debug-command", "local", "--syslog-facility", "LOCAL3", "--maxmemory-policy", "ALLKEYS-LFU"},
		{"--save", "--appendonly", "yes", "--appendfilename", "x.aof", "--replicaof", "127.0.0.1", "1"},
		{"--slaveof", "no", "one", "--hz", "0", "--latency-tracking-info-percentiles", ""},
		{"--proc-title-template", "{title} x", "--save", "5 5", "--save", ""},
		{conf},
		{conf, "--save", "1 1", "--requirepass", "z z"},
	}
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r := startRedis(t, dir, args...)
			c, err := loadParsing(r.args)
			require.NoError(t, err)
			if pw := c.String("requirepass"); pw != "" {
				require.Equal(t, "OK", replyText(r.do("AUTH", pw)))
			}
			live := r.configGet("*")
			ours := pairsToMap(t, c.Get("*"))
			for k, v := range live {
				assert.Equal(t, v, ours[k], "%s", k)
			}
			assert.Equal(t, len(live), len(ours))
		})
	}
}

// TestLiveConfigSet runs the same CONFIG SET commands on Redis and on a
// Config loaded with the same arguments, comparing every reply and the
// final CONFIG GET *.
func TestLiveConfigSet(t *testing.T) {
	dir := t.TempDir()
	r := startRedis(t, dir)
	c, err := loadParsing(r.args)
	require.NoError(t, err)

	cmds := [][]string{
		{"foo", "bar"},
		{"", "x"},
		{"maxmemory", "abc"},
		{"maxmemory", "1gb"},
		{"maxmemory", ""},
		{"maxmemory", "-1"},
		{"maxmemory", "18446744073709551615"},
		{"maxmemory", "18446744073709551616"},
		{"maxmemory", "10K"},
		{"daemonize", "yes"},
		{"maxmemory", "1", "maxmemory", "2"},
		{"maxmemory", "1", "MAXMEMORY", "2"},
		{"slave-priority", "1", "replica-priority", "2"},
		{"maxmemory", "5mb", "hz", "abc"},
		{"maxmemory", "5mb", "foo", "1", "daemonize", "yes"},
		{"daemonize", "yes", "foo", "1"},
		{"maxmemory"},
		{"maxmemory", "1", "hz"},
		{"hz", "1000"},
		{"hz", "0"},
		{"hz", "-1"},
		{"oom-score-adj", "relative"},
		{"oom-score-adj", "ABSOLUTE"},
		{"oom-score-adj", "no"}, // absolute needs privileges for negative values
		{"activedefrag", "yes"},
		{"activedefrag", "no"},
		{"dir", "/nonexistent"},
		{"dbfilename", "x"},
		{"appendonly", "maybe"},
		{"appendonly", "YES"},
		{"appendonly", "no"},
		{"loglevel", "foo"},
		{"loglevel", "Warning"},
		{"maxclients", "0"},
		{"maxclients", "-1"},
		{"maxclients", "4294967296"},
		{"maxmemory-clients", "101%"},
		{"maxmemory-clients", "50%"},
		{"maxmemory-clients", "-5"},
		{"maxmemory-clients", "-101"},
		{"maxmemory-clients", "1%%"},
		{"save", "1 2 3"},
		{"save", "0 1"},
		{"save", "10 0 20 5"},
		{"save", "10  5"},
		{"save", ""},
		{"shutdown-on-sigint", "save nosave"},
		{"shutdown-on-sigint", "now save"},
		{"shutdown-on-sigterm", "force"},
		{"shutdown-on-sigint", ""},
		{"oom-score-adj-values", ""},
		{"oom-score-adj-values", "1 2"},
		{"oom-score-adj-values", "1 2 x"},
		{"oom-score-adj-values", "1 2 2001"},
		{"oom-score-adj-values", "-1 0 1"},
		{"notify-keyspace-events", "KEA"},
		{"notify-keyspace-events", "Q"},
		{"notify-keyspace-events", "gx$lshzetdnKm"},
		{"notify-keyspace-events", ""},
		{"client-output-buffer-limit", "normal 1 2"},
		{"client-output-buffer-limit", "master 1 2 3"},
		{"client-output-buffer-limit", "normal 1mb 2k x"},
		{"client-output-buffer-limit", "normal 1mb 2k -1"},
		{"client-output-buffer-limit", "normal 1mb 2k 10 replica 3gb 1 5"},
		{"client-output-buffer-limit", ""},
		{"latency-tracking-info-percentiles", "50 101"},
		{"latency-tracking-info-percentiles", "x"},
		{"latency-tracking-info-percentiles", "99.99 1e1 0.0001"},
		{"latency-tracking-info-percentiles", ""},
		{"unixsocketperm", "777"},
		{"replicaof", "no one"},
		{"slaveof", "no one"},
		{"cluster-announce-hostname", "a_b"},
		{"cluster-announce-hostname", "a-b.c"},
		{"cluster-announce-hostname", strings.Repeat("a", 256)},
		{"proc-title-template", "{foo}"},
		{"proc-title-template", "{title}"},
		{"proc-title-template", "{server-mode}"},
		{"proc-title-template", "{title"},
		{"proc-title-template", "{{ {port}"},
		{"appendfilename", ""},
		{"bind", "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17"},
		{"list-max-listpack-size", "99999999999"},
		{"list-max-ziplist-size", "-5"},
		{"timeout", "010"},
		{"timeout", " 1"},
		{"timeout", "+1"},
		{"timeout", "-0"},
		{"timeout", "300"},
		{"slowlog-log-slower-than", "-2"},
		{"slowlog-max-len", "-1"},
		{"hash-max-listpack-entries", "-1"},
		{"requirepass", "secret"},
		{"masterauth", "x y"},
		{"requirepass", ""},
		{"lua-time-limit", "100"},
		{"SLAVE-READ-ONLY", "no"},
		{"tls-cert-file", "/x"},
		{"acl-pubsub-default", "allchannels"},
		{"sanitize-dump-payload", "clients"},
		{"enable-protected-configs", "yes"},
		{"repl-diskless-load", "swapdb"},
		{"cluster-preferred-endpoint-type", "unknown-endpoint"},
		{"propagation-error-behavior", "panic-on-replicas"},
		{"min-slaves-to-write", "1", "min-replicas-max-lag", "20"},
		{"proto-max-bulk-len", "1000"},
		{"proto-max-bulk-len", "1gb"},
		{"client-query-buffer-limit", "2gb"},
		{"active-defrag-ignore-bytes", "0"},
		{"repl-backlog-size", "0"},
		{"cluster-link-sendbuf-limit", "1g"},
		{"tracking-table-max-keys", "5"},
	}
	for _, cmd := range cmds {
		live := replyText(r.do(append([]string{"CONFIG", "SET"}, cmd...)...))
		if cmd[0] == "proto-max-bulk-len" {
			// shoal's one deliberate bound: lengths are 32-bit in the
			// keyspace (config/table.go maxStoredLen).
			live = strings.Replace(live, "and 9223372036854775807 inclusive", "and 4294967295 inclusive", 1)
		}
		got := "OK"
		if err := c.Set(cmd...); err != nil {
			got = err.Error()
		}
		assert.Equal(t, live, got, "CONFIG SET %q", cmd)
	}
	live := r.configGet("*")
	ours := pairsToMap(t, c.Get("*"))
	assert.Equal(t, live, ours)
}

func TestLiveConfigGetPatterns(t *testing.T) {
	dir := t.TempDir()
	r := startRedis(t, dir)
	c, err := loadParsing(r.args)
	require.NoError(t, err)
	for _, pats := range [][]string{
		{"*"}, {"slaveof"}, {"SlaveOf"}, {"replicaof", "slaveof"}, {"slave*"}, {"SLAVE*"},
		{"*max*"}, {"[a-c]*"}, {"[^a-r]*"}, {"maxmemory", "MAXMEMORY", "maxmemory"},
		{"use-exit-on-panic"}, {"use-exit*"}, {"repl*of", "slaveof"}, {`\*`}, {"?"}, {"??"},
		{"hz"}, {"nonexistent"}, {"max\\memory"}, {"*-*-*-*-*"}, {"maxmemory", "max*"},
		{"MAXMEMORY", "max*"}, {"[m]axmemory"}, {"[z-a]*"}, {"*[]"}, {"[*"}, {"lazyfree*"},
		{"client-output-buffer-limit"}, {"*port*"}, {"*ZIPLIST*"},
	} {
		live := r.configGet(pats...)
		ours := pairsToMap(t, c.Get(pats...))
		assert.Equal(t, live, ours, "CONFIG GET %q", pats)
	}
}

// TestLiveStartupErrors compares our LoadError text with what redis-server
// prints on stderr for the same command line.
func TestLiveStartupErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	bad1 := write("bad1.conf", "port 1\nfoo \"bar\n")
	ok := write("ok.conf", "port 0\n")
	incBad := write("incbad.conf", "# x\nmaxmemory 1\nhz x\n")
	withInc := write("withinc.conf", "port 0\ninclude "+incBad+"\n")
	multi := write("multi.conf", "save 1\n")
	trailing := write("trailing.conf", `requirepass "a"b`+"\n")

	cases := [][]string{
		{"--foo", "bar"},
		{"--port"},
		{"--port", "1", "2"},
		{"--daemonize", "maybe"},
		{"--port", "99999"},
		{"--maxmemory", "abc"},
		{"--loglevel", "foo"},
		{"--save", "1"},
		{"--save", "1 2 3"},
		{"--save", "--foo", "1"},
		{bad1},
		{bad1, "--port", "5"},
		{ok, "--foo", "x", "--bar"},
		{"--port", "0", "--foo", "--bar"},
		{"--port 0", "--foo 1"},
		{"--maxmemory-clients", "101%"},
		{"--port", "0", "--replicaof", "1.2.3.4", "1", "--cluster-enabled", "yes"},
		{"--port", "0", "--foo.bar"},
		{"--port", "0", "--logfile", "/nonexistent/dir/x.log"},
		{"--port", "0", "--lua-replicate-commands"},
		{"--port", "0", "--loadmodule"},
		{"--unixsocketperm", "999"},
		{"--unixsocketperm", "8"},
		{"--timeout", "010"},
		{"--client-output-buffer-limit", "normal 1 2"},
		{"--notify-keyspace-events", "Q"},
		{"--oom-score-adj-values", "1 2"},
		{"--replicaof", "a", "b"},
		{"--replicaof", "a"},
		{withInc},
		{multi},
		{trailing},
		{"--shutdown-on-sigint", "save", "nosave"},
		{"--dbfilename", "a/b"},
		{"--dir", "/nonexistent/x"},
		{"--activedefrag", "yes"},
		{"--bind", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16", "17"},
		{"--latency-tracking-info-percentiles", "200"},
		{"--port", "0", "--rename-command", "x"},
		{"--port", "0", "--sentinel", "x"},
		{"--port", "0", "-", "--hz"},
	}
	for _, args := range cases {
		_, stderr := runRedisFailure(t, dir, "", args...)
		_, err := loadParsing(args)
		require.Error(t, err, "%q", args)
		var le *LoadError
		require.ErrorAs(t, err, &le)
		if strings.Contains(stderr, "Unrecognized sentinel") {
			// Redis enters sentinel mode on --sentinel; shoal has none.
			assert.Equal(t, "sentinel directive while not in sentinel mode", le.Reason)
			continue
		}
		assert.Equal(t, stderr, err.Error(), "redis-server %q", args)
	}

	// Open failures are logged (stdout) with a timestamp prefix.
	for _, args := range [][]string{
		{"/nonexistent.conf"},
		{"nonexistent.conf"},
		{"../nonexistent.conf", "--port", "1"},
		{"--port", "0", "--include", "/nonexistent"},
	} {
		stdout, _ := runRedisFailure(t, dir, "", args...)
		wd, err := os.Getwd()
		require.NoError(t, err)
		require.NoError(t, os.Chdir(dir))
		_, lerr := loadParsing(args)
		require.NoError(t, os.Chdir(wd))
		var le *LoadError
		require.ErrorAs(t, lerr, &le)
		assert.True(t, le.OpenFailure)
		assert.Contains(t, stdout, " # "+lerr.Error()+"\n", "redis-server %q", args)
	}

	// Configuration read from stdin.
	for _, tc := range []struct {
		stdin string
		args  []string
	}{
		{"port 0\n", []string{"-", "--foo"}},
		{"port 0", []string{"-", "--foo", "x"}},
		{"port 0\nhz y\n", []string{"-"}},
		{"hz z\n", []string{ok, "-"}},
	} {
		_, stderr := runRedisFailure(t, dir, tc.stdin, tc.args...)
		_, err := LoadWith(tc.args, LoadOptions{acceptUnbuilt: true, Stdin: strings.NewReader(tc.stdin)})
		require.Error(t, err)
		assert.Equal(t, stderr, err.Error(), "stdin %q args %q", tc.stdin, tc.args)
	}
}

// TestLiveRewrite rewrites the same file with Redis and with us after the
// same changes. The part of the file before the "# Generated by CONFIG
// REWRITE" line must be identical; the appended lines are compared as a set
// because Redis appends them in its hash table order.
func TestLiveRewrite(t *testing.T) {
	dir := t.TempDir()
	original := strings.Join([]string{
		"# my config",
		"port 7772",
		"save 100 1",
		"save 200 2",
		"",
		"",
		"slave-priority 50",
		"maxmemory 1gb",
		"list-max-ziplist-entries 5",
		"# trailing comment",
		"include /dev/null",
		`rename-command FLUSHALL ""`,
		"masterauth foo",
		"bind 127.0.0.1",
		"client-output-buffer-limit normal 0 0 0",
		"",
	}, "\n")
	sets := [][]string{
		{"maxmemory", "2mb"},
		{"hz", "20"},
		{"requirepass", "a\"b c"},
		{"masterauth", ""},
		{"bind", "127.0.0.1 127.0.0.2"},
		{"client-output-buffer-limit", "pubsub 1mb 1mb 1"},
		{"notify-keyspace-events", "Ex"},
		{"maxmemory-clients", "5%"},
		{"slowlog-max-len", "1000"},
		{"appendonly", "yes"},
		{"oom-score-adj-values", "1 2 3"},
		{"shutdown-on-sigterm", "now force"},
		{"replica-announce-ip", "10.0.0.1"},
		{"proc-title-template", "{title} {port}"},
	}
	extra := "foo-unknown bar\nbad \"quote\nslaveof 1.2.3.4 5\n"

	liveConf := filepath.Join(dir, "live.conf")
	require.NoError(t, os.WriteFile(liveConf, []byte(original), 0o644))
	r := startRedis(t, dir, liveConf)
	ourConf := filepath.Join(dir, "ours.conf")
	require.NoError(t, os.WriteFile(ourConf, []byte(original), 0o644))
	args := append([]string{ourConf}, r.args[1:]...)
	c, err := loadParsing(args)
	require.NoError(t, err)
	require.Equal(t, ourConf, c.ConfigFile())

	for _, p := range []string{liveConf, ourConf} {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString(extra)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	for _, s := range sets {
		require.Equal(t, "OK", replyText(r.do(append([]string{"CONFIG", "SET"}, s...)...)))
		require.NoError(t, c.Set(s...))
	}
	// Redis always writes the ACL users when there is no aclfile.
	userLine := ""
	c.SetRewriteLines("user", func() []string { return []string{userLine} })

	for round := 0; round < 3; round++ {
		require.Equal(t, "OK", replyText(r.do("CONFIG", "REWRITE")))
		liveData, err := os.ReadFile(liveConf)
		require.NoError(t, err)
		for _, l := range strings.Split(string(liveData), "\n") {
			if strings.HasPrefix(l, "user ") {
				userLine = l
			}
		}
		require.NoError(t, c.Rewrite(c.ConfigFile()))
		ourData, err := os.ReadFile(ourConf)
		require.NoError(t, err)

		lh, lt := splitGenerated(string(liveData))
		oh, ot := splitGenerated(string(ourData))
		assert.Equal(t, lh, oh, "round %d: file head", round)
		sort.Strings(lt)
		sort.Strings(ot)
		assert.Equal(t, lt, ot, "round %d: generated lines", round)
		if round == 0 {
			// The rewritten file must load back to the same values.
			c2, err := loadParsing(args)
			require.NoError(t, err)
			assert.Equal(t, pairsToMap(t, c.Get("*")), pairsToMap(t, c2.Get("*")))
		}
	}
	info, err := os.Stat(ourConf)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644)&^processUmask(), info.Mode().Perm())
}

func splitGenerated(s string) (head string, tail []string) {
	i := strings.Index(s, rewriteSignature+"\n")
	if i < 0 {
		return s, nil
	}
	head = s[:i]
	for _, l := range strings.Split(s[i+len(rewriteSignature)+1:], "\n") {
		if l != "" {
			tail = append(tail, l)
		}
	}
	return head, tail
}
