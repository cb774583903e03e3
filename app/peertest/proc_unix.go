//go:build unix

package peertest

import (
	"os"
	"syscall"
)

// groupAttr puts the server in a process group of its own, so Stop reaches the model runners it
// starts too.
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// signalGroup sends SIGTERM (or SIGKILL when kill) to p's process group.
func signalGroup(p *os.Process, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	syscall.Kill(-p.Pid, sig)
}
