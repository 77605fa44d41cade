package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// FlagExtension marks shoal's own directives, which Redis 7.0.15 does not
// have. They are also hidden (CONFIG GET * stays byte-for-byte Redis's) and
// answer CONFIG GET only when named exactly.
const FlagExtension Flag = 1 << 16

// shoalDirectives are the directives of shoal's deployment features (issue
// 9: metrics, self-forming clusters, per-slot statistics, handing slots
// over at shutdown). They come after
// Redis's table, so CONFIG REWRITE appends them last.
func shoalDirectives() []*directive {
	const (
		ext = FlagExtension | FlagHidden
		imm = FlagImmutable
		S   = false
	)
	return []*directive{
		// metrics-port serves Prometheus /metrics and the /ready and
		// /live probes over HTTP; 0 = off.
		numD("metrics-port", "", ext|imm, S, 0, 65535, 0, 0),
		// cluster-seeds: "host:port[@busport],..." — the nodes a fresh
		// node meets at start (and meets again while any known node is
		// unreachable, so that peers that moved are found by name).
		strD("cluster-seeds", "", ext|imm, false, "", false).withValidStr(validClusterSeeds),
		// cluster-bootstrap-masters N (0 = off) with cluster-bootstrap-
		// replicas R: once N*(1+R) nodes know each other, every node
		// computes the same slot assignment and replica attachment.
		numD("cluster-bootstrap-masters", "", ext|imm, S, 0, 16384, 0, 0),
		numD("cluster-bootstrap-replicas", "", ext|imm, S, 0, 64, 1, 0),
		// cluster-slot-stats-enabled: count per-slot CPU time and network
		// bytes for CLUSTER SLOT-STATS (as Valkey 8; key counts are always
		// available).
		boolD("cluster-slot-stats-enabled", "", ext, false),
		// cluster-failover-on-shutdown S: on SIGTERM/SIGINT a master
		// serving slots first hands them to a replica (CLUSTER FAILOVER on
		// the replica), waiting at most S seconds; 0 = off.
		numD("cluster-failover-on-shutdown", "", ext, S, 0, 3600, 0, 0),
		// cluster-bus-secret "NEW [OLD...]": the cluster bus's shared
		// secrets (gossip.SecretKeys derives one AES-256 key from each).
		// The first encrypts, every one decrypts, so a rotation is
		// "A" -> "A B" -> "B A" -> "B", one step on every node at a time.
		// Sensitive like requirepass: CONFIG SET's argument is redacted
		// from SLOWLOG and MONITOR; CONFIG GET by exact name answers it
		// (as Redis answers requirepass: whoever may run CONFIG GET may
		// also CONFIG SET it, so hiding the value would protect nothing).
		strD("cluster-bus-secret", "", ext|FlagSensitive, false, "", false).withValidStr(validClusterBusSecret),
	}
}

// Bounds of cluster-bus-secret: each secret is the only thing standing
// between an attacker who can capture bus traffic and an offline guess of
// the key, so a short one is refused; the count bounds the keyring.
const (
	MinClusterBusSecretLen = 16
	MaxClusterBusSecrets   = 8
)

// ClusterBusSecrets splits cluster-bus-secret into its secrets, the one
// that encrypts first.
func ClusterBusSecrets(v string) []string { return strings.Fields(v) }

func validClusterBusSecret(_ *Config, v string) string {
	secrets := ClusterBusSecrets(v)
	if len(secrets) > MaxClusterBusSecrets {
		return fmt.Sprintf("at most %d secrets (the first encrypts, all decrypt)", MaxClusterBusSecrets)
	}
	for _, s := range secrets {
		if len(s) < MinClusterBusSecretLen {
			return fmt.Sprintf("each secret must be at least %d characters long", MinClusterBusSecretLen)
		}
	}
	return ""
}

// ClusterSeed is one entry of cluster-seeds: a host name or IP, the client
// port, and the bus port (0 = port+10000).
type ClusterSeed struct {
	Host        string
	Port, CPort int
}

// ParseClusterSeeds parses cluster-seeds: comma- or space-separated
// "host:port" or "host:port@busport" entries ("[v6addr]:port" for IPv6).
func ParseClusterSeeds(v string) ([]ClusterSeed, error) {
	var out []ClusterSeed
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }) {
		addr, busPart, hasBus := strings.Cut(f, "@")
		host, portStr, err := net.SplitHostPort(addr)
		if err != nil || host == "" {
			return nil, fmt.Errorf("invalid seed '%s' (want host:port[@busport])", f)
		}
		port, err := strconv.Atoi(portStr)
		if err != nil || port <= 0 || port > 65535 {
			return nil, fmt.Errorf("invalid port in seed '%s'", f)
		}
		seed := ClusterSeed{Host: host, Port: port}
		if hasBus {
			cport, err := strconv.Atoi(busPart)
			if err != nil || cport <= 0 || cport > 65535 {
				return nil, fmt.Errorf("invalid bus port in seed '%s'", f)
			}
			seed.CPort = cport
		}
		out = append(out, seed)
	}
	return out, nil
}

func validClusterSeeds(_ *Config, v string) string {
	if _, err := ParseClusterSeeds(v); err != nil {
		return err.Error()
	}
	return ""
}
