package llamacpp

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/worker"
)

// TestLoRABadInput: each bad adapter is refused with llm.ErrInvalidInput and a message naming
// what is wrong (the adapter, and for a mismatch the model too); nothing is loaded and the
// engine goes on.
func TestLoRABadInput(t *testing.T) {
	dir := t.TempDir()
	good := loraFiles(t, 1)[0]
	f, err := gguf.ReadFile(testModelPath)
	if err != nil {
		t.Fatal(err)
	}
	width, _ := f.Uint("llama.embedding_length")
	wide := filepath.Join(dir, "wide.gguf")
	if err := gguftest.WriteTinyLlamaLoRA(wide, gguftest.TinyLlamaOptions{Embd: 2 * int(width), Layers: 1}, gguftest.LoRAOptions{}); err != nil {
		t.Fatal(err)
	}
	qwen := filepath.Join(dir, "qwen.gguf")
	if err := gguftest.WriteLoRA(qwen, testModelPath, gguftest.LoRAOptions{Architecture: "qwen2"}); err != nil {
		t.Fatal(err)
	}
	// Factors llama.cpp loads but cannot multiply crashed the worker on the first decode.
	integer := filepath.Join(dir, "integer.gguf")
	writeLoRAFactors(t, integer, gguf.TypeI32, []uint64{width, 4}, []uint64{4, width})
	deep := filepath.Join(dir, "deep.gguf")
	writeLoRAFactors(t, deep, gguf.TypeF32, []uint64{width, 4, 2}, []uint64{4, width})
	e := loadLoRAEngine(t, Options{Parallel: 2})
	tests := []struct {
		name string
		ref  llm.AdapterRef
		want []string
	}{
		{"NaN scale", adapter("nan", good, math.NaN()), []string{"adapter nan", "not a finite number"}},
		{"infinite scale", adapter("inf", good, math.Inf(-1)), []string{"adapter inf", "not a finite number"}},
		{"no file", adapter("ghost", "", 1), []string{"adapter ghost has no file"}},
		{"missing file", adapter("gone", filepath.Join(dir, "gone.gguf"), 1), []string{"adapter gone", "gone.gguf"}},
		{"another model's width", adapter("wide", wide, 1),
			[]string{"adapter wide (" + wide + ") is for llama n_embd " + itoa(2*width), "model " + testModelPath + " is llama n_embd " + itoa(width)}},
		{"another architecture", adapter("qwen", qwen, 1), []string{"adapter qwen (" + qwen + ")", testModelPath, "qwen2", "llama"}},
		{"a model, not an adapter", adapter("model", testModelPath, 1), []string{"adapter model", "not \"adapter\""}},
		{"integer factors", adapter("int", integer, 1), []string{"adapter int", integer, "lora_a is of type I32"}},
		{"three-dimensional factors", adapter("deep", deep, 1), []string{"adapter deep", deep, "[" + itoa(width) + " 4 2] and [4 " + itoa(width) + "], not matrices"}},
		// float32(1e300) is +Inf; far smaller scales already give NaN logits (a "broken model").
		{"a scale past float32", adapter("big", good, 1e300), []string{"adapter big", "scale 1e+300 is outside -100 to 100"}},
		{"a huge scale", adapter("big", good, -1e4), []string{"adapter big", "scale -10000 is outside"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := generate(t, e, withLoRA(loraPrompt, 4, tt.ref))
			if !errors.Is(err, llm.ErrInvalidInput) {
				t.Fatalf("error %v, want llm.ErrInvalidInput", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	if loads, _ := loraCounts(e); loads != 0 {
		t.Errorf("%d adapters loaded from bad input, want 0", loads)
	}
	// A good adapter after a bad one in the same request is not held: the request fails whole.
	if _, err := generate(t, e, withLoRA(loraPrompt, 4, adapter("a", good, 1), adapter("nan", good, math.NaN()))); !errors.Is(err, llm.ErrInvalidInput) {
		t.Errorf("a good and a NaN adapter: %v, want llm.ErrInvalidInput", err)
	}
	// The same file twice applies at the sum of its scales, which is bounded too.
	_, err = generate(t, e, withLoRA(loraPrompt, 4, adapter("a", good, 60), adapter("a2", good, 60)))
	if !errors.Is(err, llm.ErrInvalidInput) || !strings.Contains(err.Error(), "add up to 120") {
		t.Errorf("one adapter twice at 60: %v, want llm.ErrInvalidInput saying the scales add up to 120", err)
	}
	mustGenerate(t, e, withLoRA(loraPrompt, 4, adapter("a", good, 1)))
}

// writeLoRAFactors writes an adapter of a llama's blk.0.attn_q.weight whose factors have type
// typ and the dims given, zero-filled.
func writeLoRAFactors(t *testing.T, path string, typ uint32, a, b []uint64) {
	t.Helper()
	w := gguftest.NewWriter()
	w.AddString("general.architecture", "llama")
	w.AddString("general.type", "adapter")
	w.AddString("adapter.type", "lora")
	for _, f := range []struct {
		suffix string
		dims   []uint64
	}{{".lora_a", a}, {".lora_b", b}} {
		size, err := gguf.TensorBytes(typ, f.dims)
		if err != nil {
			t.Fatal(err)
		}
		w.AddTensor("blk.0.attn_q.weight"+f.suffix, typ, f.dims, make([]byte, size))
	}
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// TestLoRAGraphRoom: llama.cpp sizes a context's compute graph once, for the model alone, and
// aborts the process when adapters outgrow it. On a 16-block model one adapter of every block
// matrix fits, two at once do not: refused, and the engine goes on.
func TestLoRAGraphRoom(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "deep.gguf")
	if err := gguftest.WriteTinyLlama(model, gguftest.TinyLlamaOptions{Layers: 16}); err != nil {
		t.Fatal(err)
	}
	var files []string
	for i := range 2 {
		path := filepath.Join(dir, "lora"+itoa(uint64(i))+".gguf")
		if err := gguftest.WriteLoRA(path, model, gguftest.LoRAOptions{Seed: int64(i)}); err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
	}
	e := loadLoRAEngine(t, Options{ModelPath: model, Parallel: 1})
	one := mustGenerate(t, e, withLoRA("hello", 8, adapter("a", files[0], 1)))
	_, err := generate(t, e, withLoRA("hello", 8, adapter("a", files[0], 1), adapter("b", files[1], 1)))
	if !errors.Is(err, llm.ErrInvalidInput) || !strings.Contains(err.Error(), "adapters a, b together change 224 tensors") {
		t.Fatalf("two full adapters on a 16-block model: %v, want llm.ErrInvalidInput saying they do not fit", err)
	}
	if again := mustGenerate(t, e, withLoRA("hello", 8, adapter("a", files[0], 1))); again.text != one.text {
		t.Errorf("after the refusal: %q, before %q", again.text, one.text)
	}
}

// TestLoRAWorker: through a real worker process, an adapter changes the output (the same as
// in process), bad ones are refused with their messages across the socket, and the client
// releases adapters (llm.AdapterReleaser) so that the next request loads it again.
func TestLoRAWorker(t *testing.T) {
	files := loraFiles(t, 1)
	wide := filepath.Join(t.TempDir(), "wide.gguf")
	if err := gguftest.WriteTinyLlamaLoRA(wide, gguftest.TinyLlamaOptions{Embd: 128, Layers: 1}, gguftest.LoRAOptions{}); err != nil {
		t.Fatal(err)
	}
	local := loadLoRAEngine(t, Options{Parallel: 2})
	want := mustGenerate(t, local, withLoRA(loraPrompt, 32, adapter("a", files[0], 1))).text
	bare := mustGenerate(t, local, withLoRA(loraPrompt, 32)).text

	c, log := startWorker(t, worker.Options{ContextLength: 256, Parallel: 2, Threads: 1})
	ctx := context.Background()
	run := func(req *llm.Request) (string, error) {
		var text strings.Builder
		err := c.Generate(ctx, req, func(ev llm.Event) error {
			text.WriteString(ev.Text)
			return nil
		})
		return text.String(), err
	}
	for i := range 2 {
		if got, err := run(withLoRA(loraPrompt, 32, adapter("a", files[0], 1))); err != nil || got != want {
			t.Fatalf("run %d through the worker: %q, %v; in process %q\nlog:\n%s", i, got, err, want, log)
		}
		if got, err := run(withLoRA(loraPrompt, 32)); err != nil || got != bare {
			t.Fatalf("bare run %d through the worker: %q, %v; in process %q", i, got, err, bare)
		}
		if err := c.ReleaseAdapter(ctx, files[0]); err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Count(log.String(), "loading lora adapter from '"+files[0]); got != 2 {
		t.Errorf("the worker loaded the adapter %d times, want 2 (once, then again after the release)", got)
	}
	// JSON has no NaN: the client refuses the request before it reaches the worker.
	_, err := run(withLoRA(loraPrompt, 4, adapter("nan", files[0], math.NaN())))
	if !errors.Is(err, llm.ErrInvalidInput) || !strings.Contains(err.Error(), "NaN") {
		t.Errorf("NaN scale through the worker: %v, want llm.ErrInvalidInput saying NaN", err)
	}
	_, err = run(withLoRA(loraPrompt, 4, adapter("wide", wide, 1)))
	if !errors.Is(err, llm.ErrInvalidInput) || !strings.Contains(err.Error(), wide) || !strings.Contains(err.Error(), testModelPath) {
		t.Errorf("a mismatched adapter through the worker: %v, want llm.ErrInvalidInput naming both files", err)
	}
	pid := c.PID()
	if got, err := run(withLoRA(loraPrompt, 32)); err != nil || got != bare || c.PID() != pid {
		t.Errorf("after the refusals: %q, %v (pid %d, was %d); want the bare output from the same worker", got, err, c.PID(), pid)
	}
}
