package s3test

import (
	"os/exec"
	"syscall"
)

// dieWithTest has the kernel kill the gateway when the test process dies
// without running its cleanups (a timeout panic, a killed go test).
func dieWithTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
