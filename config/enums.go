package config

// Values returned by Config.Int for enum directives. They are the same
// numbers Redis 7.0 uses internally.

// loglevel
const (
	LogDebug   = 0
	LogVerbose = 1
	LogNotice  = 2
	LogWarning = 3
)

// maxmemory-policy flags and values.
const (
	MaxmemoryFlagLRU     = 1 << 0
	MaxmemoryFlagLFU     = 1 << 1
	MaxmemoryFlagAllKeys = 1 << 2

	MaxmemoryVolatileLRU    = (0 << 8) | MaxmemoryFlagLRU
	MaxmemoryVolatileLFU    = (1 << 8) | MaxmemoryFlagLFU
	MaxmemoryVolatileTTL    = 2 << 8
	MaxmemoryVolatileRandom = 3 << 8
	MaxmemoryAllKeysLRU     = (4 << 8) | MaxmemoryFlagLRU | MaxmemoryFlagAllKeys
	MaxmemoryAllKeysLFU     = (5 << 8) | MaxmemoryFlagLFU | MaxmemoryFlagAllKeys
	MaxmemoryAllKeysRandom  = (6 << 8) | MaxmemoryFlagAllKeys
	MaxmemoryNoEviction     = 7 << 8
)

// appendfsync
const (
	AppendFsyncNo       = 0
	AppendFsyncAlways   = 1
	AppendFsyncEverySec = 2
)

// enable-protected-configs, enable-debug-command, enable-module-command
const (
	EnableNo    = 0
	EnableYes   = 1
	EnableLocal = 2
)

// shutdown-on-sigint / shutdown-on-sigterm flags (0 means "default").
const (
	ShutdownSave   = 1
	ShutdownNoSave = 2
	ShutdownNow    = 4
	ShutdownForce  = 8
)

// repl-diskless-load
const (
	ReplDisklessLoadDisabled  = 0
	ReplDisklessLoadOnEmptyDB = 1
	ReplDisklessLoadSwapDB    = 2
)

// cluster-preferred-endpoint-type
const (
	EndpointIP              = 0
	EndpointHostname        = 1
	EndpointUnknownEndpoint = 2
)

// propagation-error-behavior
const (
	PropagationErrIgnore          = 0
	PropagationErrPanic           = 1
	PropagationErrPanicOnReplicas = 2
)

// sanitize-dump-payload
const (
	SanitizeDumpNo      = 0
	SanitizeDumpYes     = 1
	SanitizeDumpClients = 2
)

// acl-pubsub-default
const (
	ACLPubsubResetChannels = 0
	ACLPubsubAllChannels   = 1 << 3
)

// oom-score-adj
const (
	OOMScoreAdjNo       = 0
	OOMScoreAdjRelative = 1
	OOMScoreAdjAbsolute = 2
)

// notify-keyspace-events flags, as returned by Config.Int("notify-keyspace-events").
const (
	NotifyKeyspace = 1 << 0  // K
	NotifyKeyevent = 1 << 1  // E
	NotifyGeneric  = 1 << 2  // g
	NotifyString   = 1 << 3  // $
	NotifyList     = 1 << 4  // l
	NotifySet      = 1 << 5  // s
	NotifyHash     = 1 << 6  // h
	NotifyZset     = 1 << 7  // z
	NotifyExpired  = 1 << 8  // x
	NotifyEvicted  = 1 << 9  // e
	NotifyStream   = 1 << 10 // t
	NotifyKeyMiss  = 1 << 11 // m (not part of A)
	NotifyLoaded   = 1 << 12 // module only
	NotifyModule   = 1 << 13 // d
	NotifyNew      = 1 << 14 // n
	NotifyAll      = NotifyGeneric | NotifyString | NotifyList | NotifySet | NotifyHash |
		NotifyZset | NotifyExpired | NotifyEvicted | NotifyStream | NotifyModule // A
)

// Client classes of client-output-buffer-limit (indexes of
// Config.ClientOutputBufferLimits).
const (
	ClientNormal  = 0
	ClientReplica = 1
	ClientPubSub  = 2
)

func loglevelEnum() []enumItem {
	return []enumItem{{"debug", LogDebug}, {"verbose", LogVerbose}, {"notice", LogNotice}, {"warning", LogWarning}}
}

func maxmemoryPolicyEnum() []enumItem {
	return []enumItem{
		{"volatile-lru", MaxmemoryVolatileLRU},
		{"volatile-lfu", MaxmemoryVolatileLFU},
		{"volatile-random", MaxmemoryVolatileRandom},
		{"volatile-ttl", MaxmemoryVolatileTTL},
		{"allkeys-lru", MaxmemoryAllKeysLRU},
		{"allkeys-lfu", MaxmemoryAllKeysLFU},
		{"allkeys-random", MaxmemoryAllKeysRandom},
		{"noeviction", MaxmemoryNoEviction},
	}
}

// syslog facilities use the <syslog.h> LOG_* values.
func syslogFacilityEnum() []enumItem {
	return []enumItem{
		{"user", 1 << 3},
		{"local0", 16 << 3}, {"local1", 17 << 3}, {"local2", 18 << 3}, {"local3", 19 << 3},
		{"local4", 20 << 3}, {"local5", 21 << 3}, {"local6", 22 << 3}, {"local7", 23 << 3},
	}
}

func supervisedEnum() []enumItem {
	return []enumItem{{"upstart", 3}, {"systemd", 2}, {"auto", 1}, {"no", 0}}
}

func appendFsyncEnum() []enumItem {
	return []enumItem{{"everysec", AppendFsyncEverySec}, {"always", AppendFsyncAlways}, {"no", AppendFsyncNo}}
}

func shutdownOnSigEnum() []enumItem {
	return []enumItem{{"default", 0}, {"save", ShutdownSave}, {"nosave", ShutdownNoSave}, {"now", ShutdownNow}, {"force", ShutdownForce}}
}

func replDisklessLoadEnum() []enumItem {
	return []enumItem{{"disabled", ReplDisklessLoadDisabled}, {"on-empty-db", ReplDisklessLoadOnEmptyDB}, {"swapdb", ReplDisklessLoadSwapDB}}
}

func tlsAuthClientsEnum() []enumItem {
	return []enumItem{{"no", 0}, {"yes", 1}, {"optional", 2}}
}

func oomScoreAdjEnum() []enumItem {
	return []enumItem{{"no", OOMScoreAdjNo}, {"yes", OOMScoreAdjRelative}, {"relative", OOMScoreAdjRelative}, {"absolute", OOMScoreAdjAbsolute}}
}

func aclPubsubDefaultEnum() []enumItem {
	return []enumItem{{"allchannels", ACLPubsubAllChannels}, {"resetchannels", ACLPubsubResetChannels}}
}

func sanitizeDumpPayloadEnum() []enumItem {
	return []enumItem{{"no", SanitizeDumpNo}, {"yes", SanitizeDumpYes}, {"clients", SanitizeDumpClients}}
}

func protectedActionEnum() []enumItem {
	return []enumItem{{"no", EnableNo}, {"yes", EnableYes}, {"local", EnableLocal}}
}

func endpointTypeEnum() []enumItem {
	return []enumItem{{"ip", EndpointIP}, {"hostname", EndpointHostname}, {"unknown-endpoint", EndpointUnknownEndpoint}}
}

func propagationErrorBehaviorEnum() []enumItem {
	return []enumItem{{"ignore", PropagationErrIgnore}, {"panic", PropagationErrPanic}, {"panic-on-replicas", PropagationErrPanicOnReplicas}}
}
