package config

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGet(t *testing.T) {
	c := newParsing()
	assert.Equal(t, []string{"maxmemory", "0"}, c.Get("maxmemory"))
	assert.Equal(t, []string{"MaxMemory", "0"}, c.Get("MaxMemory"), "exact names keep the caller's spelling")
	assert.Equal(t, []string{"slaveof", ""}, c.Get("slaveof"))
	assert.Equal(t, []string{"replicaof", "", "slaveof", ""}, c.Get("replicaof", "slaveof"))
	assert.Equal(t, []string{"maxmemory", "0"}, c.Get("maxmemory", "MAXMEMORY", "max*memory"))
	assert.Equal(t, []string{}, c.Get("nope"))
	assert.Equal(t, []string{}, c.Get())
	assert.Equal(t, []string{"use-exit-on-panic", "no"}, c.Get("use-exit-on-panic"), "hidden: exact name only")
	assert.Equal(t, []string{}, c.Get("use-exit-*"))
	assert.Equal(t, []string{}, c.Get(`max\memory`), "no glob character: looked up literally")

	m := pairsToMap(t, c.Get("*"))
	assert.Len(t, m, 192)
	assert.Contains(t, m, "slaveof")
	assert.Contains(t, m, "replicaof")
	assert.Contains(t, m, "lua-time-limit")
	assert.NotContains(t, m, "watchdog-period")

	m = pairsToMap(t, c.Get("SLAVE*"))
	assert.Equal(t, map[string]string{
		"slave-announce-ip": "", "slave-announce-port": "0", "slave-ignore-maxmemory": "yes",
		"slave-lazy-flush": "no", "slave-priority": "100", "slave-read-only": "yes",
		"slave-serve-stale-data": "yes", "slaveof": "",
	}, m)
	m = pairsToMap(t, c.Get("lazyfree-lazy-user-*", "h?"))
	assert.Equal(t, map[string]string{"lazyfree-lazy-user-del": "no", "lazyfree-lazy-user-flush": "no", "hz": "10"}, m)
}

func TestSetArity(t *testing.T) {
	c := newParsing()
	assert.EqualError(t, c.Set(), "ERR wrong number of arguments for 'config|set' command")
	assert.EqualError(t, c.Set("maxmemory"), "ERR wrong number of arguments for 'config|set' command")
	assert.EqualError(t, c.Set("maxmemory", "1", "hz"), "ERR syntax error")
}

func TestSetErrors(t *testing.T) {
	c := newParsing()
	tests := []struct {
		pairs []string
		err   string
	}{
		{[]string{"foo", "bar"}, "ERR Unknown option or number of arguments for CONFIG SET - 'foo'"},
		{[]string{"", "bar"}, "ERR Unknown option or number of arguments for CONFIG SET - ''"},
		{[]string{"maxmemory", "abc"}, setErr("maxmemory", "argument must be a memory value")},
		{[]string{"daemonize", "yes"}, setErr("daemonize", "can't set immutable config")},
		{[]string{"Daemonize", "yes"}, setErr("Daemonize", "can't set immutable config")},
		{[]string{"slaveof", "no one"}, setErr("slaveof", "can't set immutable config")},
		{[]string{"dbfilename", "x.rdb"}, setErr("dbfilename", "can't set protected config")},
		{[]string{"maxmemory", "1", "maxmemory", "2"}, setErr("maxmemory", "duplicate parameter")},
		{[]string{"maxmemory", "1", "MAXMEMORY", "2"}, setErr("MAXMEMORY", "duplicate parameter")},
		{[]string{"hz", "5", "foo", "1", "daemonize", "yes"}, "ERR Unknown option or number of arguments for CONFIG SET - 'foo'"},
		{[]string{"daemonize", "yes", "foo", "1"}, setErr("daemonize", "can't set immutable config")},
		{[]string{"SLAVE-PRIORITY", "x"}, setErr("slave-priority", "argument couldn't be parsed into an integer")},
	}
	for _, tt := range tests {
		err := c.Set(tt.pairs...)
		require.Error(t, err, "%q", tt.pairs)
		assert.Equal(t, tt.err, err.Error(), "%q", tt.pairs)
	}
	// An alias and its primary are distinct parameters, like in Redis.
	require.NoError(t, c.Set("slave-priority", "1", "replica-priority", "2"))
	assert.Equal(t, "2", c.String("slave-priority"))
}

