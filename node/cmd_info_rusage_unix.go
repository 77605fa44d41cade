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
