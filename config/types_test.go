package config

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func setErr(name, msg string) string {
	return "ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + msg
}

func TestDirectiveCount(t *testing.T) {
	c := newParsing()
	var dirs []Info // Redis's own (shoal's extensions are counted apart)
	extensions := 0
	for _, d := range c.Directives() {
		if d.Flags&FlagExtension != 0 {
			extensions++
			assert.NotZero(t, d.Flags&FlagHidden, "extension %s must be hidden from CONFIG GET *", d.Name)
			continue
		}
		dirs = append(dirs, d)
	}
	assert.Len(t, dirs, 178)
	assert.Equal(t, 7, extensions) // + cluster-bus-secret
	aliases, hidden := 0, 0
	for _, d := range dirs {
		if d.Alias != "" {
			aliases++
		}
		if d.Flags&FlagHidden != 0 {
			hidden++
		}
	}
	assert.Equal(t, 19, aliases)
	assert.Equal(t, 5, hidden)
	assert.Len(t, pairsToMap(t, c.Get("*")), 178+19-5)
}

func TestFlags(t *testing.T) {
	c := newParsing()
	immutable := []string{"daemonize", "databases", "cluster-enabled", "cluster-config-file", "cluster-port",
		"pidfile", "unixsocket", "unixsocketperm", "logfile", "replicaof", "slaveof", "io-threads",
		"enable-protected-configs", "enable-debug-command", "enable-module-command", "appendfilename",
		"appenddirname", "aclfile", "tcp-backlog", "supervised", "syslog-enabled", "rdbchecksum"}
	for _, n := range immutable {
		in, ok := c.Lookup(n)
		require.True(t, ok, n)
		assert.NotZero(t, in.Flags&FlagImmutable, n)
	}
	for _, n := range []string{"port", "maxmemory", "bind", "save", "dir", "timeout", "hz"} {
		in, _ := c.Lookup(n)
		assert.Zero(t, in.Flags&FlagImmutable, n)
	}
	for _, n := range []string{"requirepass", "masterauth", "masteruser"} {
		assert.True(t, c.IsSensitive(n), n)
	}
	assert.False(t, c.IsSensitive("port"))
	for _, n := range []string{"dir", "dbfilename"} {
		in, _ := c.Lookup(n)
		assert.NotZero(t, in.Flags&FlagProtected, n)
	}
	in, _ := c.Lookup("slave-serve-stale-data")
	assert.Equal(t, "replica-serve-stale-data", in.Name)
	assert.Equal(t, "slave-serve-stale-data", in.Alias)
	in, _ = c.Lookup("loglevel")
	assert.Equal(t, TypeEnum, in.Type)
	assert.Equal(t, []string{"debug", "verbose", "notice", "warning"}, in.Values)
	in, _ = c.Lookup("maxmemory")
	assert.True(t, in.Memory)
	assert.Equal(t, "0", in.Default)
	in, _ = c.Lookup("maxmemory-clients")
	assert.True(t, in.Memory && in.Percent)
	in, _ = c.Lookup("unixsocketperm")
	assert.True(t, in.Octal)
	_, ok := c.Lookup("nope")
	assert.False(t, ok)
}

