package llamacpp

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llm"
)

const loraPrompt = "Once upon a time, there was a little dog"

// loraFiles writes n random adapters (seeds 1..n) for the test model.
func loraFiles(t *testing.T, n int) []string {
	t.Helper()
	dir := t.TempDir()
	paths := make([]string, n)
	for i := range paths {
		paths[i] = filepath.Join(dir, fmt.Sprintf("lora%d.gguf", i+1))
		if err := gguftest.WriteLoRA(paths[i], testModelPath, gguftest.LoRAOptions{Seed: int64(i + 1)}); err != nil {
			t.Fatal(err)
		}
	}
	return paths
}

// loadLoRAEngine loads a private engine on the test model, closed at cleanup.
func loadLoRAEngine(t *testing.T, opts Options) *Engine {
	t.Helper()
	if opts.ModelPath == "" {
		opts.ModelPath = testModelPath
	}
	if opts.ContextLength == 0 {
		opts.ContextLength = 256
	}
	e, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// withLoRA is a greedy request for prompt running with the adapters at path:scale pairs.
func withLoRA(prompt string, tokens int, adapters ...llm.AdapterRef) *llm.Request {
	req := greedy(prompt, tokens)
	req.IgnoreEOS = true
	req.Adapters = adapters
	return req
}

func adapter(id, path string, scale float64) llm.AdapterRef {
	return llm.AdapterRef{ID: id, Path: path, Scale: scale}
}

// loraCounts is how many adapter files e loaded and freed.
func loraCounts(e *Engine) (loads, frees int) {
	e.lora.mu.Lock()
	defer e.lora.mu.Unlock()
	return e.lora.loads, e.lora.frees
}

// TestLoRAChangesAndRestores: an adapter changes greedy output, at scale 0.5 differently
// again, at scale 0 not at all; a request without it afterwards gives exactly the bare output
// (the adapter does not stay applied), and the first load is the only one.
func TestLoRAChangesAndRestores(t *testing.T) {
	files := loraFiles(t, 1)
	e := loadLoRAEngine(t, Options{Parallel: 2})
	bare := mustGenerate(t, e, withLoRA(loraPrompt, 40)).text
	full := mustGenerate(t, e, withLoRA(loraPrompt, 40, adapter("a", files[0], 1))).text
	half := mustGenerate(t, e, withLoRA(loraPrompt, 40, adapter("a", files[0], 0.5))).text
	off := mustGenerate(t, e, withLoRA(loraPrompt, 40, adapter("a", files[0], 0))).text
	again := mustGenerate(t, e, withLoRA(loraPrompt, 40)).text
	t.Logf("bare %q\nfull %q\nhalf %q", bare, full, half)
	switch {
	case full == bare || half == bare || half == full:
		t.Errorf("outputs bare %q, scale 1 %q, scale 0.5 %q: want three different texts", bare, full, half)
	case off != bare:
		t.Errorf("scale 0 wrote %q, the bare model %q", off, bare)
	case again != bare:
		t.Errorf("without the adapter after it: %q, want the bare output %q", again, bare)
	}
	if loads, _ := loraCounts(e); loads != 1 {
		t.Errorf("%d adapter loads, want 1 (loaded on first use, then kept)", loads)
	}
	// The same adapter named twice applies once, at the sum of its scales.
	twice := mustGenerate(t, e, withLoRA(loraPrompt, 40, adapter("a", files[0], 0.5), adapter("a", files[0], 0.5))).text
	if twice != full {
		t.Errorf("twice at 0.5: %q, want the scale 1 output %q", twice, full)
	}
}

// TestLoRASwitchOnOneLane: on one lane, each request's first decode has the shape of the
// previous request's last (one token, one sequence), the case where llama.cpp reuses its last
// compute graph; switching adapters between them must still switch what is computed.
func TestLoRASwitchOnOneLane(t *testing.T) {
	files := loraFiles(t, 1)
	e := loadLoRAEngine(t, Options{Parallel: 1})
	bos := func(e *Engine, adapters ...llm.AdapterRef) string { // the prompt is BOS alone: one token
		return mustGenerate(t, e, withLoRA("", 64, adapters...)).text
	}
	a := adapter("a", files[0], 1)
	half := adapter("a", files[0], 0.5)
	// Each set's output on an engine of its own, where nothing ran before it.
	want := []string{bos(loadLoRAEngine(t, Options{Parallel: 1})), bos(loadLoRAEngine(t, Options{Parallel: 1}), a),
		bos(loadLoRAEngine(t, Options{Parallel: 1}), half)}
	got := []string{bos(e), bos(e, a), bos(e, half), bos(e), bos(e, half), bos(e, a), bos(e)}
	order := []int{0, 1, 2, 0, 2, 1, 0}
	if want[0] == want[1] || want[1] == want[2] || want[0] == want[2] {
		t.Fatalf("bare %q, scale 1 %q, scale 0.5 %q: want three different texts", want[0], want[1], want[2])
	}
	for i, w := range order {
		if got[i] != want[w] {
			t.Errorf("request %d wrote %q, want %q (set %d)", i, got[i], want[w], w)
		}
	}
	// Freeing the adapter takes it out of the context and the reload puts it back before any
	// decode: the graph of the last decode (with the freed adapter in it) must not run again.
	if last := bos(e, a); last != want[1] {
		t.Errorf("before the release: %q, want %q", last, want[1])
	}
	if err := e.ReleaseAdapter(context.Background(), files[0]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the released adapter to be freed", func() bool { _, frees := loraCounts(e); return frees == 1 })
	if reloaded := bos(e, a); reloaded != want[1] {
		t.Errorf("after a release and a reload: %q, want %q", reloaded, want[1])
	}
}

// TestLoRALanesSideBySide: lanes with different adapter sets decode in the same ticks (one
// llama_decode per set), and each writes what it writes alone.
func TestLoRALanesSideBySide(t *testing.T) {
	files := loraFiles(t, 2)
	e := loadLoRAEngine(t, Options{Parallel: 4})
	reqs := []*llm.Request{
		withLoRA(loraPrompt, 48),
		withLoRA(loraPrompt, 48, adapter("a", files[0], 1)),
		withLoRA(loraPrompt, 48, adapter("a", files[0], 0.5)),
		withLoRA(loraPrompt, 48, adapter("a", files[0], 1), adapter("b", files[1], 0.7)),
	}
	solo := make([]string, len(reqs))
	for i, req := range reqs {
		req.NoCache = true // each solo run cold, as the batched ones are
		solo[i] = mustGenerate(t, e, req).text
	}
	for i := range solo {
		for j := range i {
			if solo[i] == solo[j] {
				t.Fatalf("requests %d and %d write the same %q alone; want each set to differ", j, i, solo[i])
			}
		}
	}
	// Goroutines start apart; retry until the generations really shared ticks.
	for attempt := 0; ; attempt++ {
		before := e.lora.mixedTicks.Load()
		got := make([]string, len(reqs))
		var wg sync.WaitGroup
		for i, req := range reqs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := generate(t, e, req)
				if err != nil {
					t.Errorf("request %d: %v", i, err)
				}
				got[i] = r.text
			}()
		}
		wg.Wait()
		for i := range reqs {
			if got[i] != solo[i] {
				t.Errorf("request %d side by side wrote %q, alone %q", i, got[i], solo[i])
			}
		}
		mixed := e.lora.mixedTicks.Load() - before
		if mixed > 0 || t.Failed() {
			t.Logf("attempt %d: %d ticks decoded more than one adapter set", attempt+1, mixed)
			break
		}
		if attempt == 4 {
			t.Fatal("five attempts and the generations never shared a tick")
		}
	}
}

