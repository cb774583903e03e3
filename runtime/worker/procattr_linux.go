package worker

import "syscall"

// workerProcAttr kills the worker when the app dies, so no orphan keeps the model in memory.
func workerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