func TestDefaultsAndGetters(t *testing.T) {
	c := newParsing()
	assert.Equal(t, int64(10000), c.MaxClients())
	assert.Equal(t, int64(0), c.Timeout())
	assert.Equal(t, int64(512<<20), c.ProtoMaxBulkLen())
	assert.Equal(t, int64(1<<30), c.ClientQueryBufferLimit())
	assert.Equal(t, int64(10), c.Hz())
	assert.Equal(t, uint64(0), c.Maxmemory())
	assert.Equal(t, int64(16), c.Databases())
	assert.False(t, c.ClusterEnabled())
	assert.False(t, c.LazyfreeLazyEviction() || c.LazyfreeLazyExpire() || c.LazyfreeLazyServerDel() ||
		c.LazyfreeLazyUserDel() || c.LazyfreeLazyUserFlush())
	assert.Equal(t, "1073741824", c.String("client-query-buffer-limit"))
	assert.Equal(t, "3600 1 300 100 60 10000", c.String("save"))
	assert.Equal(t, []SaveParam{{3600, 1}, {300, 100}, {60, 10000}}, c.SaveParams())
	assert.Equal(t, []string{"3600", "1", "300", "100", "60", "10000"}, c.Strings("save"))
	assert.Equal(t, []string{"*", "-::*"}, c.Strings("bind"))
	assert.Equal(t, []string{"6379"}, c.Strings("port"))
	assert.Equal(t, []string{}, c.Strings("requirepass"))
	assert.Nil(t, c.Strings("nope"))
	assert.Equal(t, "* -::*", c.String("bind"))
	assert.Equal(t, "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
		c.String("client-output-buffer-limit"))
	assert.Equal(t, ClientBufferLimit{256 << 20, 64 << 20, 60}, c.ClientOutputBufferLimits()[ClientReplica])
	assert.Equal(t, [3]int{0, 200, 800}, c.OOMScoreAdjValues())
	assert.Equal(t, []float64{50, 99, 99.9}, c.LatencyTrackingPercentiles())
	_, _, ok := c.ReplicaOf()
	assert.False(t, ok)
	assert.Equal(t, "yes", c.String("protected-mode"))
	assert.True(t, c.Bool("protected-mode"))
	assert.Equal(t, int64(1), c.Int("protected-mode"))
	assert.False(t, c.Bool("port")) // not a bool
	assert.Equal(t, int64(MaxmemoryNoEviction), c.Int("maxmemory-policy"))
	assert.Equal(t, int64(LogNotice), c.Int("loglevel"))
	assert.Equal(t, int64(-2), c.Int("list-max-ziplist-size"))
	assert.Equal(t, int64(0), c.Int("nope"))
	assert.Equal(t, "", c.String("nope"))
	assert.True(t, c.Has("SLAVEOF"))
	assert.False(t, c.Has("nope"))
	assert.Equal(t, currentDir(), c.String("dir"))
	assert.Equal(t, "", c.ConfigFile())

	maxclients := c.IntFunc("maxclients")
	protected := c.BoolFunc("protected-mode")
	require.NoError(t, c.Set("maxclients", "5", "protected-mode", "no", "maxmemory", "18446744073709551615"))
	assert.Equal(t, int64(5), maxclients())
	assert.False(t, protected())
	assert.Equal(t, uint64(math.MaxUint64), c.Uint("maxmemory"))
	assert.Equal(t, uint64(math.MaxUint64), c.Maxmemory())
	assert.Equal(t, int64(math.MaxInt64), c.Int("maxmemory"))
	assert.Panics(t, func() { c.IntFunc("nope") })
}

