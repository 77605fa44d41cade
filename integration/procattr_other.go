//go:build !linux

package integration

import "os/exec"

func setProcAttr(cmd *exec.Cmd) {}
