package llamacpp

// The memory floor. llama.cpp maps the model file and, on the CPU, copies the weights of some
// types into a repacked layout (the CPU_REPACK buffer: Q4_0, Q4_K and IQ4_NL with AVX2 or
// NEON, Q2_K with AVX-512) that its matrix kernels read instead. The mapped pages it read to
// repack stay resident beside the copies, so a Q4_0 model cost its weights twice in resident
// memory. Loading such a model without mmap reads each tensor straight into its final buffer
// (the repacked ones through a scratch buffer), and the process holds the weights once. Other
// models keep mmap: their tensors are used in place, the pages are the weights, and a reload
// finds them in the page cache.

/*
int ggml_cpu_has_avx2(void);
int ggml_cpu_has_avx512(void);
int ggml_cpu_has_neon(void);
int ggml_cpu_has_dotprod(void);
int ggml_cpu_has_matmul_int8(void);
*/
import "C"

import (
	"github.com/superfluid/superfluid/runtime/gguf"
)

// mmapFor is useMmap; the memory test replaces it to measure a model loaded the other way.
var mmapFor = useMmap

// useMmap reports whether to map the model file rather than read it into memory: yes unless
// the model runs on the CPU and holds weights the CPU backend repacks.
func useMmap(path string, gpu, vocabOnly bool) bool {
	if gpu || vocabOnly {
		return true
	}
	f, err := gguf.ReadFile(path)
	if err != nil {
		return true // Load's own reader says what is wrong with the file
	}
	for _, t := range f.Tensors {
		if cpuRepacks(t.Type) {
			return false
		}
	}
	return true
}

// cpuRepacks reports whether ggml's CPU backend keeps a repacked copy of weights of type typ
// on this CPU (ggml_repack_get_optimal_repack_type in ggml-cpu/repack.cpp).
func cpuRepacks(typ uint32) bool {
	avx2, neon := C.ggml_cpu_has_avx2() != 0, C.ggml_cpu_has_neon() != 0
	neonInt := neon && (C.ggml_cpu_has_dotprod() != 0 || C.ggml_cpu_has_matmul_int8() != 0)
	switch typ {
	case gguf.TypeQ4_0, gguf.TypeQ4_K:
		return avx2 || neonInt
	case gguf.TypeIQ4_NL:
		return avx2 || (neon && C.ggml_cpu_has_dotprod() != 0)
	case gguf.TypeQ2_K:
		return C.ggml_cpu_has_avx512() != 0
	}
	return false
}
