package integration

import (
	"os/exec"
	"syscall"
)

// setProcAttr makes the kernel SIGKILL the server if the test binary dies
// (e.g. on a `go test -timeout` panic), so no server outlives its test run.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