// TestTypes exercises every kind of value through CONFIG SET.
func TestTypes(t *testing.T) {
	tests := []struct {
		name, value string
		get         string // expected CONFIG GET value when err == ""
		err         string
	}{
		// bool
		{"appendonly", "yes", "yes", ""},
		{"appendonly", "NO", "no", ""},
		{"appendonly", "1", "", "argument must be 'yes' or 'no'"},
		{"replica-read-only", "No", "no", ""},
		{"slave-read-only", "true", "", "argument must be 'yes' or 'no'"},
		// integer
		{"port", "6380", "6380", ""},
		{"port", "65536", "", "argument must be between 0 and 65535 inclusive"},
		{"port", "1k", "", "argument couldn't be parsed into an integer"},
		{"timeout", "-1", "", "argument must be between 0 and 2147483647 inclusive"},
		{"slowlog-log-slower-than", "-1", "-1", ""},
		{"list-max-listpack-size", "-2147483649", "", "argument must be between -2147483648 and 2147483647 inclusive"},
		{"maxclients", "4294967295", "4294967295", ""},
		{"maxclients", "0", "", "argument must be between 1 and 4294967295 inclusive"},
		{"hash-max-listpack-entries", "-1", "", "argument must be between 0 and 9223372036854775807 inclusive"},
		{"hz", "501", "500", ""},
		{"hz", "0", "1", ""},
		// memory
		{"maxmemory", "1gb", "1073741824", ""},
		{"maxmemory", "1GB", "1073741824", ""},
		{"maxmemory", "100mb", "104857600", ""},
		{"maxmemory", "1g", "1000000000", ""},
		{"maxmemory", "10k", "10000", ""},
		{"maxmemory", "10KB", "10240", ""},
		{"maxmemory", "", "0", ""},
		{"maxmemory", "1tb", "", "argument must be a memory value"},
		{"maxmemory", "-1", "", "argument must be a memory value"},
		{"proto-max-bulk-len", "1kb", "", "argument must be between 1048576 and 4294967295 inclusive"},
		{"proto-max-bulk-len", "4294967295", "4294967295", ""},
		{"proto-max-bulk-len", "4gb", "", "argument must be between 1048576 and 4294967295 inclusive"},
		{"client-query-buffer-limit", "1mb", "1048576", ""},
		{"hash-max-ziplist-value", "1k", "1000", ""},
		// percent
		{"maxmemory-clients", "10%", "10%", ""},
		{"maxmemory-clients", "100%", "100%", ""},
		{"maxmemory-clients", "101%", "", "percentage argument must be less or equal to 100"},
		{"maxmemory-clients", "1mb", "1048576", ""},
		{"maxmemory-clients", "x", "", "argument must be a memory or percent value"},
		// enum
		{"loglevel", "WARNING", "warning", ""},
		{"loglevel", "info", "", "argument(s) must be one of the following: debug, verbose, notice, warning"},
		{"maxmemory-policy", "allkeys-lru", "allkeys-lru", ""},
		{"oom-score-adj", "relative", "yes", ""},
		{"shutdown-on-sigterm", "now force", "now force", ""},
		{"shutdown-on-sigterm", "force now", "now force", ""},
		{"shutdown-on-sigterm", "default save", "save", ""},
		{"shutdown-on-sigterm", "save nosave", "", "shutdown options SAVE and NOSAVE can't be used simultaneously"},
		{"shutdown-on-sigterm", "now  save", "", "argument(s) must be one of the following: default, save, nosave, now, force"},
		{"loglevel", "notice warning", "", "argument(s) must be one of the following: debug, verbose, notice, warning"},
		// string
		{"dbfilename", "a/b", "", "can't set protected config"},
		{"masterauth", "p w", "p w", ""},
		{"replica-announce-ip", "", "", ""},
		{"proc-title-template", "{title} {listen-addr} x", "{title} {listen-addr} x", ""},
		{"proc-title-template", "{nope}", "", "template format is invalid or contains unknown variables"},
		{"proc-title-template", "  {title} ", "", "template format is invalid or contains unknown variables"},
		{"cluster-announce-hostname", "host-1.example", "host-1.example", ""},
		{"cluster-announce-hostname", "a b", "", "Hostnames may only contain alphanumeric characters, hyphens or dots"},
		// special
		{"save", "900 1 300 10", "900 1 300 10", ""},
		{"save", "", "", ""},
		{"save", "900", "", "Invalid save parameters"},
		{"save", "0 1", "", "Invalid save parameters"},
		{"save", "1 -1", "", "Invalid save parameters"},
		{"save", "1 x", "", "Invalid save parameters"},
		{"save", "1 4294967297", "1 1", ""},
		{"bind", "127.0.0.1 ::1", "127.0.0.1 ::1", ""},
		{"bind", "", "", ""},
		{"client-output-buffer-limit", "pubsub 1mb 512kb 5 normal 1 2 3",
			"normal 1 2 3 slave 268435456 67108864 60 pubsub 1048576 524288 5", ""},
		{"client-output-buffer-limit", "replica 1 1 1", "normal 0 0 0 slave 1 1 1 pubsub 33554432 8388608 60", ""},
		{"client-output-buffer-limit", "normal 1 2 3 pubsub", "", "Wrong number of arguments in buffer limit configuration."},
		{"client-output-buffer-limit", "foo 1 2 3", "", "Invalid client class specified in buffer limit configuration."},
		{"oom-score-adj-values", "10 20 30", "10 20 30", ""},
		{"oom-score-adj-values", "10 20 3000", "", "Invalid oom-score-adj-values, elements must be between -2000 and 2000."},
		{"oom-score-adj-values", "10 20", "", "wrong number of arguments"},
		{"notify-keyspace-events", "KEA", "AKE", ""},
		{"notify-keyspace-events", "Exg", "gxE", ""},
		{"notify-keyspace-events", "Am", "Am", ""},
		{"notify-keyspace-events", "KEAx?", "", "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."},
		{"latency-tracking-info-percentiles", "50 99.99", "50 99.99", ""},
		{"latency-tracking-info-percentiles", "", "", ""},
		{"latency-tracking-info-percentiles", "-1", "", "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"},
		{"latency-tracking-info-percentiles", "nan", "", "Invalid latency-tracking-info-percentiles parameters"},
		{"replicaof", "127.0.0.1 6379", "", "can't set immutable config"},
	}
	for _, tt := range tests {
		c := newParsing()
		err := c.Set(tt.name, tt.value)
		if tt.err != "" {
			require.Error(t, err, "%s %q", tt.name, tt.value)
			assert.Equal(t, setErr(tt.name, tt.err), err.Error())
			continue
		}
		require.NoError(t, err, "%s %q", tt.name, tt.value)
		assert.Equal(t, tt.get, c.String(tt.name), "%s %q", tt.name, tt.value)
	}
}

