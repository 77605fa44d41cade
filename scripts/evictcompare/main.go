// Command evictcompare runs the same eviction workload against redis-server
// and shoal-server under a memory limit, in one run, and prints both side by
// side (issue 17, "Must show").
//
// For each policy (default allkeys-lru, allkeys-lfu, noeviction) each server
// is started on a free 127.0.0.1 port with its own temporary --dir,
// --save "", --appendonly no, --maxmemory 16mb and that policy, redis first,
// then shoal, one server at a time. The workload sends the same bytes to
// both (fixed seed):
//
//	SET 2,000 hot keys, then stream 60,000 cold keys (300-byte values, ~17 MiB)
//	in pipelined batches of -read-every (100) SETs, each followed by a
//	pipelined batch of -read-batch (200) GETs of hot keys drawn from a seeded
//	generator, then a -pause (25 ms).
//
// The pause is there because Redis's LRU clock ticks once a second: a
// stream sent flat out (0.6 s) leaves every key with the same idle time,
// allkeys-lru evicts at random, and Redis keeps 1,100-1,700 of the 2,000
// hot keys, varying run to run. Paced over ~16 s, recency means something
// and Redis keeps all of them. The loop is bounded by count; the pause only
// spreads it out (-pause 0 sends flat out).
//
// It then reports how many hot and cold keys survive, INFO evicted_keys,
// used_memory, used_memory_peak, maxmemory, used_memory_rss, the process's
// VmRSS and VmHWM from /proc, and the server's CPU per request over the
// workload: utime+stime of /proc/<pid>/stat and the exact on-CPU time of
// /proc/<pid>/task/*/schedstat, with the server's idle CPU (a second before
// the workload) beside it, as the paced figure includes the pauses' share.
//
// A noeviction run fills a server past the limit, keeps the exact bytes of
// the first refused SET, and checks that DBSIZE counts exactly the SETs
// that were answered OK (a refused SET wrote nothing), then probes once
// more with a single SET between two DBSIZEs.
//
// A server that does not start with the configuration (it exits, e.g. shoal
// before issue 17: "Eviction under a memory limit (maxmemory) is not
// available") gets a "refused" row with the reason from its log, and the
// run goes on.
//
//	go run ./scripts/evictcompare                      # bin/shoal-server vs /usr/bin/redis-server
//	go run ./scripts/evictcompare -shoal /usr/bin/redis-server   # checks the tool itself
//	make evict-compare
//
// Output: a markdown table (redis, shoal, shoal/redis), the issue's checks
// as PASS/FAIL lines, and one JSON object per server and policy (-json FILE
// also writes them there). Exit status 0 even when a check fails, unless
// -strict. Only the servers it starts are signalled, by their process.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// options is the workload, the same for every server and policy.
type options struct {
	maxmemory string
	hot       int
	cold      int
	valueSize int
	readEvery int           // cold SETs between two batches of hot GETs
	readBatch int           // hot GETs per batch
	pause     time.Duration // between two batches: the stream spans seconds (see main's doc)
	seed      uint64
	fillLimit int           // noeviction: SETs at most before giving up on a refusal
	idle      time.Duration // how long the server's idle CPU is measured, before the workload
}

// run is one server under one policy: what the JSON rows hold.
type run struct {
	Server  string `json:"server"` // "redis" or "shoal"
	Binary  string `json:"binary"`
	Policy  string `json:"policy"`
	Refused string `json:"refused,omitempty"` // why the server did not start with the config
	Error   string `json:"error,omitempty"`   // the run broke off (connection lost, server died)

	// what the server says it runs with (CONFIG GET), to catch a limit accepted and ignored
	ConfigMaxmemory string `json:"config_maxmemory,omitempty"`
	ConfigPolicy    string `json:"config_policy,omitempty"`

	HotKeys        int     `json:"hot_keys"`
	ColdKeys       int     `json:"cold_keys"`
	HotSurvived    int     `json:"hot_survived"`
	ColdSurvived   int     `json:"cold_survived"`
	HotReads       int     `json:"hot_reads"`      // GETs of hot keys during the stream
	HotReadHits    int     `json:"hot_read_hits"`  // ... that found the key
	HotReadWrong   int     `json:"hot_read_wrong"` // ... that found another value (must be 0)
	WriteErrors    int     `json:"write_errors"`   // SETs not answered +OK (allkeys-*: must be 0)
	FirstWriteErr  string  `json:"first_write_error,omitempty"`
	Requests       int     `json:"requests"` // commands of the workload, the CPU's divisor
	CPU            cpuUse  `json:"server_cpu"`
	IdleCPU        float64 `json:"idle_cpu_us_per_s"` // schedstat over a second before the workload
	WallSeconds    float64 `json:"wall_s"`
	EvictedKeys    int64   `json:"evicted_keys"`
	UsedMemory     int64   `json:"used_memory"`
	UsedMemoryPeak int64   `json:"used_memory_peak"`
	Maxmemory      int64   `json:"maxmemory"`
	UsedOverMax    float64 `json:"used_memory_over_maxmemory"`
	UsedMemoryRSS  int64   `json:"used_memory_rss"`
	VmRSS          int64   `json:"vm_rss"`
	VmHWM          int64   `json:"vm_hwm"`
	DBSize         int64   `json:"dbsize"`

	Noeviction *refusals `json:"noeviction,omitempty"` // the noeviction run's findings
}

