package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
		comm, _ := os.ReadFile("/proc/self/comm")
		fmt.Printf("pid=%d procs=%d GOMAXPROCS=%q marker=%q comm=%s", os.Getpid(), runtime.GOMAXPROCS(0), os.Getenv("GOMAXPROCS"), os.Getenv(bootCoresEnv), comm)
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

	// The process keeps its name (ps, top, pgrep): the kernel names it
	// after the path executed, cut to 15 bytes.
	name := filepath.Base(os.Args[0])
	name = name[:min(len(name), 15)]

	out, pid := helper("")
	assert.Equal(t, fmt.Sprintf("pid=%d procs=1 GOMAXPROCS=\"\" marker=\"\" comm=%s\n", pid, name), out,
		"booted with one P in the same process under the same name, environment restored")

	out, pid = helper("2")
	assert.Equal(t, fmt.Sprintf("pid=%d procs=2 GOMAXPROCS=\"2\" marker=\"\" comm=%s\n", pid, name), out, "the user's GOMAXPROCS wins")
}