func TestSetAllOrNothing(t *testing.T) {
	c := newParsing()
	err := c.Set("maxmemory", "1mb", "hz", "20", "save", "1 1", "port", "abc")
	require.Error(t, err)
	assert.Equal(t, setErr("port", "argument couldn't be parsed into an integer"), err.Error())
	assert.Equal(t, "0", c.String("maxmemory"))
	assert.Equal(t, "10", c.String("hz"))
	assert.Equal(t, "3600 1 300 100 60 10000", c.String("save"))

	require.NoError(t, c.Set("maxmemory", "1mb", "hz", "20", "save", "1 1"))
	assert.Equal(t, "1048576", c.String("maxmemory"))
	assert.Equal(t, "20", c.String("hz"))
	assert.Equal(t, "1 1", c.String("save"))

	// Both names of an aliased directive, second one invalid: all restored.
	require.Error(t, c.Set("slave-priority", "7", "replica-priority", "x"))
	assert.Equal(t, "100", c.String("replica-priority"))
}

func TestProtectedAndLoading(t *testing.T) {
	dir := t.TempDir()
	c, err := loadParsing([]string{"--enable-protected-configs", "local"})
	require.NoError(t, err)
	assert.Equal(t, setErr("dir", "can't set protected config"), c.Set("dir", dir).Error())
	require.NoError(t, c.SetFromClient(true, "dir", dir, "dbfilename", "x.rdb"))
	assert.Equal(t, "x.rdb", c.String("dbfilename"))
	assert.True(t, c.AllowProtectedAction("enable-protected-configs", true))
	assert.False(t, c.AllowProtectedAction("enable-protected-configs", false))
	assert.False(t, c.AllowProtectedAction("enable-debug-command", true))

	c, err = loadParsing([]string{"--enable-protected-configs", "yes", "--enable-debug-command", "yes"})
	require.NoError(t, err)
	require.NoError(t, c.Set("dbfilename", "y.rdb"))
	assert.Equal(t, setErr("dbfilename", "dbfilename can't be a path, just a filename"), c.Set("dbfilename", "a/b").Error())
	assert.True(t, c.AllowProtectedAction("enable-debug-command", false))

	c.SetLoading(true)
	assert.EqualError(t, c.Set("appendonly", "yes"), "LOADING Redis is loading the dataset in memory")
	assert.EqualError(t, c.Set("hz", "5", "repl-diskless-load", "swapdb"), "LOADING Redis is loading the dataset in memory")
	require.NoError(t, c.Set("hz", "5"))
	c.SetLoading(false)
	require.NoError(t, c.Set("appendonly", "yes"))
}

func TestOnChange(t *testing.T) {
	c := newParsing()
	var calls []string
	c.OnChange("maxmemory", func(v string) error { calls = append(calls, "maxmemory="+v); return nil })
	c.OnChange("slave-priority", func(v string) error { calls = append(calls, "priority="+v); return nil })
	c.OnChange("tls-cert-file", func(v string) error { calls = append(calls, "cert="+v); return nil })
	c.OnChange("hz", func(v string) error {
		// Hooks may read the configuration (no deadlock) and see new values.
		calls = append(calls, "hz="+v+" maxmemory="+c.String("maxmemory"))
		return nil
	})

	require.NoError(t, c.Set("maxmemory", "1kb", "hz", "20"))
	assert.Equal(t, []string{"maxmemory=1024", "hz=20 maxmemory=1024"}, calls)

	calls = nil
	require.NoError(t, c.Set("maxmemory", "1024", "hz", "20"))
	assert.Empty(t, calls, "no hook when the value did not change")

	calls = nil
	require.NoError(t, c.Set("replica-priority", "1", "slave-priority", "2"))
	assert.Equal(t, []string{"priority=2"}, calls, "one call per directive with the final value")

	calls = nil
	require.NoError(t, c.Set("tls-cert-file", ""))
	assert.Equal(t, []string{"cert="}, calls, "volatile directives always run their hooks")

	calls = nil
	require.NoError(t, c.Set("hz", "1000"))
	assert.Equal(t, []string{"hz=500 maxmemory=1024"}, calls)
	assert.Panics(t, func() { c.OnChange("nope", func(string) error { return nil }) })
}

