//go:build amx

// Package amx compiles ggml's AMX matrix kernels, which the pinned module's cgo packages leave
// out (cgo builds only C/C++ files in directories that hold a Go file, and ggml-cpu/amx has
// none). Without them a -march=native build on an AMX CPU fails to link
// (ggml_backend_amx_buffer_type undefined); with them prefill and decode run 1.5–1.8× faster.
// Built only with the amx tag, which the Makefile sets on CPUs that have AMX, with CGO_CPPFLAGS
// naming the module's ggml include directories.
package amx

// #cgo CXXFLAGS: -std=c++17
// #cgo CPPFLAGS: -DNDEBUG -DGGML_USE_LLAMAFILE -D_GNU_SOURCE
import "C"
