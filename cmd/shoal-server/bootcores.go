package main

import (
	"os"
	"runtime"
	"slices"
	"syscall"
)

// bootCoresEnv marks a server that re-executed itself so that the Go
// runtime boots with GOMAXPROCS=1 (bootWithOneCore); the re-executed
// process removes it and GOMAXPROCS from its environment at once.
const bootCoresEnv = "SHOAL_BOOT_ONE_CORE"

// bootWithOneCore re-executes the server, same PID, arguments, directory
// and name, with GOMAXPROCS=1 in its environment when the user set no
// GOMAXPROCS, so that the runtime starts with the one core a node serves on
// by default (setParallelism raises it to io-threads later). Started with
// two Ps and lowered to one afterwards (runtime.GOMAXPROCS, even from
// main's init), an idle node kept 300 KB more memory on average and varied
// by 700 KB from one start to the next: 2.7-3.4 MB over five starts of a
// standalone node, against 2.67 MB every time when booted with one; an
// idle 3+3 cluster 25.6 MB against 27.0 MB. Part of it is measured in the
// allocator (partly filled spans, -175 KB, and goroutine stacks, -65 KB,
// with one P from the start: each P takes spans of its own, and the
// collector's workers run beside start-up on the second one). Only a
// runtime started with the variable set avoids it.
//
// A GOMAXPROCS the user set stays, and still wins over io-threads and the
// extra core of background jobs (run reads it). It does not re-execute when
// the configuration comes from standard input ("-", read once) or when
// exec fails; the server then runs as it is.
func bootWithOneCore(args []string) {
	if os.Getenv(bootCoresEnv) != "" {
		_ = os.Unsetenv(bootCoresEnv)
		_ = os.Unsetenv("GOMAXPROCS")
		return
	}
	if os.Getenv("GOMAXPROCS") != "" || runtime.GOMAXPROCS(0) == 1 || slices.Contains(args, "-") {
		return
	}
	// The executable's own path (resolved from /proc/self/exe), not
	// /proc/self/exe itself: the process's name (ps, top, pgrep) is the
	// base name of the path executed. A binary replaced or removed since
	// it started does not resolve to a runnable path: no re-execution.
	exe, err := os.Executable()
	if err != nil {
		return
	}
	env := append(os.Environ(), "GOMAXPROCS=1", bootCoresEnv+"=1")
	_ = syscall.Exec(exe, os.Args, env) // returns only on failure
}