func TestOnChangeRollback(t *testing.T) {
	c := newParsing()
	var calls []string
	c.OnChange("maxmemory", func(v string) error { calls = append(calls, "maxmemory="+v); return nil })
	c.OnChange("port", func(v string) error {
		calls = append(calls, "port="+v)
		if v == "1" {
			return errors.New("Unable to listen on this port. Check server logs.")
		}
		return nil
	})
	c.OnChange("hz", func(v string) error { calls = append(calls, "hz="+v); return nil })

	err := c.Set("maxmemory", "5mb", "port", "1", "hz", "30")
	require.Error(t, err)
	assert.Equal(t, setErr("port", "Unable to listen on this port. Check server logs."), err.Error())
	assert.Equal(t, []string{"maxmemory=5242880", "port=1", "maxmemory=0", "port=6379"}, calls)
	assert.Equal(t, "0", c.String("maxmemory"))
	assert.Equal(t, "6379", c.String("port"))
	assert.Equal(t, "10", c.String("hz"))

	c.OnChange("timeout", func(string) error { return errors.New("") })
	assert.EqualError(t, c.Set("timeout", "5"), "ERR CONFIG SET failed (possibly related to argument 'timeout')")
}

func TestResetStat(t *testing.T) {
	c := newParsing()
	n := 0
	c.OnResetStat(func() { n++ })
	c.OnResetStat(func() { n += 10 })
	c.ResetStat()
	assert.Equal(t, 11, n)
	assert.Len(t, HelpLines(), 8)
}

// TestConcurrentAccess is meant for -race: readers use the getters while
// writers run CONFIG SET.
func TestConcurrentAccess(t *testing.T) {
	c := newParsing()
	maxclients := c.IntFunc("maxclients")
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = c.MaxClients() + maxclients() + c.Int("hz") + c.Timeout()
				_ = c.String("save") + c.String("bind")
				_ = c.Strings("bind")
				_ = c.Get("max*")
				_ = c.Bool("lazyfree-lazy-expire")
				_ = c.SaveParams()
			}
		}()
	}
	var wwg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wwg.Add(1)
		go func(w int) {
			defer wwg.Done()
			for i := 0; i < 300; i++ {
				v := strconv.Itoa(1000 + i + w)
				assert.NoError(t, c.Set("maxclients", v, "hz", strconv.Itoa(1+i%400), "save", v+" 1",
					"bind", "127.0.0.1 "+v, "lazyfree-lazy-expire", []string{"yes", "no"}[i%2]))
			}
		}(w)
	}
	wwg.Wait()
	close(stop)
	wg.Wait()
	assert.GreaterOrEqual(t, c.MaxClients(), int64(1299))
}

// REPLICAOF at run time is what CONFIG REWRITE writes (Redis's
// rewriteConfigReplicaOfOption reads server.masterhost), and NO ONE removes
// the line.
func TestRecordReplicaOfIsRewritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shoal.conf")
	require.NoError(t, os.WriteFile(path, []byte("port 7000\n"), 0o644))
	c, err := Load([]string{path})
	require.NoError(t, err)
	c.RecordReplicaOf("10.0.0.1", 6380)
	host, port, ok := c.ReplicaOf()
	require.True(t, ok)
	require.Equal(t, "10.0.0.1", host)
	require.Equal(t, 6380, port)
	require.NoError(t, c.Rewrite(path))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(b), "replicaof 10.0.0.1 6380")
	c.RecordReplicaOf("", 0)
	require.NoError(t, c.Rewrite(path))
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	require.NotContains(t, string(b), "replicaof")
}
