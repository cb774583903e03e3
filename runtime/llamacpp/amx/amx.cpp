// ggml's AMX kernels from the pinned module, compiled here (see amx.go). Both files guard
// themselves with __AMX_INT8__ && __AVX512VNNI__, so on other CPUs they compile to nothing.
#include "amx/amx.cpp"
#include "amx/mmq.cpp"
