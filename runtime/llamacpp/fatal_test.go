package llamacpp

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ollama/ollama/llama"

	"github.com/superfluid/superfluid/runtime/llm"
)

func TestFatalDecode(t *testing.T) {
	// The errors the ollama wrapper returns for llama_decode's codes (llama.go, Context.Decode).
	wrapped := func(code int) error {
		switch {
		case code < 0:
			return fmt.Errorf("llama_decode failed with code %d", code)
		case code > 0:
			return llama.ErrKvCacheFull
		}
		return nil
	}
	for _, tt := range []struct {
		code  int
		fatal bool
	}{
		{0, false},  // success
		{1, false},  // no KV slot: memory state restored
		{2, false},  // aborted
		{-1, true},  // invalid batch
		{-2, true},  // allocation failed
		{-3, true},  // compute failed
		{-99, true}, // anything else negative
	} {
		if got := fatalDecode(wrapped(tt.code)); got != tt.fatal {
			t.Errorf("code %d: fatal = %v, want %v", tt.code, got, tt.fatal)
		}
	}
}

// TestDecodeFailures: a full KV cache fails the lanes and the engine goes on; a fatal decode
// fails them and marks the engine failed for good.
func TestDecodeFailures(t *testing.T) {
	e, err := Load(Options{ModelPath: testModelPath, ContextLength: 128, Parallel: 2, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	drop := func(llm.Event) error { return nil }

	e.decode = func(*llama.Batch) error { return llama.ErrKvCacheFull }
	err = e.Generate(ctx, greedy("Once upon a time", 4), drop)
	if !errors.Is(err, llm.ErrEngineFailure) {
		t.Fatalf("Generate with a full KV cache = %v, want an engine failure", err)
	}
	if e.Failure() != nil {
		t.Fatalf("a full KV cache failed the engine: %v", e.Failure())
	}
	e.decode = e.lctx.Decode
	mustGenerate(t, e, greedy("Once upon a time", 4))

	e.decode = func(*llama.Batch) error { return errors.New("llama_decode failed with code -3") }
	err = e.Generate(ctx, greedy("Once upon a time", 4), drop)
	if !errors.Is(err, llm.ErrEngineFailure) {
		t.Fatalf("Generate through a fatal decode = %v, want an engine failure", err)
	}
	select {
	case <-e.Failed():
	default:
		t.Fatal("Failed is not closed after a fatal decode")
	}
	if f := e.Failure(); !errors.Is(f, llm.ErrEngineFailure) || f.Error() != err.Error() {
		t.Errorf("Failure = %v, want the error the call got (%v)", f, err)
	}
	// Later calls fail at once, without reaching llama.cpp; tokenizing still works.
	decodes := 0
	e.decode = func(*llama.Batch) error { decodes++; return nil }
	if err := e.Generate(ctx, greedy("Again", 4), drop); !errors.Is(err, llm.ErrEngineFailure) || decodes != 0 {
		t.Errorf("Generate on a failed engine = %v after %d decodes, want its failure and none", err, decodes)
	}
	if _, err := e.Tokenize(ctx, "still", true, true); err != nil {
		t.Errorf("Tokenize on a failed engine: %v", err)
	}
}

func TestVocabOnlyEngine(t *testing.T) {
	e, err := Load(Options{ModelPath: testModelPath, VocabOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	for _, text := range []string{"Hello world", "<s>once", ""} {
		got, err := e.Tokenize(ctx, text, true, true)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tokenize(t, testEngine, text)) {
			t.Errorf("Tokenize(%q) = %v, %v; want %v", text, got, err, tokenize(t, testEngine, text))
		}
	}
	if info := e.Info(); info.VocabSize != testEngine.Info().VocabSize || info.AddBOS != testEngine.Info().AddBOS {
		t.Errorf("Info = %+v", info)
	}
	if err := e.Generate(ctx, greedy("Once", 4), func(llm.Event) error { return nil }); !errors.Is(err, llm.ErrEngineFailure) {
		t.Errorf("Generate on a vocab-only engine = %v, want an engine failure", err)
	}
	if s, err := e.Slots(ctx); err != nil || len(s.Lanes) != 0 {
		t.Errorf("Slots = %+v, %v; want no lanes", s, err)
	}
}
