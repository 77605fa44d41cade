package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// metric is one table row: a label and how to get (and show) its value.
type metric struct {
	label string
	value func(r *run) float64
	show  func(r *run) string // nil: the value, as an integer or with 2 decimals
}

func mib(n int64) string { return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20)) }

func evictionMetrics(o options) []metric {
	f := func(get func(r *run) int64) func(r *run) float64 {
		return func(r *run) float64 { return float64(get(r)) }
	}
	bytesRow := func(label string, get func(r *run) int64) metric {
		return metric{label, f(get), func(r *run) string { return mib(get(r)) }}
	}
	return []metric{
		{fmt.Sprintf("hot keys surviving (of %d)", o.hot), f(func(r *run) int64 { return int64(r.HotSurvived) }), nil},
		{fmt.Sprintf("cold keys surviving (of %d)", o.cold), f(func(r *run) int64 { return int64(r.ColdSurvived) }), nil},
		{"hot GETs that hit, during the stream", f(func(r *run) int64 { return int64(r.HotReadHits) }),
			func(r *run) string { return fmt.Sprintf("%d/%d", r.HotReadHits, r.HotReads) }},
		{"INFO evicted_keys", f(func(r *run) int64 { return r.EvictedKeys }), nil},
		bytesRow("used_memory", func(r *run) int64 { return r.UsedMemory }),
		bytesRow("used_memory_peak", func(r *run) int64 { return r.UsedMemoryPeak }),
		bytesRow("maxmemory (INFO)", func(r *run) int64 { return r.Maxmemory }),
		{"used_memory / maxmemory", func(r *run) float64 { return r.UsedOverMax }, nil},
		bytesRow("used_memory_rss (INFO)", func(r *run) int64 { return r.UsedMemoryRSS }),
		bytesRow("VmRSS (/proc)", func(r *run) int64 { return r.VmRSS }),
		bytesRow("VmHWM, peak RSS (/proc)", func(r *run) int64 { return r.VmHWM }),
		{"SETs not answered OK", f(func(r *run) int64 { return int64(r.WriteErrors) }), nil},
		{"hot GETs with a wrong value", f(func(r *run) int64 { return int64(r.HotReadWrong) }), nil},
		{"server CPU µs / request (schedstat)", func(r *run) float64 { return r.CPU.SchedPerRequest }, nil},
		{"server CPU µs / request (utime+stime)", func(r *run) float64 { return r.CPU.TicksPerRequest }, nil},
		{"server CPU µs / s while idle, before the workload", func(r *run) float64 { return r.IdleCPU }, nil},
		{"requests", f(func(r *run) int64 { return int64(r.Requests) }), nil},
		{"wall s (client side, noisy)", func(r *run) float64 { return r.WallSeconds }, nil},
	}
}

func noevictionMetrics() []metric {
	f := func(get func(r *run) int64) func(r *run) float64 {
		return func(r *run) float64 { return float64(get(r)) }
	}
	yesNo := func(b bool) string {
		if b {
			return "yes"
		}
		return "NO"
	}
	return []metric{
		{"SETs answered OK before the first refusal", f(func(r *run) int64 { return int64(r.Noeviction.OKBeforeRefusal) }), nil},
		{"first refused SET, exact reply", nil, func(r *run) string { return "`" + strconv.Quote(r.Noeviction.FirstRefusal) + "`" }},
		{"DBSIZE after the fill (= SETs OK?)", f(func(r *run) int64 { return r.Noeviction.DBSizeAfterFill }), nil},
		{"one more SET: reply", nil, func(r *run) string { return "`" + strconv.Quote(r.Noeviction.ProbeRefusal) + "`" }},
		{"one more SET: DBSIZE change, key exists", nil,
			func(r *run) string {
				return fmt.Sprintf("%+d, %d", r.Noeviction.ProbeDBSizeDelta, r.Noeviction.ProbeKeyExists)
			}},
		{"refused SETs wrote nothing", nil, func(r *run) string { return yesNo(r.Noeviction.WroteNothing) }},
		{"used_memory", f(func(r *run) int64 { return r.UsedMemory }), func(r *run) string { return mib(r.UsedMemory) }},
		{"used_memory / maxmemory", func(r *run) float64 { return r.UsedOverMax }, nil},
		{"VmRSS (/proc)", f(func(r *run) int64 { return r.VmRSS }), func(r *run) string { return mib(r.VmRSS) }},
		{"server CPU µs / request (schedstat)", func(r *run) float64 { return r.CPU.SchedPerRequest }, nil},
		{"server CPU µs / request (utime+stime)", func(r *run) float64 { return r.CPU.TicksPerRequest }, nil},
	}
}

