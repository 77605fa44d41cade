package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// This file is the one place that says which Redis 7.0.15 directives shoal
// does not enforce, and what it does with them ("accepted means enforced",
// issue 14). A value that would need a feature shoal has not built is
// refused — at start-up with Redis's config-error layout, by CONFIG SET with
// Redis's CONFIG SET error — so that no configuration silently loses data
// or exposes a node. Defaults and "off" values stay accepted, so stock
// redis.conf files load. The issue that builds a feature removes its rows.
//
// Directives absent from both tables act as in Redis.

// Keywords of configuration lines that are not directives of the table but
// are refused whenever they appear.
const (
	lineLoadModule   = "loadmodule"
	lineModuleConfig = "<module>.<name>" // a module configuration, e.g. "mymodule.opt 1"
)

// refusedRow is a directive whose values named by when need a feature
// shoal does not have.
type refusedRow struct {
	name string // primary directive name, or one of the line keywords above
	when string // the refused values, as the documentation says them
	// needs reports whether a value (as CONFIG GET prints it) needs the
	// feature; nil for the line keywords, refused whenever present.
	needs   func(v string) bool
	feature string // completes "<feature> is not available in shoal"
	issue   int    // the issue that builds the feature; 0 when none plans it
	never   string // why it cannot exist in shoal (issue 0 only), may be ""
}

// Predicates over the value as CONFIG GET prints it.
func isYes(v string) bool    { return v == "yes" }
func isNo(v string) bool     { return v == "no" }
func nonEmpty(v string) bool { return v != "" }
func nonZero(v string) bool  { return v != "0" }
func other(def string) func(string) bool {
	return func(v string) bool { return v != def }
}
func oneOf(vals ...string) func(string) bool {
	return func(v string) bool {
		for _, x := range vals {
			if v == x {
				return true
			}
		}
		return false
	}
}

// Features, shared by several rows.
const (
	featKeyPass    = "Loading an encrypted TLS private key"
	featModules    = "Loading Redis modules"
	featSyslog     = "Logging to syslog"
	featCPUList    = "Pinning threads to CPUs"
	featSocketMark = "Marking listening sockets (SO_MARK)"
	featWatchdog   = "The software watchdog"
	featSupervised = "Notifying upstart or systemd (supervised)"
	featExpEffort  = "Tuning the active expiry effort"
	featNoChecksum = "Writing RDB files without checksum"
)

// keyPassNever says why tls-key-file-pass cannot be honoured.
const keyPassNever = "Go's crypto/tls reads unencrypted keys only (its PEM decryption is deprecated as insecure); " +
	"decrypt the key file (openssl pkey -in key.pem -out plain.pem) and protect it by its file mode"

// refusedRows is the table of refused values, in the documentation's order.
var refusedRows = []refusedRow{
	{name: "tls-key-file-pass", when: "not empty", needs: nonEmpty, feature: featKeyPass, never: keyPassNever},
	{name: "tls-client-key-file-pass", when: "not empty", needs: nonEmpty, feature: featKeyPass, never: keyPassNever},
	{name: lineLoadModule, when: "any line", feature: featModules, never: "a Go server cannot load C modules"},
	{name: lineModuleConfig, when: "any line", feature: featModules, never: "a Go server cannot load C modules"},
	{name: "syslog-enabled", when: "yes", needs: isYes, feature: featSyslog},
	{name: "server_cpulist", when: "not empty", needs: nonEmpty, feature: featCPUList},
	{name: "bio_cpulist", when: "not empty", needs: nonEmpty, feature: featCPUList},
	{name: "aof_rewrite_cpulist", when: "not empty", needs: nonEmpty, feature: featCPUList},
	{name: "bgsave_cpulist", when: "not empty", needs: nonEmpty, feature: featCPUList},
	{name: "socket-mark-id", when: "> 0", needs: nonZero, feature: featSocketMark},
	{name: "watchdog-period", when: "> 0", needs: nonZero, feature: featWatchdog},
	{name: "supervised", when: "not no", needs: other("no"), feature: featSupervised},
	{name: "active-expire-effort", when: "≠ 1", needs: other("1"), feature: featExpEffort},
	{name: "rdbchecksum", when: "no", needs: isNo, feature: featNoChecksum,
		never: "shoal always writes and checks the RDB checksum"},
}

