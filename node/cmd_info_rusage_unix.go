//go:build unix

package node

import (
	"runtime"
	"syscall"
)

// cpuUsage returns the process's, its children's and (on Linux) the calling
// thread's CPU times from getrusage(2), for INFO cpu. thread is nil where
// RUSAGE_THREAD does not exist, and Redis omits the *_main_thread fields.
func cpuUsage() (self, children cpuTimes, thread *cpuTimes) {
	self = rusageTimes(syscall.RUSAGE_SELF)
	children = rusageTimes(syscall.RUSAGE_CHILDREN)
	if runtime.GOOS == "linux" {
		const rusageThread = 1 // RUSAGE_THREAD
		t := rusageTimes(rusageThread)
		thread = &t
	}
	return self, children, thread
}

func rusageTimes(who int) cpuTimes {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return cpuTimes{sys: "0.000000", user: "0.000000"}
	}
	return cpuTimes{
		sys:  formatCPUTime(int64(ru.Stime.Sec), int64(ru.Stime.Usec)),
		user: formatCPUTime(int64(ru.Utime.Sec), int64(ru.Utime.Usec)),
	}
}

// reservedFDs are descriptors kept for files and listeners beside client
// sockets (Redis's CONFIG_MIN_RESERVED_FDS).
const reservedFDs = 32

// adjustFileLimit raises RLIMIT_NOFILE, as far as the hard limit allows, so
// that maxclients sockets fit beside the reserved descriptors, and returns
// how many clients the resulting limit can serve (Redis's
// adjustOpenFilesLimit).
func adjustFileLimit(maxclients int64) int64 {
	want := uint64(maxclients) + reservedFDs
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return maxclients
	}
	if rl.Cur >= want {
		return maxclients
	}
	// Try the wanted limit, then lower ones in steps of 16, like Redis.
	for try := want; try > rl.Cur; {
		next := rl
		next.Cur = try
		if next.Max < try {
			next.Cur = next.Max
			try = next.Max
		}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &next); err == nil {
			rl.Cur = try
			break
		}
		if try < 16 {
			break
		}
		try -= 16
	}
	if rl.Cur >= want {
		return maxclients
	}
	return int64(rl.Cur) - reservedFDs
}