func (m metric) cell(r *run) string {
	switch {
	case r == nil:
		return "-"
	case r.Refused != "" || r.Error != "":
		return "-"
	case m.show != nil:
		return m.show(r)
	}
	v := m.value(r)
	if v == float64(int64(v)) {
		return strconv.FormatInt(int64(v), 10)
	}
	return fmt.Sprintf("%.2f", v)
}

func (m metric) ratio(a, b *run) string {
	if m.value == nil || a == nil || b == nil || a.Refused != "" || b.Refused != "" || a.Error != "" || b.Error != "" {
		return ""
	}
	x, y := m.value(a), m.value(b)
	if x == 0 {
		if y == 0 {
			return "="
		}
		return "n/a"
	}
	return fmt.Sprintf("%.2f", y/x)
}

func version(bin string) string {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
}

// printReport writes the table, the checks and the JSON rows; it returns
// whether a check failed (a refusal counts as failed).
func printReport(w io.Writer, rows []run, o options, servers [][2]string) (failed bool) {
	find := func(server, policy string) *run {
		for i := range rows {
			if rows[i].Server == server && rows[i].Policy == policy {
				return &rows[i]
			}
		}
		return nil
	}
	var policies []string
	for _, r := range rows {
		if len(policies) == 0 || policies[len(policies)-1] != r.Policy {
			policies = append(policies, r.Policy)
		}
	}
	load := "?"
	if b, err := os.ReadFile("/proc/loadavg"); err == nil && len(strings.Fields(string(b))) >= 3 {
		load = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	fmt.Fprintf(w, "\n## Eviction side by side: maxmemory %s\n\n", o.maxmemory)
	for _, sv := range servers {
		fmt.Fprintf(w, "- %s: `%s` (%s)\n", sv[0], sv[1], version(sv[1]))
	}
	fmt.Fprintf(w, "- workload: %d hot keys SET, then %d cold keys of %d bytes (%.1f MiB) streamed through in pipelines of %d SETs, "+
		"each followed by %d GETs of hot keys (seeded, seed %d) and a pause of %v; noeviction: SETs of %d bytes until the first refusal\n",
		o.hot, o.cold, o.valueSize, float64(o.cold)*float64(o.valueSize)/(1<<20), o.readEvery, o.readBatch, o.seed, o.pause, o.valueSize)
	fmt.Fprintf(w, "- host: %d cpus, loadavg %s\n\n", runtime.NumCPU(), load)
	fmt.Fprintln(w, "| policy | metric | redis | shoal | shoal/redis |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|")
	var notes []string
	for _, p := range policies {
		a, b := find("redis", p), find("shoal", p)
		for _, r := range []*run{a, b} {
			switch {
			case r == nil:
			case r.Refused != "":
				notes = append(notes, fmt.Sprintf("%s refused `--maxmemory %s --maxmemory-policy %s`: %s", r.Server, o.maxmemory, p, r.Refused))
			case r.Error != "":
				notes = append(notes, fmt.Sprintf("%s %s: %s", r.Server, p, r.Error))
			}
		}
		status := func(r *run) string {
			switch {
			case r == nil:
				return "-"
			case r.Refused != "":
				return "**refused**"
			case r.Error != "":
				return "**error**"
			}
			return "yes"
		}
		fmt.Fprintf(w, "| %s | runs with `--maxmemory %s --maxmemory-policy %s` | %s | %s | |\n", p, o.maxmemory, p, status(a), status(b))
		ms := evictionMetrics(o)
		if p == "noeviction" {
			ms = noevictionMetrics()
		}
		for _, m := range ms {
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", p, m.label, m.cell(a), m.cell(b), m.ratio(a, b))
		}
	}
	for _, n := range notes {
		fmt.Fprintf(w, "\n- %s", n)
	}
	if len(notes) > 0 {
		fmt.Fprintln(w)
	}

	fmt.Fprintln(w, "\n### Checks (issue 17, \"Must show\")")
	check := func(ok bool, format string, args ...any) {
		verdict := "PASS"
		if !ok {
			verdict, failed = "FAIL", true
		}
		fmt.Fprintf(w, "- %s %s\n", verdict, fmt.Sprintf(format, args...))
	}
	for _, p := range policies {
		a, b := find("redis", p), find("shoal", p)
		switch {
		case b == nil || a == nil:
			continue
		case b.Refused != "":
			check(false, "%s: shoal started with it (refused: %s)", p, b.Refused)
			continue
		case b.Error != "":
			check(false, "%s: shoal ran the workload (%s)", p, b.Error)
			continue
		case a.Refused != "" || a.Error != "":
			fmt.Fprintf(w, "- n/a %s: redis did not run it, nothing to compare with\n", p)
			continue
		}
		check(b.ConfigMaxmemory == a.ConfigMaxmemory && b.ConfigPolicy == a.ConfigPolicy,
			"%s: CONFIG GET maxmemory/maxmemory-policy as redis (%s %s; redis %s %s)", p,
			b.ConfigMaxmemory, b.ConfigPolicy, a.ConfigMaxmemory, a.ConfigPolicy)
		if p == "noeviction" {
			check(b.Noeviction.FirstRefusal == a.Noeviction.FirstRefusal && b.Noeviction.ProbeRefusal == a.Noeviction.ProbeRefusal,
				"noeviction: refusal bytes as redis (%q)", b.Noeviction.FirstRefusal)
			check(b.Noeviction.WroteNothing, "noeviction: refused SETs wrote nothing (DBSIZE %d after %d OK; probe %+d, exists %d)",
				b.Noeviction.DBSizeAfterFill, b.Requests-b.WriteErrors, b.Noeviction.ProbeDBSizeDelta, b.Noeviction.ProbeKeyExists)
			continue
		}
		check(b.HotSurvived >= a.HotSurvived, "%s: hot keys survive at least as in redis (%d vs %d of %d)",
			p, b.HotSurvived, a.HotSurvived, o.hot)
		check(b.Maxmemory > 0 && float64(b.UsedMemory) <= 1.1*float64(b.Maxmemory),
			"%s: used_memory ≤ 1.1 × maxmemory (%.3f)", p, b.UsedOverMax)
		check(a.VmRSS > 0 && float64(b.VmRSS) <= 1.5*float64(a.VmRSS),
			"%s: RSS ≤ 1.5 × redis's (%s vs %s, %.2f×)", p, mib(b.VmRSS), mib(a.VmRSS), float64(b.VmRSS)/float64(max(a.VmRSS, 1)))
		check(a.VmHWM > 0 && float64(b.VmHWM) <= 1.5*float64(a.VmHWM),
			"%s: peak RSS (VmHWM) ≤ 1.5 × redis's (%s vs %s, %.2f×)", p, mib(b.VmHWM), mib(a.VmHWM), float64(b.VmHWM)/float64(max(a.VmHWM, 1)))
		check(b.WriteErrors == 0 && b.HotReadWrong == 0, "%s: every SET OK, every hot GET hit returned its value (%d, %d)",
			p, b.WriteErrors, b.HotReadWrong)
	}

	fmt.Fprintln(w, "\n### Rows (JSON lines)")
	fmt.Fprintln(w, "```")
	writeJSONLines(w, rows)
	fmt.Fprintln(w, "```")
	return failed
}

// writeJSONLines writes one JSON object per row and line (reply bytes such
// as "> 'maxmemory'" as they are, not HTML-escaped).
func writeJSONLines(w io.Writer, rows []run) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, r := range rows {
		_ = enc.Encode(r)
	}
}