// refusals is what a noeviction run finds.
type refusals struct {
	OKBeforeRefusal  int    `json:"ok_before_refusal"`
	FirstRefusal     string `json:"first_refusal"` // raw reply bytes
	DBSizeAfterFill  int64  `json:"dbsize_after_fill"`
	ProbeRefusal     string `json:"probe_refusal"` // raw reply to one more SET
	ProbeDBSizeDelta int64  `json:"probe_dbsize_delta"`
	ProbeKeyExists   int64  `json:"probe_key_exists"`
	WroteNothing     bool   `json:"wrote_nothing"` // DBSIZE = SETs OK, probe +0 and absent
}

func main() {
	redisBin := flag.String("redis", envOr("REDIS_SERVER", "/usr/bin/redis-server"), "baseline server binary ($REDIS_SERVER)")
	shoalBin := flag.String("shoal", envOr("SHOAL_SERVER", "bin/shoal-server"), "candidate server binary ($SHOAL_SERVER)")
	policies := flag.String("policies", "allkeys-lru,allkeys-lfu,noeviction", "policies to run, comma-separated")
	var o options
	flag.StringVar(&o.maxmemory, "maxmemory", "16mb", "--maxmemory of both servers")
	flag.IntVar(&o.hot, "hot", 2000, "hot keys")
	flag.IntVar(&o.cold, "cold", 60000, "cold keys streamed through")
	flag.IntVar(&o.valueSize, "value", 300, "value size in bytes")
	flag.IntVar(&o.readEvery, "read-every", 100, "cold SETs between two batches of hot GETs")
	flag.IntVar(&o.readBatch, "read-batch", 200, "hot GETs per batch")
	flag.DurationVar(&o.pause, "pause", 25*time.Millisecond, "pause after each batch of hot GETs (0: flat out)")
	flag.Uint64Var(&o.seed, "seed", 17, "seed of the values and of the hot reads")
	flag.IntVar(&o.fillLimit, "fill-limit", 500000, "noeviction: give up after this many SETs without a refusal")
	flag.DurationVar(&o.idle, "idle", time.Second, "measure the server's idle CPU this long before the workload")
	jsonOut := flag.String("json", "", "also write the JSON rows to this file")
	strict := flag.Bool("strict", false, "exit 1 when a check fails or a server refuses")
	flag.Parse()
	if o.hot < 1 || o.hot > 1_000_000 || o.cold < 1 || o.cold > 10_000_000 || o.valueSize < 16 || o.valueSize > 1<<20 ||
		o.readEvery < 1 || o.readEvery > 10_000 || o.readBatch < 0 || o.readBatch > 10_000 || o.fillLimit < 1 || o.fillLimit > 50_000_000 ||
		o.pause < 0 || o.pause > time.Second || o.idle <= 0 || o.idle > time.Minute {
		fail(2, "hot 1..1e6, cold 1..1e7, value 16..1MiB, read-every 1..10000, read-batch 0..10000, fill-limit 1..5e7, pause 0..1s, idle up to 1m")
	}
	servers := [][2]string{{"redis", *redisBin}, {"shoal", *shoalBin}}
	for i := range servers {
		p, err := exec.LookPath(servers[i][1])
		if err != nil {
			fail(2, "%s binary %q: %v", servers[i][0], servers[i][1], err)
		}
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		servers[i][1] = p
	}

	var rows []run
	for _, policy := range strings.Split(*policies, ",") {
		policy = strings.TrimSpace(policy)
		if policy == "" {
			continue
		}
		for _, sv := range servers { // interleaved: redis then shoal, policy by policy
			r := runOne(sv[0], sv[1], policy, o)
			logf("%s %s: %s", sv[0], policy, r.summary())
			rows = append(rows, r)
		}
	}

	failed := printReport(os.Stdout, rows, o, servers)
	if *jsonOut != "" {
		var b bytes.Buffer
		writeJSONLines(&b, rows)
		if err := os.WriteFile(*jsonOut, b.Bytes(), 0o644); err != nil {
			fail(1, "write %s: %v", *jsonOut, err)
		}
	}
	if *strict && failed {
		os.Exit(1)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func fail(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "evictcompare: "+format+"\n", args...)
	os.Exit(code)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[evictcompare %s] "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func (r *run) summary() string {
	switch {
	case r.Refused != "":
		return "refused: " + r.Refused
	case r.Error != "":
		return "error: " + r.Error
	case r.Policy == "noeviction":
		return fmt.Sprintf("%d SETs OK, then %q; dbsize %d; probe delta %d", r.Noeviction.OKBeforeRefusal, r.Noeviction.FirstRefusal, r.Noeviction.DBSizeAfterFill, r.Noeviction.ProbeDBSizeDelta)
	}
	return fmt.Sprintf("hot %d/%d, cold %d/%d, evicted %d, used_memory %d, rss %d, %.2f µs/req",
		r.HotSurvived, r.HotKeys, r.ColdSurvived, r.ColdKeys, r.EvictedKeys, r.UsedMemory, r.VmRSS, r.CPU.SchedPerRequest)
}
