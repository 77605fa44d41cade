package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refusedExamples gives, for every refused row, a value (or the arguments
// of a line keyword) that needs the missing feature. Every row must have
// one: TestUnbuiltEveryRowHasAnExample.
var refusedExamples = map[string][]string{
	"tls-key-file-pass":        {"secret"},
	"tls-client-key-file-pass": {"secret"},
	lineLoadModule:             {"/usr/lib/redis/modules/redisbloom.so"},
	lineModuleConfig:           {"1"},
	"syslog-enabled":           {"yes"},
	"server_cpulist":           {"0-1"},
	"bio_cpulist":              {"0"},
	"aof_rewrite_cpulist":      {"1"},
	"bgsave_cpulist":           {"1"},
	"socket-mark-id":           {"7"},
	"watchdog-period":          {"100"},
	"supervised":               {"systemd"},
	"active-expire-effort":     {"5"},
	"rdbchecksum":              {"no"},
}

// lineName is how a row's example is written as a configuration line.
func lineName(row string) string {
	if row == lineModuleConfig {
		return "mymodule.opt"
	}
	return row
}

func TestUnbuiltRowsNameKnownDirectivesOnce(t *testing.T) {
	c := New()
	seen := map[string]string{}
	note := func(name, where string) {
		if prev, dup := seen[name]; dup {
			t.Errorf("%s is in %s and in %s", name, prev, where)
		}
		seen[name] = where
	}
	for _, r := range refusedRows {
		note(r.name, "refusedRows")
		switch r.name {
		case lineLoadModule, lineModuleConfig:
			assert.Nil(t, r.needs, r.name)
			continue
		}
		d := c.dir(r.name)
		if !assert.NotNil(t, d, "refused row %q is not a directive", r.name) {
			continue
		}
		assert.Equal(t, r.name, d.name, "rows use primary names")
		// Defaults stay accepted, so stock redis.conf files load.
		assert.False(t, r.needs(d.def.str), "%s: the default %q is refused", r.name, d.def.str)
	}
	for _, a := range acceptedRows {
		for _, n := range a.names {
			note(n, "acceptedRows")
			d := c.dir(n)
			if assert.NotNil(t, d, "accepted row %q is not a directive", n) {
				assert.Equal(t, n, d.name, "rows use primary names")
			}
		}
	}
}

func TestUnbuiltEveryRowHasAnExample(t *testing.T) {
	for _, r := range refusedRows {
		assert.Contains(t, refusedExamples, r.name)
	}
	assert.Len(t, refusedExamples, len(refusedRows))
}

// Every refused value fails start-up with Redis's config-error layout and a
// line naming the missing feature, whether given on the command line or in
// a file.
func TestUnbuiltRefusedAtStartup(t *testing.T) {
	dir := t.TempDir()
	for _, r := range refusedRows {
		args := refusedExamples[r.name]
		name := lineName(r.name)
		// Command line: "--name v..." is read as the line after the file's.
		cmdline := append([]string{"--" + name}, args...)
		_, err := Load(cmdline)
		var le *LoadError
		if assert.ErrorAs(t, err, &le, r.name) {
			assert.Equal(t, 2, le.Line, r.name)
			assert.Equal(t, r.reason(), le.Reason, r.name)
			assert.True(t, strings.HasPrefix(le.Text, name+" "), "%s: %q", r.name, le.Text)
		}
		// File: the line number is the file's.
		quoted := make([]string, len(args))
		for i, a := range args {
			quoted[i] = Repr(a)
		}
		line := name + " " + strings.Join(quoted, " ")
		p := writeFile(t, dir, "r.conf", "port 7000\n# comment\n"+line+"\nhz 10\n")
		_, err = Load([]string{p})
		if assert.ErrorAs(t, err, &le, r.name) {
			assert.Equal(t, &LoadError{Line: 3, Text: line, Reason: r.reason()}, le, r.name)
		}
	}
}

func TestUnbuiltStartupErrorText(t *testing.T) {
	_, err := Load([]string{"--port", "7000", "--syslog-enabled", "yes"})
	require.Error(t, err)
	assert.Equal(t, "\n*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***\n"+
		"Reading the configuration file, at line 3\n"+
		">>> 'syslog-enabled \"yes\"'\n"+
		refusedByName["syslog-enabled"].reason()+"\n", err.Error())
}

// The check runs on the final configuration: a later line (the command line
// after the file) may turn the feature off again, and the first refused
// line in reading order is the one reported.
func TestUnbuiltCheckedOnFinalConfig(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "aof.conf", "syslog-enabled yes\nwatchdog-period 6390\nport 7001\n")
	c, err := Load([]string{p, "--syslog-enabled", "no", "--watchdog-period", "0"})
	require.NoError(t, err)
	assert.False(t, c.Bool("syslog-enabled"))
	assert.EqualValues(t, 7001, c.Int("port"))

	_, err = Load([]string{p, "--syslog-enabled", "no"})
	var le *LoadError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, &LoadError{Line: 2, Text: "watchdog-period 6390", Reason: refusedByName["watchdog-period"].reason()}, le)

	// The line that set the final value is reported, not an earlier one.
	_, err = Load([]string{p, "--watchdog-period", "0", "--syslog-enabled", "yes"})
	require.ErrorAs(t, err, &le)
	assert.Equal(t, &LoadError{Line: 6, Text: `syslog-enabled "yes"`, Reason: refusedByName["syslog-enabled"].reason()}, le)
	_, err = Load([]string{"--syslog-enabled", "no", "--hz", "10", "--syslog-enabled", "yes"})
	require.ErrorAs(t, err, &le)
	assert.Equal(t, 4, le.Line) // the options are lines 2, 3 and 4
	assert.Equal(t, `syslog-enabled "yes"`, le.Text)

	// An included file numbers its own lines.
	inc := writeFile(t, dir, "inc.conf", "hz 10\nwatchdog-period 6380\n")
	_, err = Load([]string{"--include", inc})
	require.ErrorAs(t, err, &le)
	assert.Equal(t, &LoadError{Line: 2, Text: "watchdog-period 6380", Reason: refusedByName["watchdog-period"].reason()}, le)

	// "Off" values of every refused directive load.
	c, err = Load([]string{"--syslog-enabled", "no", "--maxmemory", "0", "--tls-port", "0", "--unixsocket", "",
		"--notify-keyspace-events", "", "--oom-score-adj", "no", "--maxmemory-policy", "allkeys-lru",
		"--supervised", "no", "--rdbchecksum", "yes", "--active-expire-effort", "1"})
	require.NoError(t, err)
	assert.Equal(t, "allkeys-lru", c.String("maxmemory-policy"))
}

