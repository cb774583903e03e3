//go:build !unix

package peertest

import (
	"os"
	"syscall"
)

// groupAttr: without Unix process groups the server is started as it is.
func groupAttr() *syscall.SysProcAttr { return nil }

// signalGroup kills p (no graceful signal or process group here).
func signalGroup(p *os.Process, kill bool) { p.Kill() }
