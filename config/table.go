package config

import (
	"math"
	"strings"
)

const (
	cIntMin  = math.MinInt32
	cIntMax  = math.MaxInt32
	cUintMax = math.MaxUint32
	cLongMax = math.MaxInt64
	// maxStoredLen is the longest key or string the keyspace stores.
	maxStoredLen = math.MaxUint32
	cLLongMax    = math.MaxInt64
	cSSizeMax    = math.MaxInt64
	// cULLongMax is ULLONG_MAX stored as the int64 bit pattern; only used
	// with unsigned directives.
	cULLongMax = -1

	defaultProcTitleTemplate = "{title} {listen-addr} {server-mode}"
	minHz                    = 1
	maxHz                    = 500
	bindAddrMax              = 16
	netHostStrLen            = 256
)

func boolD(name, alias string, fl Flag, def bool) *directive {
	return &directive{name: name, alias: alias, typ: TypeBool, flags: fl, def: boolValue(def)}
}

// numD declares an integer directive. unsigned selects Redis's unsigned
// boundary check (unsigned int, size_t, unsigned long long).
func numD(name, alias string, fl Flag, unsigned bool, lo, hi, def int64, nf int) *directive {
	d := &directive{name: name, alias: alias, typ: TypeInt, flags: fl, unsigned: unsigned,
		lower: lo, upper: hi, numFlags: nf}
	d.def = d.numValue(def)
	return d
}

func enumD(name, alias string, fl Flag, items []enumItem, def int64) *directive {
	d := &directive{name: name, alias: alias, typ: TypeEnum, flags: fl, enum: items}
	d.def = d.enumValue(def)
	return d
}

// strD declares a string directive. emptyIsNull mirrors EMPTY_STRING_IS_NULL;
// defNull means the default is NULL (CONFIG GET prints "").
func strD(name, alias string, fl Flag, emptyIsNull bool, def string, defNull bool) *directive {
	return &directive{name: name, alias: alias, typ: TypeString, flags: fl, emptyIsNull: emptyIsNull,
		defNull: defNull, def: &value{str: def}}
}

func specialD(name, alias string, fl Flag, ops *specialOps, def *value) *directive {
	return &directive{name: name, alias: alias, typ: TypeSpecial, flags: fl, special: ops, def: def}
}

func (d *directive) withValidInt(f func(int64) string) *directive {
	d.validInt = f
	return d
}

func (d *directive) withValidStr(f func(c *Config, v string) string) *directive {
	d.validStr = f
	return d
}

func nullStr(name, alias string, fl Flag) *directive { return strD(name, alias, fl, true, "", true) }

