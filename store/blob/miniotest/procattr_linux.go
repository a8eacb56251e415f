package miniotest

import (
	"os/exec"
	"syscall"
)

// setProcAttr has the kernel kill the server if the test process dies
// without cleaning up (a panic, a -timeout), so no server outlives its test.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