// TestLoRASpeculation: n-gram speculation under an adapter verifies with the adapter, so the
// greedy output is the same as without speculation.
func TestLoRASpeculation(t *testing.T) {
	files := loraFiles(t, 1)
	e := loadLoRAEngine(t, Options{Parallel: 2})
	plain := mustGenerate(t, e, withLoRA(loraPrompt, 64, adapter("a", files[0], 1)))
	req := withLoRA(loraPrompt, 64, adapter("a", files[0], 1))
	req.NoCache = true
	req.Speculative = &llm.Speculative{Mode: llm.SpecNgram, DraftTokens: 4}
	spec := mustGenerate(t, e, req)
	if spec.text != plain.text || spec.done.Spec == nil || spec.done.Spec.Proposed == 0 {
		t.Errorf("speculative %q (spec %+v), plain %q: want the same text, with drafts proposed", spec.text, spec.done.Spec, plain.text)
	}
}

// TestLoRAReleaseReloads: ReleaseAdapter frees the adapter once the generation running with
// it ends (not before), and the next request naming it loads it again, with the same output.
func TestLoRAReleaseReloads(t *testing.T) {
	files := loraFiles(t, 1)
	e := loadLoRAEngine(t, Options{Parallel: 2})
	first := mustGenerate(t, e, withLoRA(loraPrompt, 40, adapter("a", files[0], 1))).text

	started, proceed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	done := make(chan error, 1)
	go func() {
		done <- e.Generate(context.Background(), withLoRA(loraPrompt, 200, adapter("a", files[0], 1)), func(llm.Event) error {
			once.Do(func() { close(started); <-proceed })
			return nil
		})
	}()
	<-started
	if err := e.ReleaseAdapter(context.Background(), files[0]); err != nil {
		t.Fatal(err)
	}
	mustGenerate(t, e, withLoRA("hello", 4)) // loop iterations after the release
	if _, frees := loraCounts(e); frees != 0 {
		t.Errorf("%d adapters freed while a generation runs with it, want 0", frees)
	}
	close(proceed)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the released adapter to be freed", func() bool { _, frees := loraCounts(e); return frees == 1 })

	again := mustGenerate(t, e, withLoRA(loraPrompt, 40, adapter("a", files[0], 1)))
	if loads, _ := loraCounts(e); loads != 2 || again.text != first {
		t.Errorf("after the release: %d loads, output %q; want 2 loads and the first output %q", loads, again.text, first)
	}
	if again.done.Usage.CachedTokens != 0 {
		t.Errorf("after the release %d prompt tokens came from the cache, want 0 (its lanes are dropped)", again.done.Usage.CachedTokens)
	}
	if err := e.ReleaseAdapter(context.Background(), filepath.Join(t.TempDir(), "never-loaded.gguf")); err != nil {
		t.Errorf("releasing an adapter never loaded: %v, want nil", err)
	}
}

// waitFor polls cond until it holds, failing the test after a while.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
