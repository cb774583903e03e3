//go:build !linux

package worker

import "syscall"

func workerProcAttr() *syscall.SysProcAttr { return nil }
