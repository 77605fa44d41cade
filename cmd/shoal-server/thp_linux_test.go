package main

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
)

// prGetTHPDisable is PR_GET_THP_DISABLE of linux/prctl.h.
const prGetTHPDisable = 42

func thpDisabledForProcess(t *testing.T) bool {
	r, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prGetTHPDisable, 0, 0)
	if errno != 0 {
		t.Skipf("PR_GET_THP_DISABLE: %v", errno)
	}
	return r == 1
}

func TestThpOff(t *testing.T) {
	assert.True(t, thpOff("always [madvise] never\n", true), "madvise: nothing to do")
	assert.True(t, thpOff("always madvise [never]\n", false), "never: nothing to do")
	before := thpDisabledForProcess(t)
	assert.False(t, thpOff("[always] madvise never\n", false), "disable-thp no under always: warn")
	assert.Equal(t, before, thpDisabledForProcess(t), "disable-thp no leaves the process alone")
	assert.True(t, thpOff("[always] madvise never\n", true))
	assert.True(t, thpDisabledForProcess(t), "disable-thp yes under always: THP off for the process")
}
