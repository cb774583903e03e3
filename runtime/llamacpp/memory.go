package llamacpp

// The memory floor. llama.cpp maps the model file, and on some CPUs and builds the CPU backend
// copies the weights of some types into a layout of its own that its matrix kernels read
// instead: an "extra buffer type" (AMX on CPUs with AMX in the amx build: Q4_0, Q4_1, Q8_0,
// Q4_K, Q5_K, Q6_K, IQ4_XS; CPU_REPACK where ggml is built with GGML_USE_CPU_REPACK: Q4_0,
// Q4_K, IQ4_NL with AVX2 or NEON, Q2_K with AVX-512). The mapped pages it read to convert stay
// resident beside the copies, so such a model cost its weights twice in resident memory. A
// model with weights an extra buffer type takes therefore loads without mmap: each tensor is
// read straight into its final buffer, and the process holds the weights once. Every other
// model keeps mmap: its tensors are used in place, the pages are the weights, and a reload
// finds them in the page cache.
//
// Measured (TestMemoryFloor, AMD EPYC with AVX2, no AMX; this build has no CPU_REPACK, so
// nothing is converted there): resident memory after a request over llama.cpp's model + KV +
// compute buffers is 0.98× for the 1.1B-shaped Q8_0 model and 0.97× for its Q4_0
// requantization, mapped or not.

/*
#include <stddef.h>

typedef void *sf_buft;
void *ggml_backend_dev_by_type(int type);
void *ggml_backend_dev_backend_reg(void *device);
void *ggml_backend_reg_get_proc_address(void *reg, const char *name);
const char *ggml_backend_buft_name(sf_buft buft);
typedef sf_buft *(*sf_get_extra_bufts)(void *device);

int ggml_cpu_has_avx2(void);
int ggml_cpu_has_avx512(void);
int ggml_cpu_has_neon(void);
int ggml_cpu_has_dotprod(void);
int ggml_cpu_has_matmul_int8(void);

// sf_cpu_extra_buft names the CPU device's i-th extra buffer type, or NULL past the last
// (GGML_BACKEND_DEVICE_TYPE_CPU is 0).
static const char *sf_cpu_extra_buft(int i) {
	void *dev = ggml_backend_dev_by_type(0);
	if (dev == NULL) {
		return NULL;
	}
	sf_get_extra_bufts get = (sf_get_extra_bufts)ggml_backend_reg_get_proc_address(
		ggml_backend_dev_backend_reg(dev), "ggml_backend_dev_get_extra_bufts");
	if (get == NULL) {
		return NULL;
	}
	sf_buft *bufts = get(dev);
	for (int j = 0; bufts != NULL && bufts[j] != NULL; j++) {
		if (j == i) {
			return ggml_backend_buft_name(bufts[j]);
		}
	}
	return NULL;
}
*/
import "C"

import (
	"slices"

	"github.com/superfluid/superfluid/runtime/gguf"
)

// mmapFor is useMmap; the memory test replaces it to measure a model loaded the other way.
var mmapFor = useMmap

// useMmap reports whether to map the model file rather than read it into memory: yes unless
// the model runs on the CPU and holds weights one of the CPU's extra buffer types converts.
func useMmap(path string, gpu, vocabOnly bool) bool {
	if gpu || vocabOnly {
		return true
	}
	f, err := gguf.ReadFile(path)
	if err != nil {
		return true // Load's own reader says what is wrong with the file
	}
	buffers := cpuExtraBuffers()
	for _, t := range f.Tensors {
		if converts(buffers, t.Type, cpuFeatures()) {
			return false
		}
	}
	return true
}

// cpuExtraBuffers names the CPU backend's extra buffer types in this build on this CPU.
func cpuExtraBuffers() []string {
	var names []string
	for i := 0; ; i++ {
		name := C.sf_cpu_extra_buft(C.int(i))
		if name == nil {
			return names
		}
		names = append(names, C.GoString(name))
	}
}

// features are the CPU features the repack buffer type's choice depends on.
type features struct{ avx2, avx512, neon, dotprod, i8mm bool }

func cpuFeatures() features {
	return features{C.ggml_cpu_has_avx2() != 0, C.ggml_cpu_has_avx512() != 0, C.ggml_cpu_has_neon() != 0,
		C.ggml_cpu_has_dotprod() != 0, C.ggml_cpu_has_matmul_int8() != 0}
}

// amxTypes have AMX kernels (qtype_has_amx_kernels in ggml-cpu/amx/common.h).
var amxTypes = []uint32{gguf.TypeQ4_0, gguf.TypeQ4_1, gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K, gguf.TypeIQ4_XS}

// converts reports whether one of the extra buffer types keeps its own copy of weights of type
// typ (ggml_repack_get_optimal_repack_type in ggml-cpu/repack.cpp for CPU_REPACK). An extra
// buffer type this does not know (KleidiAI, SpacemiT) is taken to convert every quantized type.
func converts(buffers []string, typ uint32, f features) bool {
	quantized := typ != gguf.TypeF32 && typ != gguf.TypeF16 && typ != gguf.TypeBF16
	for _, b := range buffers {
		switch b {
		case "AMX":
			if slices.Contains(amxTypes, typ) {
				return true
			}
		case "CPU_REPACK":
			neonInt := f.neon && (f.dotprod || f.i8mm)
			switch {
			case (typ == gguf.TypeQ4_0 || typ == gguf.TypeQ4_K) && (f.avx2 || neonInt),
				typ == gguf.TypeIQ4_NL && (f.avx2 || f.neon && f.dotprod),
				typ == gguf.TypeQ2_K && f.avx512:
				return true
			}
		default:
			if quantized {
				return true
			}
		}
	}
	return false
}
