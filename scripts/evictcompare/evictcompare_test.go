package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// small is a workload that evicts within a few seconds: 2mb holds about
// 2,800 of its keys, 8,000 cold keys stream through, and every batch reads
// 200 hot keys, so LFU has counted every hot key before eviction starts.
var small = options{maxmemory: "2mb", hot: 200, cold: 8000, valueSize: 300, readEvery: 100, readBatch: 200,
	seed: 17, fillLimit: 100_000, idle: 100 * time.Millisecond}

func redisServer(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not on PATH")
	}
	return bin
}

// wrapper writes a shell script that runs body (with "$@" as the server's arguments).
func wrapper(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "server.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func report(rows []run, o options, redis, shoal string) (string, bool) {
	var b bytes.Buffer
	failed := printReport(&b, rows, o, [][2]string{{"redis", redis}, {"shoal", shoal}})
	return b.String(), failed
}

// Redis against itself: the figures are what Redis does, and every check passes.
func TestRedisAgainstItself(t *testing.T) {
	bin := redisServer(t)
	var rows []run
	for _, policy := range []string{"allkeys-lfu", "noeviction"} {
		for _, who := range []string{"redis", "shoal"} {
			r := runOne(who, bin, policy, small)
			if r.Refused != "" || r.Error != "" {
				t.Fatalf("%s %s: refused %q, error %q", who, policy, r.Refused, r.Error)
			}
			rows = append(rows, r)
		}
	}
	lfu, noev := rows[0], rows[2]
	if lfu.HotSurvived != small.hot || lfu.EvictedKeys == 0 || lfu.WriteErrors != 0 || lfu.HotReadWrong != 0 ||
		lfu.Maxmemory != 2<<20 || lfu.Requests != small.hot+small.cold+small.cold/small.readEvery*small.readBatch {
		t.Errorf("allkeys-lfu: %+v", lfu)
	}
	if lfu.ColdSurvived == 0 || lfu.ColdSurvived >= small.cold || lfu.CPU.SchedNanos <= 0 || lfu.VmRSS <= 0 {
		t.Errorf("allkeys-lfu: cold %d, cpu %+v, rss %d", lfu.ColdSurvived, lfu.CPU, lfu.VmRSS)
	}
	const oom = "-OOM command not allowed when used memory > 'maxmemory'.\r\n"
	if n := noev.Noeviction; n == nil || n.FirstRefusal != oom || n.ProbeRefusal != oom || !n.WroteNothing ||
		n.DBSizeAfterFill != int64(n.OKBeforeRefusal) || n.OKBeforeRefusal == 0 {
		t.Errorf("noeviction: %+v", noev.Noeviction)
	}
	out, failed := report(rows, small, bin, bin)
	if failed || strings.Contains(out, "FAIL") || strings.Count(out, "PASS") != 9 {
		t.Errorf("redis against itself should pass every check:\n%s", out)
	}
}

// A candidate that evicts at random keeps fewer hot keys, and says it runs
// another policy: both checks fail.
func TestRandomEvictionFails(t *testing.T) {
	bin := redisServer(t)
	random := wrapper(t, `exec `+bin+` "$@" --maxmemory-policy allkeys-random`)
	rows := []run{runOne("redis", bin, "allkeys-lfu", small), runOne("shoal", random, "allkeys-lfu", small)}
	if rows[1].HotSurvived >= rows[0].HotSurvived {
		t.Errorf("random eviction kept %d hot keys, lfu %d", rows[1].HotSurvived, rows[0].HotSurvived)
	}
	out, failed := report(rows, small, bin, random)
	if !failed || !strings.Contains(out, "FAIL allkeys-lfu: hot keys survive") ||
		!strings.Contains(out, "FAIL allkeys-lfu: CONFIG GET") {
		t.Errorf("want the survival and the CONFIG checks to fail:\n%s", out)
	}
}

// A server that exits at start-up gets a refused row with its reason, and
// the check fails; one that ignores the limit is never refused.
func TestRefusedAndIgnored(t *testing.T) {
	refusing := wrapper(t, `echo "*** FATAL CONFIG FILE ERROR ***"; echo "maxmemory is not available"; exit 1`)
	start := time.Now()
	r := runOne("shoal", refusing, "noeviction", small)
	if r.Refused != "*** FATAL CONFIG FILE ERROR *** / maxmemory is not available" || r.Error != "" {
		t.Errorf("refused %q, error %q", r.Refused, r.Error)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("a refusal took %v to notice", d)
	}
	bin := redisServer(t)
	ignoring := wrapper(t, `exec `+bin+` "$@" --maxmemory 0`)
	o := small
	o.fillLimit = 20_000
	rows := []run{runOne("redis", bin, "noeviction", o), r}
	out, failed := report(rows, o, bin, refusing)
	if !failed || !strings.Contains(out, "| noeviction | runs with `--maxmemory 2mb --maxmemory-policy noeviction` | yes | **refused** | |") ||
		!strings.Contains(out, "FAIL noeviction: shoal started with it (refused: *** FATAL") {
		t.Errorf("want a refused row and a failed check:\n%s", out)
	}
	ig := runOne("shoal", ignoring, "noeviction", o)
	if ig.Error != "no SET refused after 20000 SETs of 300 bytes" || ig.DBSize != 20_000 {
		t.Errorf("a server ignoring maxmemory: error %q, dbsize %d", ig.Error, ig.DBSize)
	}
}
