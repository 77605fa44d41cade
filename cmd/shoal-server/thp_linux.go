package main

import (
	"os"
	"strings"
	"syscall"

	"github.com/shoal-db/shoal/config"
	"go.uber.org/zap"
)

// prSetTHPDisable is PR_SET_THP_DISABLE of linux/prctl.h (Linux 3.5+).
const prSetTHPDisable = 41

// thpEnabledPath says whether the kernel backs anonymous memory with
// transparent huge pages always, only when asked (madvise), or never.
const thpEnabledPath = "/sys/kernel/mm/transparent_hugepage/enabled"

// disableTHP does what Redis 7.0 does at start-up when transparent huge
// pages are "always" on: with disable-thp yes (the default) it turns them
// off for this process (they make latency spiky and inflate RSS), and warns
// when it cannot, or when disable-thp is no.
func disableTHP(cfg *config.Config, log *zap.Logger) {
	data, err := os.ReadFile(thpEnabledPath)
	if err != nil {
		return
	}
	if !thpOff(string(data), cfg.Bool("disable-thp")) {
		log.Warn("WARNING You have Transparent Huge Pages (THP) support enabled in your kernel. " +
			"This will create latency and memory usage issues with shoal. To fix this issue run the command " +
			"'echo madvise > " + thpEnabledPath + "' as root, and add it to your /etc/rc.local in order to " +
			"retain the setting after a reboot. shoal must be restarted after THP is disabled " +
			"(set to 'madvise' or 'never').")
	}
}

// thpOff reports whether this process is clear of "always" transparent
// huge pages: the kernel setting (the text of thpEnabledPath) is not
// "always", or disable is true and prctl turned them off for the process.
func thpOff(enabled string, disable bool) bool {
	if !strings.Contains(enabled, "[always]") {
		return true
	}
	if !disable {
		return false
	}
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetTHPDisable, 1, 0)
	return errno == 0
}
