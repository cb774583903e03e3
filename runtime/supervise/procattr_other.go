//go:build !linux

package supervise

import "syscall"

// serverProcAttr starts the server as the leader of its own process group, so a stop reaches
// every process it started.
func serverProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