// acceptedRow is a group of directives of features shoal does not have (or
// has differently) that stay accepted at every value, and why.
type acceptedRow struct {
	names []string
	// differs is true when a value (the default included) does not behave
	// exactly as in Redis; why then says how it differs.
	differs bool
	why     string
}

var acceptedRows = []acceptedRow{
	{names: []string{"tls-session-cache-size"},
		why: "inert: Go's crypto/tls resumes sessions with stateless tickets (tls-session-caching, tls-session-cache-timeout apply to them), so there is no server-side cache to size"},
	{names: []string{"tls-prefer-server-ciphers"}, differs: true,
		why: "inert: Go's crypto/tls always chooses the suite itself (the server's order, AES-GCM first where the CPU has AES instructions), as with yes; no does not follow the client's order"},
	{names: []string{"tls-dh-params-file"}, differs: true,
		why: "checked as Redis checks it (a readable PEM file of DH parameters) and then unused: Go's crypto/tls has no DHE suites (ECDHE only)"},
	{names: []string{"syslog-ident", "syslog-facility"}, why: "inert while syslog-enabled is no, as in Redis"},
	{names: []string{"oom-score-adj-values"}, why: "inert while oom-score-adj is no, as in Redis"},
	{names: []string{"activedefrag"},
		why: "yes is refused with Redis's own error for a build without jemalloc (Go has no defragmenter)"},
	{names: []string{"active-defrag-cycle-min", "active-defrag-cycle-max", "active-defrag-threshold-lower",
		"active-defrag-threshold-upper", "active-defrag-ignore-bytes", "active-defrag-max-scan-fields",
		"jemalloc-bg-thread"},
		why: "inert, as in a Redis built without jemalloc (activedefrag cannot be enabled)"},
	{names: []string{"lazyfree-lazy-eviction", "lazyfree-lazy-expire", "lazyfree-lazy-server-del",
		"lazyfree-lazy-user-del", "lazyfree-lazy-user-flush", "replica-lazy-flush"},
		why: "the keyspace changes the same way; memory is always freed in the background by Go's collector (INFO lazyfreed_objects stays 0)"},
	{names: []string{"io-threads-do-reads"},
		why: "every connection reads and writes on its own goroutine; io-threads sets how many cores serve them"},
	{names: []string{"repl-diskless-load", "rdb-del-sync-files"},
		why: "a replica reads the whole RDB transfer into memory, then flushes and loads it: the old data is served until then and kept if the transfer fails, at every value (swapdb's promise); with swapdb INFO says async_loading:1 while the transfer arrives, as Redis does while it loads into its temporary database; neither side writes the transfer to dbfilename, so there is no sync file to delete"},
	{names: []string{"activerehashing"},
		why: "inert: slot tables resize at once, there is no incremental rehashing to do"},
	{names: []string{"rdb-save-incremental-fsync"},
		why: "only changes when the RDB file is fsynced during a save, not what it holds"},
	{names: []string{"sanitize-dump-payload"},
		why: "RESTORE and RDB loading always validate payloads fully (as yes); a valid payload loads the same at every value"},
	{names: []string{"ignore-warnings", "loading-process-events-interval-bytes", "use-exit-on-panic",
		"crash-log-enabled", "crash-memcheck-enabled", "always-show-logo"},
		why: "inert: shoal has no such warnings, no native crash handler (Go prints a fatal error's stacks) and no ASCII logo"},
	{names: []string{"set-proc-title", "proc-title-template"}, differs: true,
		why: "the process title is not rewritten (ps shows the command line)"},
	{names: []string{"list-compress-depth"}, differs: true,
		why: "list nodes are never LZF-compressed (memory use only; the list's contents and replies are the same)"},
	{names: []string{"tcp-backlog"}, differs: true,
		why: "Go's listener uses the kernel's somaxconn as backlog"},
	{names: []string{"bind-source-addr"}, differs: true,
		why: "the replication link and the cluster bus's TCP connections leave from it (best effort, as Redis); the bus's UDP probes leave from the bus's own socket"},
	{names: []string{"latency-tracking", "latency-tracking-info-percentiles"}, differs: true,
		why: "INFO latencystats and LATENCY HISTOGRAM read power-of-two µs buckets, not Redis's 2-significant-digit histogram: a percentile is its bucket's upper bound"},
}

