package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bootHelperEnv makes the test binary, started by the test below, act as
// the server's main would: boot, then print what the runtime got.
const bootHelperEnv = "SHOAL_TEST_BOOT_HELPER"

// Without a GOMAXPROCS of the user's, the server re-executes itself once
// (same PID) so that the runtime boots with one P, and the re-executed
// process leaves no trace of it in its environment; a GOMAXPROCS the user
// set is kept as it is, with no re-execution.
func TestBootWithOneCore(t *testing.T) {
	if os.Getenv(bootHelperEnv) != "" {
		bootWithOneCore(nil)
		fmt.Printf("pid=%d procs=%d GOMAXPROCS=%q marker=%q\n", os.Getpid(), runtime.GOMAXPROCS(0), os.Getenv("GOMAXPROCS"), os.Getenv(bootCoresEnv))
		os.Exit(0)
	}
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: the runtime boots with one P anyway")
	}
	helper := func(gomaxprocs string) (string, int) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBootWithOneCore$")
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "GOMAXPROCS=") && !strings.HasPrefix(kv, bootCoresEnv+"=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, bootHelperEnv+"=1")
		if gomaxprocs != "" {
			cmd.Env = append(cmd.Env, "GOMAXPROCS="+gomaxprocs)
		}
		out, err := cmd.Output()
		require.NoError(t, err)
		return string(out), cmd.Process.Pid
	}

	out, pid := helper("")
	assert.Equal(t, fmt.Sprintf("pid=%d procs=1 GOMAXPROCS=\"\" marker=\"\"\n", pid), out, "booted with one P in the same process, environment restored")

	out, pid = helper("2")
	assert.Equal(t, fmt.Sprintf("pid=%d procs=2 GOMAXPROCS=\"2\" marker=\"\"\n", pid), out, "the user's GOMAXPROCS wins")
}
