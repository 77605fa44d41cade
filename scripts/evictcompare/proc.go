package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on Linux
// for every architecture Go supports (the kernel fixes it for user space).
const clockTicks = 100

// cpuUse is a server's CPU over a workload, two ways: utime+stime of
// /proc/<pid>/stat (the whole process, threads that exited included, in
// 10 ms ticks: coarse over a run of a second) and the scheduler's on-CPU
// nanoseconds of /proc/<pid>/task/*/schedstat (the live threads, exact).
type cpuUse struct {
	TicksMicros     int64   `json:"utime_stime_us"`
	TicksPerRequest float64 `json:"utime_stime_us_per_request"`
	SchedNanos      int64   `json:"schedstat_ns"`
	SchedPerRequest float64 `json:"schedstat_us_per_request"`
}

// sampleCPU reads both counters of the process now.
func sampleCPU(pid int) (cpuUse, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return cpuUse{}, err
	}
	// the command name (field 2) may hold spaces: count from its closing ')'
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return cpuUse{}, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return cpuUse{}, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return cpuUse{}, fmt.Errorf("malformed /proc/%d/stat times", pid)
	}
	u := cpuUse{TicksMicros: (utime + stime) * (1_000_000 / clockTicks)}
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/schedstat")
	for _, t := range tasks {
		if b, err := os.ReadFile(t); err == nil {
			if f := strings.Fields(string(b)); len(f) > 0 {
				ns, _ := strconv.ParseInt(f[0], 10, 64)
				u.SchedNanos += ns
			}
		}
	}
	return u, nil
}

// idleCPU is the server's on-CPU µs per second while no client sends
// anything: what a paced workload's CPU figure holds beyond the requests.
func idleCPU(pid int, window time.Duration) (float64, error) {
	c0, err := sampleCPU(pid)
	if err != nil {
		return 0, err
	}
	time.Sleep(window)
	c1, err := sampleCPU(pid)
	if err != nil {
		return 0, err
	}
	return float64(c1.SchedNanos-c0.SchedNanos) / 1000 / window.Seconds(), nil
}

// since is the use from then to u, and per request.
func (u cpuUse) since(then cpuUse, requests int) cpuUse {
	d := cpuUse{TicksMicros: u.TicksMicros - then.TicksMicros, SchedNanos: u.SchedNanos - then.SchedNanos}
	if requests > 0 {
		d.TicksPerRequest = float64(d.TicksMicros) / float64(requests)
		d.SchedPerRequest = float64(d.SchedNanos) / 1000 / float64(requests)
	}
	return d
}

// procMemory is VmRSS and VmHWM (peak RSS) of the process, in bytes.
func procMemory(pid int) (rss, hwm int64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			hwm = kb << 10
		}
	}
	return rss, hwm
}