func TestSpecialGetters(t *testing.T) {
	c, err := loadParsing([]string{"--replicaof", "10.0.0.1", "6380", "--notify-keyspace-events", "Kx",
		"--client-output-buffer-limit", "pubsub 1mb 2mb 3", "--oom-score-adj-values", "1 2 3",
		"--latency-tracking-info-percentiles", "1.5 2", "--maxmemory-clients", "10%",
		"--unixsocketperm", "0700", "--shutdown-on-sigint", "nosave force"})
	require.NoError(t, err)
	host, port, ok := c.ReplicaOf()
	assert.True(t, ok)
	assert.Equal(t, "10.0.0.1", host)
	assert.Equal(t, 6380, port)
	assert.Equal(t, "10.0.0.1 6380", c.String("slaveof"))
	assert.Equal(t, int64(NotifyKeyspace|NotifyExpired), c.Int("notify-keyspace-events"))
	assert.Equal(t, ClientBufferLimit{1 << 20, 2 << 20, 3}, c.ClientOutputBufferLimits()[ClientPubSub])
	assert.Equal(t, [3]int{1, 2, 3}, c.OOMScoreAdjValues())
	assert.Equal(t, []float64{1.5, 2}, c.LatencyTrackingPercentiles())
	assert.Equal(t, int64(-10), c.Int("maxmemory-clients"))
	assert.Equal(t, "700", c.String("unixsocketperm"))
	assert.Equal(t, int64(0o700), c.Int("unixsocketperm"))
	assert.Equal(t, int64(ShutdownNoSave|ShutdownForce), c.Int("shutdown-on-sigint"))
	assert.Equal(t, "nosave force", c.String("shutdown-on-sigint"))

	_, err = loadParsing([]string{"--unixsocketperm", "1000"})
	assert.Contains(t, err.Error(), "argument must be between 0 and 777 inclusive")
	_, err = loadParsing([]string{"--unixsocketperm", "9"})
	assert.Contains(t, err.Error(), "argument couldn't be parsed as an octal number")
	_, err = loadParsing([]string{"--replicaof", "h", "70000"})
	assert.Contains(t, err.Error(), "Invalid master port")
}

func TestDir(t *testing.T) {
	base := t.TempDir()
	real, err := filepath.EvalSymlinks(base)
	require.NoError(t, err)
	require.NoError(t, os.Mkdir(filepath.Join(base, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(base, "file"), nil, 0o644))
	require.NoError(t, os.Symlink(filepath.Join(base, "sub"), filepath.Join(base, "link")))

	c, err := loadParsing([]string{"--dir", base, "--enable-protected-configs", "yes"})
	require.NoError(t, err)
	assert.Equal(t, real, c.String("dir"))
	require.NoError(t, c.Set("dir", "sub"))
	assert.Equal(t, filepath.Join(real, "sub"), c.String("dir"))
	require.NoError(t, c.Set("dir", ".."))
	assert.Equal(t, real, c.String("dir"))
	require.NoError(t, c.Set("dir", "link"))
	assert.Equal(t, filepath.Join(real, "sub"), c.String("dir"), "symlinks resolved like getcwd()")
	require.NoError(t, c.Set("dir", real))
	assert.Equal(t, setErr("dir", "No such file or directory"), c.Set("dir", "missing").Error())
	assert.Equal(t, setErr("dir", "Not a directory"), c.Set("dir", "file").Error())
	assert.Equal(t, setErr("dir", "No such file or directory"), c.Set("dir", "").Error())
	assert.Equal(t, real, c.String("dir"))

	// The process working directory is never changed.
	wd, err := os.Getwd()
	require.NoError(t, err)
	assert.NotEqual(t, real, wd)

	// dir is protected: refused unless enable-protected-configs allows it.
	c2 := newParsing()
	assert.Equal(t, setErr("dir", "can't set protected config"), c2.SetFromClient(true, "dir", base).Error())
}

func TestIndependentConfigs(t *testing.T) {
	a, b := newParsing(), newParsing()
	require.NoError(t, a.Set("maxmemory", "1mb", "save", "1 1"))
	assert.Equal(t, "1048576", a.String("maxmemory"))
	assert.Equal(t, "0", b.String("maxmemory"))
	assert.Equal(t, "3600 1 300 100 60 10000", b.String("save"))
	a.OnChange("hz", func(string) error { return assert.AnError })
	require.NoError(t, b.Set("hz", "20"))
	assert.True(t, strings.HasPrefix(a.Set("hz", "20").Error(), "ERR CONFIG SET failed"))
}
