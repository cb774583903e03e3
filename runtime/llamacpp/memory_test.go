package llamacpp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llm"
)

// TestMmapPolicy: a model loads without mmap exactly when one of this CPU's extra buffer types
// converts its weights (none on a CPU without AMX in this build: Q4_0 and Q8_0 both map); a
// GPU or vocab-only load always maps. The Q4_0 model, written by requantizing a Q8_0 one,
// loads and generates.
func TestMmapPolicy(t *testing.T) {
	dir := t.TempDir()
	q8, q4 := filepath.Join(dir, "q8.gguf"), filepath.Join(dir, "q4_0.gguf")
	if err := gguftest.WriteTinyLlama(q8, gguftest.TinyLlamaOptions{Q8: true, Embd: 64, FF: 128, Vocab: 512}); err != nil {
		t.Fatal(err)
	}
	if err := requantizeQ4_0(q8, q4); err != nil {
		t.Fatal(err)
	}
	buffers, f := cpuExtraBuffers(), cpuFeatures()
	t.Logf("the CPU's extra buffer types: %q", buffers)
	for _, m := range []struct {
		path string
		typ  uint32
	}{{q8, gguf.TypeQ8_0}, {q4, gguf.TypeQ4_0}} {
		if got, want := useMmap(m.path, false, false), !converts(buffers, m.typ, f); got != want {
			t.Errorf("%s on the CPU: mmap %v, want %v", filepath.Base(m.path), got, want)
		}
		if !useMmap(m.path, true, false) || !useMmap(m.path, false, true) {
			t.Errorf("%s on a GPU or vocab-only: want mmap", filepath.Base(m.path))
		}
	}
	e, err := Load(Options{ModelPath: q4, ContextLength: 64, Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if r := mustGenerate(t, e, greedy("once upon a time", 8)); r.done.Usage.CompletionTokens != 8 {
		t.Errorf("Q4_0 model generated %d tokens, want 8", r.done.Usage.CompletionTokens)
	}
}

// TestConverts: which weights each extra buffer type keeps a copy of.
func TestConverts(t *testing.T) {
	avx2 := features{avx2: true}
	for _, c := range []struct {
		buffers []string
		typ     uint32
		f       features
		want    bool
	}{
		{nil, gguf.TypeQ4_0, avx2, false},
		{[]string{"AMX"}, gguf.TypeQ8_0, avx2, true},
		{[]string{"AMX"}, gguf.TypeF16, avx2, false},
		{[]string{"AMX"}, gguf.TypeIQ4_NL, avx2, false},
		{[]string{"CPU_REPACK"}, gguf.TypeQ4_0, avx2, true},
		{[]string{"CPU_REPACK"}, gguf.TypeQ4_0, features{}, false},
		{[]string{"CPU_REPACK"}, gguf.TypeQ4_K, features{neon: true, dotprod: true}, true},
		{[]string{"CPU_REPACK"}, gguf.TypeQ8_0, avx2, false},
		{[]string{"CPU_REPACK"}, gguf.TypeQ2_K, avx2, false},
		{[]string{"CPU_REPACK"}, gguf.TypeQ2_K, features{avx512: true}, true},
		{[]string{"AMX", "CPU_REPACK"}, gguf.TypeIQ4_NL, avx2, true},
		{[]string{"KLEIDIAI"}, gguf.TypeQ5_K, avx2, true},
		{[]string{"KLEIDIAI"}, gguf.TypeF32, avx2, false},
	} {
		if got := converts(c.buffers, c.typ, c.f); got != c.want {
			t.Errorf("converts(%q, type %d, %+v) = %v, want %v", c.buffers, c.typ, c.f, got, c.want)
		}
	}
}

// TestMemoryFloor measures the resident memory of a process that loaded a model and served a
// request against what llama.cpp allocated for it (its model, KV and compute buffers, from its
// log), for the Q8_0 model in SUPERFLUID_MEMORY_BENCH and a Q4_0 requantization of it (written
// beside it once), each loaded as the engine chooses and with mmap forced. Each load runs in a
// child process of its own (this test binary), so one never counts another's pages.
func TestMemoryFloor(t *testing.T) {
	if child := os.Getenv("SUPERFLUID_MEMORY_CHILD"); child != "" {
		memoryChild(t, child)
		return
	}
	q8 := os.Getenv("SUPERFLUID_MEMORY_BENCH")
	if q8 == "" {
		t.Skip("set SUPERFLUID_MEMORY_BENCH to a Q8_0 model path to measure the memory floor")
	}
	q4 := strings.TrimSuffix(q8, ".gguf") + "-q4_0.gguf"
	if _, err := os.Stat(q4); err != nil {
		if err := requantizeQ4_0(q8, q4); err != nil {
			t.Fatal(err)
		}
	}
	for _, model := range []string{q8, q4} {
		for _, mmap := range []string{"engine", "mmap"} {
			cmd := exec.Command(os.Args[0], "-test.run=^TestMemoryFloor$", "-test.count=1")
			cmd.Env = append(os.Environ(), "SUPERFLUID_MEMORY_CHILD="+mmap+","+model)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("child %s %s: %v\n%s\n%s", mmap, model, err, out, stderr.Bytes())
			}
			m := regexp.MustCompile(`MEMORY (.*)`).FindSubmatch(out)
			if m == nil {
				t.Fatalf("child printed no MEMORY line:\n%s", out)
			}
			buffers := llamaBuffers(stderr.String())
			var rss, base, anon, file int64
			fmt.Sscanf(string(m[1]), "rss=%d base=%d anon=%d file=%d", &rss, &base, &anon, &file)
			used := rss - base
			t.Logf("%s (%s): resident %s (anon %s, file %s) over the process before the load; llama.cpp buffers %s (model %s, KV %s, compute %s); ratio %.3f",
				filepath.Base(model), mmap, mib(used), mib(anon), mib(file), mib(buffers.total()), mib(buffers.model), mib(buffers.kv), mib(buffers.compute),
				float64(used)/float64(buffers.total()))
		}
	}
}

// memoryChild loads the model of spec ("engine" or "mmap", then the path), serves one request
// and prints its resident memory.
func memoryChild(t *testing.T, spec string) {
	how, path, _ := strings.Cut(spec, ",")
	if how == "mmap" {
		mmapFor = func(string, bool, bool) bool { return true }
	}
	base := procStatus(t)["VmRSS"]
	e, err := Load(Options{ModelPath: path, ContextLength: 2048, Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	prompt := make([]int, 256)
	for i := range prompt {
		prompt[i] = 3 + i*7%1000
	}
	err = e.Generate(context.Background(), &llm.Request{Tokens: prompt, MaxTokens: 32, IgnoreEOS: true, Sampling: llm.Sampling{Temperature: ptr(0.0)}},
		func(llm.Event) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	st := procStatus(t)
	fmt.Printf("MEMORY rss=%d base=%d anon=%d file=%d\n", st["VmRSS"], base, st["RssAnon"], st["RssFile"])
}

// procStatus reads this process's memory lines of /proc/self/status, in bytes.
func procStatus(t *testing.T) map[string]int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status:", err)
	}
	out := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if f := strings.Fields(v); ok && len(f) == 2 && f[1] == "kB" {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			out[k] = n << 10
		}
	}
	return out
}

type buffers struct{ model, kv, compute int64 }

func (b buffers) total() int64 { return b.model + b.kv + b.compute }

// llamaBuffers sums the buffer sizes llama.cpp logs when it loads a model and creates a
// context ("model buffer size = X MiB", "KV buffer size", "compute buffer size").
func llamaBuffers(log string) buffers {
	var b buffers
	re := regexp.MustCompile(`(model|KV|compute) buffer size = +([0-9.]+) MiB`)
	for _, m := range re.FindAllStringSubmatch(log, -1) {
		mb, _ := strconv.ParseFloat(m[2], 64)
		n := int64(mb * (1 << 20))
		switch m[1] {
		case "model":
			b.model += n
		case "KV":
			b.kv += n
		case "compute":
			b.compute += n
		}
	}
	return b
}

func mib(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }

// requantizeQ4_0 writes the model at from to to with its Q8_0 tensors requantized to Q4_0
// (ggml's reference quantizer: per block of 32, d = the signed largest value / -8, quants
// x/d + 8 in 4 bits, two to a byte, element j in the low nibble and j+16 in the high one).
// gguftest writes F32 and Q8_0 only; this makes a model of a type the CPU backend repacks.
func requantizeQ4_0(from, to string) error {
	f, err := gguf.ReadFile(from)
	if err != nil {
		return err
	}
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	w := gguftest.NewWriter()
	for _, k := range f.Keys {
		if k == "general.file_type" {
			w.AddUint32(k, 2) // LLAMA_FTYPE_MOSTLY_Q4_0
			continue
		}
		w.AddValue(k, f.KV[k])
	}
	for _, ti := range f.Tensors {
		section := io.NewSectionReader(src, f.DataOffset+int64(ti.Offset), ti.Size)
		if ti.Type != gguf.TypeQ8_0 {
			data, err := io.ReadAll(section)
			if err != nil {
				return err
			}
			w.AddTensor(ti.Name, ti.Type, ti.Dims, data)
			continue
		}
		w.AddTensorFunc(ti.Name, gguf.TypeQ4_0, ti.Dims, func(out io.Writer) error {
			in := bufio.NewReaderSize(section, 1<<20)
			bw := bufio.NewWriterSize(out, 1<<20)
			var blk [34]byte
			var q4 [18]byte
			var x [32]float32
			for range ti.Elements() / 32 {
				if _, err := io.ReadFull(in, blk[:]); err != nil {
					return err
				}
				d8 := f16ToF32(binary.LittleEndian.Uint16(blk[:2]))
				var amax, maxv float32
				for j := range 32 {
					x[j] = d8 * float32(int8(blk[2+j]))
					if a := float32(math.Abs(float64(x[j]))); a > amax {
						amax, maxv = a, x[j]
					}
				}
				d := maxv / -8
				id := float32(0)
				if d != 0 {
					id = 1 / d
				}
				binary.LittleEndian.PutUint16(q4[:2], f32ToF16(d))
				for j := range 16 {
					lo := min(15, int(x[j]*id+8.5))
					hi := min(15, int(x[j+16]*id+8.5))
					q4[2+j] = byte(lo) | byte(hi)<<4
				}
				if _, err := bw.Write(q4[:]); err != nil {
					return err
				}
			}
			return bw.Flush()
		})
	}
	return w.WriteFile(to)
}

func f16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp, mant := uint32(h>>10)&0x1f, uint32(h)&0x3ff
	switch {
	case exp == 0:
		f := float32(mant) / 1024 / 16384 // subnormal: mant × 2^-24
		if sign != 0 {
			f = -f
		}
		return f
	case exp == 31:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

func f32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case exp <= 0:
		if exp < -10 {
			return sign
		}
		m := mant | 0x800000
		shift := uint(14 - exp)
		return sign | uint16((m+(1<<(shift-1)))>>shift)
	case exp >= 31:
		return sign | 0x7c00
	}
	h := sign | uint16(exp)<<10 | uint16(mant>>13)
	if mant&0x1000 != 0 {
		h++ // round to nearest; a carry into the exponent is still right
	}
	return h
}

func TestHalfFloats(t *testing.T) {
	for _, x := range []float32{0, 1, -1, 0.5, 65504, 6.1035156e-05, 5.96e-08, -3.140625, 0.000541} {
		if got := f16ToF32(f32ToF16(x)); math.Abs(float64(got-x)) > math.Abs(float64(x))/1000+6e-8 {
			t.Errorf("f16 round trip of %g = %g", x, got)
		}
	}
}