// buildDirectives returns a fresh directive table, in the order of Redis
// 7.0.15's static_configs[] (which is also the order CONFIG REWRITE uses).
func buildDirectives(cwd string) []*directive {
	const (
		imm   = FlagImmutable
		dbg   = FlagDebug
		sens  = FlagSensitive
		prot  = FlagProtected
		hid   = FlagHidden
		multi = FlagMultiArg
		deny  = FlagDenyLoading
		vol   = FlagVolatile
		mem   = numMemory
		pct   = numPercent
		oct   = numOctal
		S     = false // signed boundary check
		U     = true  // unsigned boundary check
	)
	return []*directive{
		// Bool configs
		boolD("rdbchecksum", "", imm, true),
		boolD("daemonize", "", imm, false),
		boolD("io-threads-do-reads", "", dbg|imm, false),
		boolD("always-show-logo", "", imm, false),
		boolD("protected-mode", "", 0, true),
		boolD("rdbcompression", "", 0, true),
		boolD("rdb-del-sync-files", "", 0, false),
		boolD("activerehashing", "", 0, true),
		boolD("stop-writes-on-bgsave-error", "", 0, true),
		boolD("set-proc-title", "", imm, true),
		boolD("dynamic-hz", "", 0, true),
		boolD("lazyfree-lazy-eviction", "", dbg, false),
		boolD("lazyfree-lazy-expire", "", dbg, false),
		boolD("lazyfree-lazy-server-del", "", dbg, false),
		boolD("lazyfree-lazy-user-del", "", dbg, false),
		boolD("lazyfree-lazy-user-flush", "", dbg, false),
		boolD("repl-disable-tcp-nodelay", "", 0, false),
		boolD("repl-diskless-sync", "", dbg, true),
		boolD("aof-rewrite-incremental-fsync", "", 0, true),
		boolD("no-appendfsync-on-rewrite", "", 0, false),
		boolD("cluster-require-full-coverage", "", 0, true),
		boolD("rdb-save-incremental-fsync", "", 0, true),
		boolD("aof-load-truncated", "", 0, true),
		boolD("aof-use-rdb-preamble", "", 0, true),
		boolD("aof-timestamp-enabled", "", 0, false),
		boolD("cluster-replica-no-failover", "cluster-slave-no-failover", 0, false),
		boolD("replica-lazy-flush", "slave-lazy-flush", 0, false),
		boolD("replica-serve-stale-data", "slave-serve-stale-data", 0, true),
		boolD("replica-read-only", "slave-read-only", dbg, true),
		boolD("replica-ignore-maxmemory", "slave-ignore-maxmemory", 0, true),
		boolD("jemalloc-bg-thread", "", 0, true),
		boolD("activedefrag", "", dbg, false).withValidInt(validActiveDefrag),
		boolD("syslog-enabled", "", imm, false),
		boolD("cluster-enabled", "", imm, false),
		boolD("appendonly", "", deny, false),
		boolD("cluster-allow-reads-when-down", "", 0, false),
		boolD("cluster-allow-pubsubshard-when-down", "", 0, true),
		boolD("crash-log-enabled", "", 0, true),
		boolD("crash-memcheck-enabled", "", 0, true),
		boolD("use-exit-on-panic", "", hid, false),
		boolD("disable-thp", "", imm, true),
		boolD("cluster-allow-replica-migration", "", 0, true),
		boolD("replica-announced", "", 0, true),
		boolD("latency-tracking", "", 0, true),
		boolD("aof-disable-auto-gc", "", 0, false),
		boolD("replica-ignore-disk-write-errors", "", 0, false),

		// String configs
		strD("aclfile", "", imm, false, "", false),
		nullStr("unixsocket", "", imm),
		nullStr("pidfile", "", imm),
		nullStr("replica-announce-ip", "slave-announce-ip", 0),
		nullStr("masteruser", "", sens),
		nullStr("cluster-announce-ip", "", 0),
		strD("cluster-config-file", "", imm, false, "nodes.conf", false),
		nullStr("cluster-announce-hostname", "", 0).withValidStr(validAnnouncedHostname),
		strD("syslog-ident", "", imm, false, "redis", false),
		strD("dbfilename", "", prot, false, "dump.rdb", false).withValidStr(validDBFilename),
		strD("appendfilename", "", imm, false, "appendonly.aof", false).withValidStr(validAOFFilename),
		strD("appenddirname", "", imm, false, "appendonlydir", false).withValidStr(validAOFDirname),
		nullStr("server_cpulist", "", imm),
		nullStr("bio_cpulist", "", imm),
		nullStr("aof_rewrite_cpulist", "", imm),
		nullStr("bgsave_cpulist", "", imm),
		strD("ignore-warnings", "", 0, false, "", false),
		strD("proc-title-template", "", 0, false, defaultProcTitleTemplate, false).withValidStr(validProcTitleTemplate),
		nullStr("bind-source-addr", "", 0),
		strD("logfile", "", imm, false, "", false),

		// SDS configs
		nullStr("masterauth", "", sens),
		nullStr("requirepass", "", sens),

		// Enum configs
		enumD("supervised", "", imm, supervisedEnum(), 0),
		enumD("syslog-facility", "", imm, syslogFacilityEnum(), 16<<3),
		enumD("repl-diskless-load", "", dbg|deny, replDisklessLoadEnum(), ReplDisklessLoadDisabled),
		enumD("loglevel", "", 0, loglevelEnum(), LogNotice),
		enumD("maxmemory-policy", "", 0, maxmemoryPolicyEnum(), MaxmemoryNoEviction),
		enumD("appendfsync", "", 0, appendFsyncEnum(), AppendFsyncEverySec),
		enumD("oom-score-adj", "", 0, oomScoreAdjEnum(), OOMScoreAdjNo),
		enumD("acl-pubsub-default", "", 0, aclPubsubDefaultEnum(), ACLPubsubResetChannels),
		enumD("sanitize-dump-payload", "", dbg, sanitizeDumpPayloadEnum(), SanitizeDumpNo),
		enumD("enable-protected-configs", "", imm, protectedActionEnum(), EnableNo),
		enumD("enable-debug-command", "", imm, protectedActionEnum(), EnableNo),
		enumD("enable-module-command", "", imm, protectedActionEnum(), EnableNo),
		enumD("cluster-preferred-endpoint-type", "", 0, endpointTypeEnum(), EndpointIP),
		enumD("propagation-error-behavior", "", 0, propagationErrorBehaviorEnum(), PropagationErrIgnore),
		enumD("shutdown-on-sigint", "", multi, shutdownOnSigEnum(), 0).withValidInt(validShutdownOnSigFlags),
		enumD("shutdown-on-sigterm", "", multi, shutdownOnSigEnum(), 0).withValidInt(validShutdownOnSigFlags),

		// Integer configs
		numD("databases", "", imm, S, 1, cIntMax, 16, 0),
		numD("port", "", 0, S, 0, 65535, 6379, 0),
		numD("io-threads", "", dbg|imm, S, 1, 128, 1, 0),
		numD("auto-aof-rewrite-percentage", "", 0, S, 0, cIntMax, 100, 0),
		numD("cluster-replica-validity-factor", "cluster-slave-validity-factor", 0, S, 0, cIntMax, 10, 0),
		numD("list-max-listpack-size", "list-max-ziplist-size", 0, S, cIntMin, cIntMax, -2, 0),
		numD("tcp-keepalive", "", 0, S, 0, cIntMax, 300, 0),
		numD("cluster-migration-barrier", "", 0, S, 0, cIntMax, 1, 0),
		numD("active-defrag-cycle-min", "", 0, S, 1, 99, 1, 0),
		numD("active-defrag-cycle-max", "", 0, S, 1, 99, 25, 0),
		numD("active-defrag-threshold-lower", "", 0, S, 0, 1000, 10, 0),
		numD("active-defrag-threshold-upper", "", 0, S, 0, 1000, 100, 0),
		numD("lfu-log-factor", "", 0, S, 0, cIntMax, 10, 0),
		numD("lfu-decay-time", "", 0, S, 0, cIntMax, 1, 0),
		numD("replica-priority", "slave-priority", 0, S, 0, cIntMax, 100, 0),
		numD("repl-diskless-sync-delay", "", 0, S, 0, cIntMax, 5, 0),
		numD("maxmemory-samples", "", 0, S, 1, cIntMax, 5, 0),
		numD("maxmemory-eviction-tenacity", "", 0, S, 0, 100, 10, 0),
		numD("timeout", "", 0, S, 0, cIntMax, 0, 0),
		numD("replica-announce-port", "slave-announce-port", 0, S, 0, 65535, 0, 0),
		numD("tcp-backlog", "", imm, S, 0, cIntMax, 511, 0),
		numD("cluster-port", "", imm, S, 0, 65535, 0, 0),
		numD("cluster-announce-bus-port", "", 0, S, 0, 65535, 0, 0),
		numD("cluster-announce-port", "", 0, S, 0, 65535, 0, 0),
		numD("cluster-announce-tls-port", "", 0, S, 0, 65535, 0, 0),
		numD("repl-timeout", "", 0, S, 1, cIntMax, 60, 0),
		numD("repl-ping-replica-period", "repl-ping-slave-period", 0, S, 1, cIntMax, 10, 0),
		numD("list-compress-depth", "", dbg, S, 0, cIntMax, 0, 0),
		numD("rdb-key-save-delay", "", hid, S, cIntMin, cIntMax, 0, 0),
		numD("key-load-delay", "", hid, S, cIntMin, cIntMax, 0, 0),
		numD("active-expire-effort", "", 0, S, 1, 10, 1, 0),
		withClamp(numD("hz", "", 0, S, 0, cIntMax, 10, 0), clampHz),
		numD("min-replicas-to-write", "min-slaves-to-write", 0, S, 0, cIntMax, 0, 0),
		numD("min-replicas-max-lag", "min-slaves-max-lag", 0, S, 0, cIntMax, 10, 0),
		numD("watchdog-period", "", hid, S, 0, cIntMax, 0, 0),
		numD("shutdown-timeout", "", 0, S, 0, cIntMax, 10, 0),
		numD("repl-diskless-sync-max-replicas", "", 0, S, 0, cIntMax, 0, 0),

		// Unsigned int configs
		numD("maxclients", "", 0, U, 1, cUintMax, 10000, 0),
		numD("unixsocketperm", "", imm, U, 0, 0o777, 0, oct),
		numD("socket-mark-id", "", imm, U, 0, cUintMax, 0, 0),

		// Unsigned long configs (signed boundary check in Redis)
		numD("active-defrag-max-scan-fields", "", 0, S, 1, cLongMax, 1000, 0),
		numD("slowlog-max-len", "", 0, S, 0, cLongMax, 128, 0),
		numD("acllog-max-len", "", 0, S, 0, cLongMax, 128, 0),

		// Long long configs
		numD("busy-reply-threshold", "lua-time-limit", 0, S, 0, cLongMax, 5000, 0),
		numD("cluster-node-timeout", "", 0, S, 0, cLLongMax, 15000, 0),
		numD("slowlog-log-slower-than", "", 0, S, -1, cLLongMax, 10000, 0),
		numD("latency-monitor-threshold", "", 0, S, 0, cLLongMax, 0, 0),
		// Redis allows up to LONG_MAX; shoal's keyspace entry holds a
		// key's and a string's length in 32 bits (store/entry.go), and
		// this directive bounds both (every bulk read, and APPEND,
		// SETRANGE, SETBIT growing a string): more is refused, not cut.
		numD("proto-max-bulk-len", "", dbg, S, 1024*1024, maxStoredLen, 512*1024*1024, mem),
		numD("stream-node-max-entries", "", 0, S, 0, cLLongMax, 100, 0),
		numD("repl-backlog-size", "", 0, S, 1, cLLongMax, 1024*1024, mem),

		// Unsigned long long configs
		numD("maxmemory", "", 0, U, 0, cULLongMax, 0, mem),
		numD("cluster-link-sendbuf-limit", "", 0, U, 0, cULLongMax, 0, mem),

		// Size_t configs
		numD("hash-max-listpack-entries", "hash-max-ziplist-entries", 0, U, 0, cLongMax, 512, 0),
		numD("set-max-intset-entries", "", 0, U, 0, cLongMax, 512, 0),
		numD("zset-max-listpack-entries", "zset-max-ziplist-entries", 0, U, 0, cLongMax, 128, 0),
		numD("active-defrag-ignore-bytes", "", 0, U, 1, cLLongMax, 100<<20, mem),
		numD("hash-max-listpack-value", "hash-max-ziplist-value", 0, U, 0, cLongMax, 64, mem),
		numD("stream-node-max-bytes", "", 0, U, 0, cLongMax, 4096, mem),
		numD("zset-max-listpack-value", "zset-max-ziplist-value", 0, U, 0, cLongMax, 64, mem),
		numD("hll-sparse-max-bytes", "", 0, U, 0, cLongMax, 3000, mem),
		numD("tracking-table-max-keys", "", 0, U, 0, cLongMax, 1000000, 0),
		numD("client-query-buffer-limit", "", dbg, U, 1024*1024, cLongMax, 1024*1024*1024, mem),
		numD("maxmemory-clients", "", 0, S, -100, cSSizeMax, 0, mem|pct),

		// Other configs
		numD("repl-backlog-ttl", "", 0, S, 0, cLongMax, 60*60, 0),
		numD("auto-aof-rewrite-min-size", "", 0, S, 0, cLLongMax, 64*1024*1024, mem),
		numD("loading-process-events-interval-bytes", "", hid, S, 1024, cIntMax, 1024*1024*2, 0),

		// TLS configs
		numD("tls-port", "", 0, S, 0, 65535, 0, 0),
		numD("tls-session-cache-size", "", 0, S, 0, cIntMax, 20*1024, 0),
		numD("tls-session-cache-timeout", "", 0, S, 0, cIntMax, 300, 0),
		boolD("tls-cluster", "", 0, false),
		boolD("tls-replication", "", 0, false),
		enumD("tls-auth-clients", "", 0, tlsAuthClientsEnum(), 1),
		boolD("tls-prefer-server-ciphers", "", 0, false),
		boolD("tls-session-caching", "", 0, true),
		nullStr("tls-cert-file", "", vol),
		nullStr("tls-key-file", "", vol),
		nullStr("tls-key-file-pass", "", 0),
		nullStr("tls-client-cert-file", "", vol),
		nullStr("tls-client-key-file", "", vol),
		nullStr("tls-client-key-file-pass", "", 0),
		nullStr("tls-dh-params-file", "", vol),
		nullStr("tls-ca-cert-file", "", vol),
		nullStr("tls-ca-cert-dir", "", vol),
		nullStr("tls-protocols", "", 0),
		nullStr("tls-ciphers", "", 0),
		nullStr("tls-ciphersuites", "", 0),

		// Special configs
		specialD("dir", "", prot|deny, dirOps(), &value{str: cwd}),
		specialD("save", "", multi, saveOps(), defaultSave()),
		specialD("client-output-buffer-limit", "", multi, coblOps(), defaultCOBL()),
		specialD("oom-score-adj-values", "", multi, oomValuesOps(), defaultOOMValues()),
		specialD("notify-keyspace-events", "", 0, notifyOps(), &value{num: 0, str: ""}),
		specialD("bind", "", multi, bindOps(), defaultBind()),
		specialD("replicaof", "slaveof", imm|multi, replicaOfOps(), &value{data: replicaOf{}}),
		specialD("latency-tracking-info-percentiles", "", multi, percentilesOps(), defaultPercentiles()),
	}
}

