//go:build amx

package llamacpp

// Link ggml's AMX kernels into AMX builds.
import _ "github.com/superfluid/superfluid/runtime/llamacpp/amx"
