package supervise

import "syscall"

// serverProcAttr starts the server as the leader of its own process group, so a stop reaches
// every process it started (vLLM's workers, superfluid's llama.cpp workers), and kills it when
// superfluid dies, so no orphan keeps a GPU.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