func withClamp(d *directive, f func(int64) int64) *directive {
	d.clamp = f
	return d
}

// clampHz mirrors updateHZ(): hz is a hint, out of range values are capped.
func clampHz(n int64) int64 {
	if n < minHz {
		return minHz
	}
	if n > maxHz {
		return maxHz
	}
	return n
}

func validActiveDefrag(v int64) string {
	if v != 0 {
		// Like a Redis built without jemalloc: Go has no active defragmenter.
		return "Active defragmentation cannot be enabled: it requires a Redis server compiled " +
			"with a modified Jemalloc like the one shipped by default with the Redis source distribution"
	}
	return ""
}

func validShutdownOnSigFlags(v int64) string {
	if v&ShutdownNoSave != 0 && v&ShutdownSave != 0 {
		return "shutdown options SAVE and NOSAVE can't be used simultaneously"
	}
	return ""
}

func pathIsBaseName(p string) bool { return !strings.ContainsAny(p, `/\`) }

func validDBFilename(_ *Config, v string) string {
	if !pathIsBaseName(v) {
		return "dbfilename can't be a path, just a filename"
	}
	return ""
}

func validAOFFilename(_ *Config, v string) string {
	if v == "" {
		return "appendfilename can't be empty"
	}
	if !pathIsBaseName(v) {
		return "appendfilename can't be a path, just a filename"
	}
	return ""
}

func validAOFDirname(_ *Config, v string) string {
	if v == "" {
		return "appenddirname can't be empty"
	}
	if !pathIsBaseName(v) {
		return "appenddirname can't be a path, just a dirname"
	}
	return ""
}

func validAnnouncedHostname(_ *Config, v string) string {
	if i := strings.IndexByte(v, 0); i >= 0 {
		v = v[:i]
	}
	if len(v) >= netHostStrLen {
		return "Hostnames must be less than 256 characters"
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.') {
			return "Hostnames may only contain alphanumeric characters, hyphens or dots"
		}
	}
	return ""
}

// validProcTitleTemplate mirrors validateProcTitleTemplate(): the template
// is expanded with an empty title; unknown variables, a dangling '{' or an
// empty (after trimming spaces) result are rejected.
func validProcTitleTemplate(c *Config, v string) string {
	const bad = "template format is invalid or contains unknown variables"
	vars := func(name string) (string, bool) {
		switch name {
		case "title":
			return "", true
		case "listen-addr":
			return "*:6379", true // never empty
		case "server-mode":
			if c != nil && c.Bool("cluster-enabled") {
				return "[cluster]", true
			}
			return "", true
		case "config-file":
			return "-", true
		case "port", "tls-port":
			return "0", true
		case "unixsocket":
			if c != nil {
				return c.String("unixsocket"), true
			}
			return "", true
		}
		return "", false
	}
	if i := strings.IndexByte(v, 0); i >= 0 {
		v = v[:i]
	}
	var res strings.Builder
	p := v
	for len(p) > 0 {
		sv := strings.IndexByte(p, '{')
		if sv < 0 {
			res.WriteString(p)
			break
		}
		res.WriteString(p[:sv])
		rest := p[sv+1:]
		if rest == "" {
			return bad
		}
		if rest[0] == '{' {
			res.WriteByte('{')
			p = rest[1:]
			continue
		}
		ev := strings.IndexByte(rest, '}')
		if ev < 0 {
			return bad
		}
		val, ok := vars(rest[:ev])
		if !ok {
			return bad
		}
		res.WriteString(val)
		p = rest[ev+1:]
	}
	if strings.Trim(res.String(), " ") == "" {
		return bad
	}
	return ""
}
