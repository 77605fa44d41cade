//go:build !unix

package node

// cpuUsage has no getrusage(2) to read on this platform.
func cpuUsage() (self, children cpuTimes, thread *cpuTimes) {
	zero := cpuTimes{sys: "0.000000", user: "0.000000"}
	return zero, zero, nil
}

// adjustFileLimit has no descriptor limit to adjust on this platform.
func adjustFileLimit(maxclients int64) int64 { return maxclients }