// refusedByName indexes refusedRows by name (built once: the table is
// constant).
var refusedByName = func() map[string]*refusedRow {
	m := make(map[string]*refusedRow, len(refusedRows))
	for i := range refusedRows {
		m[refusedRows[i].name] = &refusedRows[i]
	}
	return m
}()

// reason is the one line that names the missing feature.
func (r *refusedRow) reason() string {
	s := r.feature + " is not available in shoal"
	switch {
	case r.issue != 0:
		s += " (issue " + strconv.Itoa(r.issue) + " builds it)"
	case r.never != "":
		s += ": " + r.never
	}
	return s
}

// unbuiltReason returns the error text when value v of directive name needs
// a feature shoal does not have, "" otherwise.
func unbuiltReason(name, v string) string {
	r := refusedByName[name]
	if r == nil || r.needs == nil || !r.needs(v) {
		return ""
	}
	return r.reason()
}

// lineReason returns the error text for a configuration line keyword that
// is refused whenever present (loadmodule, module
// configurations).
func lineReason(keyword string) string { return refusedByName[keyword].reason() }

// lineRef is where a value was read: the line as Redis shows it, its
// number, and its rank in reading order (files included by "include" number
// their lines from 1).
type lineRef struct {
	line int
	text string
	seq  int
}

// checkUnbuilt is run on the final configuration, after every line (file,
// stdin, then the command line's options) was read, so a later line can turn
// a refused value off ("shoal-server a.conf --appendonly no" starts). The
// first refused line in reading order is reported.
func (ld *loader) checkUnbuilt() error {
	var worst *LoadError
	worstSeq := 0
	consider := func(ref lineRef, reason string) {
		if worst == nil || ref.seq < worstSeq {
			worst = &LoadError{Line: ref.line, Text: ref.text, Reason: reason}
			worstSeq = ref.seq
		}
	}
	for _, d := range ld.c.dirs {
		if reason := unbuiltReason(d.name, d.load().str); reason != "" {
			consider(ld.lastSet[d], reason)
		}
	}
	for kw, ref := range ld.refusedLines {
		consider(ref, lineReason(kw))
	}
	if worst == nil {
		return nil
	}
	return worst
}

// UnbuiltTable returns the markdown table of every Redis 7.0.15 directive
// shoal does not enforce and what it does with it (docs/CONFIG.md holds a
// copy, checked by a test).
func UnbuiltTable() string {
	c := New()
	var b strings.Builder
	b.WriteString("| directive | refused values | what shoal does | why |\n|---|---|---|---|\n")
	for _, r := range refusedRows {
		what := "refused at start-up and by CONFIG SET"
		if d := c.dir(r.name); d == nil {
			what = "refused at start-up"
		} else if d.has(FlagImmutable) {
			what = "refused at start-up (CONFIG SET: immutable)"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", r.name, r.when, what, r.reason())
	}
	rows := make([]string, 0, 64)
	for _, a := range acceptedRows {
		what := "accepted at every value"
		if a.differs {
			what = "accepted, **not enforced**"
		}
		for _, n := range a.names {
			rows = append(rows, fmt.Sprintf("| `%s` | — | %s | %s |\n", n, what, a.why))
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		return strings.Contains(rows[i], "not enforced") && !strings.Contains(rows[j], "not enforced")
	})
	for _, r := range rows {
		b.WriteString(r)
	}
	return b.String()
}