// CONFIG SET answers Redis's CONFIG SET error and changes nothing (the
// other parameters of the same call included).
func TestUnbuiltRefusedByConfigSet(t *testing.T) {
	for _, r := range refusedRows {
		c := New()
		d := c.dir(r.name)
		if d == nil {
			continue // line keywords: not directives, CONFIG SET does not know them
		}
		val := strings.Join(refusedExamples[r.name], " ")
		err := c.Set("hz", "50", r.name, val)
		if d.has(FlagImmutable) {
			assert.EqualError(t, err, "ERR CONFIG SET failed (possibly related to argument '"+r.name+
				"') - can't set immutable config", r.name)
		} else {
			assert.EqualError(t, err, "ERR CONFIG SET failed (possibly related to argument '"+r.name+
				"') - "+r.reason(), r.name)
		}
		assert.Equal(t, d.def.str, c.String(r.name), r.name)
		assert.EqualValues(t, 10, c.Hz(), "%s: nothing of the call is applied", r.name)
	}
	// Aliases are refused under the name the client used.
	c := New()
	assert.EqualError(t, c.Set("hz", "10", "watchdog-period", "6390"),
		"ERR CONFIG SET failed (possibly related to argument 'watchdog-period') - "+refusedByName["watchdog-period"].reason())
	// Off values are accepted.
	require.NoError(t, c.Set("hz", "10", "maxmemory", "0", "notify-keyspace-events", "",
		"maxmemory-policy", "volatile-lru", "tls-replication", "no"))
}

// CONFIG REWRITE never writes a refused value: none can be set.
func TestUnbuiltNeverRewritten(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "w.conf", "syslog-enabled no\nport 7002\n")
	c, err := Load([]string{p})
	require.NoError(t, err)
	require.Error(t, c.Set("syslog-enabled", "yes"))
	require.Error(t, c.Set("watchdog-period", "6390"))
	require.NoError(t, c.Rewrite(p))
	text := readString(t, p)
	assert.NotContains(t, text, "syslog-enabled yes")
	assert.NotContains(t, text, "watchdog-period 6390")
	_, err = Load([]string{p})
	require.NoError(t, err, "the rewritten file loads")
}

// Redis 7.0.15's own redis.conf (every directive at its shipped value)
// loads.
func TestUnbuiltStockRedisConfLoads(t *testing.T) {
	const stock = "/tmp/src/redis-7.0.15/redis.conf"
	data, err := os.ReadFile(stock)
	if err != nil {
		t.Skip("Redis 7.0.15's source tree is not unpacked at /tmp/src/redis-7.0.15")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "redis.conf")
	require.NoError(t, os.WriteFile(p, data, 0o644))
	c, err := Load([]string{p, "--dir", dir})
	require.NoError(t, err)
	assert.False(t, c.Bool("appendonly"))
	assert.Equal(t, "3600 1 300 100 60 10000", c.String("save"))
}

// docs/CONFIG.md carries the generated table; regenerate it with
// SHOAL_UPDATE_DOCS=1 go test -run TestUnbuiltDocTable ./config.
func TestUnbuiltDocTable(t *testing.T) {
	const (
		doc   = "../docs/CONFIG.md"
		begin = "<!-- unbuilt-table:begin (generated by config.UnbuiltTable) -->\n"
		end   = "<!-- unbuilt-table:end -->\n"
	)
	data, err := os.ReadFile(doc)
	require.NoError(t, err)
	text := string(data)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	require.True(t, i >= 0 && j > i, "docs/CONFIG.md lacks the table markers")
	want := text[:i+len(begin)] + UnbuiltTable() + text[j:]
	if os.Getenv("SHOAL_UPDATE_DOCS") != "" {
		require.NoError(t, os.WriteFile(doc, []byte(want), 0o644))
		return
	}
	assert.Equal(t, want, text, "docs/CONFIG.md is stale: run SHOAL_UPDATE_DOCS=1 go test -run TestUnbuiltDocTable ./config")
}
