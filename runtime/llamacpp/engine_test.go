package llamacpp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

func TestInfo(t *testing.T) {
	info := testEngine.Info()
	if info.Path != testModelPath || info.Architecture != "llama" || info.ContextLength != testCtx ||
		info.Parallel != testParallel || info.VocabSize != 512 || !info.AddBOS || info.Threads < 1 ||
		info.TrainContextLength != 2048 || info.Runtime == "" {
		t.Errorf("Info = %+v", info)
	}
}

// TestMaxTokenBytes: the engine reports its longest token text, and no tokenization covers
// more bytes per token than that.
func TestMaxTokenBytes(t *testing.T) {
	info := testEngine.Info()
	longest := 0
	for id := range info.VocabSize {
		longest = max(longest, len(testEngine.Piece(id)))
	}
	if info.MaxTokenBytes != longest || longest == 0 {
		t.Fatalf("MaxTokenBytes = %d, the longest piece is %d bytes", info.MaxTokenBytes, longest)
	}
	text := strings.Repeat("Once upon a time, there was a little girl named Lily. <s>", 20)
	if n := len(tokenize(t, testEngine, text)); len(text) > n*info.MaxTokenBytes {
		t.Fatalf("%d bytes made %d tokens, more than %d bytes a token", len(text), n, info.MaxTokenBytes)
	}
	vocab, err := Load(Options{ModelPath: testModelPath, VocabOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer vocab.Close()
	if got := vocab.Info().MaxTokenBytes; got != longest {
		t.Fatalf("vocab-only MaxTokenBytes = %d, want %d", got, longest)
	}
}

func TestTokenize(t *testing.T) {
	ctx := context.Background()
	if got, err := testEngine.Tokenize(ctx, "", false, false); err != nil || len(got) != 0 {
		t.Errorf("Tokenize(\"\", no special) = %v, %v; want no tokens", got, err)
	}
	bos, err := testEngine.Tokenize(ctx, "", true, false)
	if err != nil || len(bos) != 1 {
		t.Fatalf("Tokenize(\"\", special) = %v, %v; want just BOS", bos, err)
	}
	plain, _ := testEngine.Tokenize(ctx, "Hello world", false, false)
	withBOS, _ := testEngine.Tokenize(ctx, "Hello world", true, false)
	if len(plain) == 0 || len(withBOS) != len(plain)+1 || withBOS[0] != bos[0] {
		t.Errorf("Tokenize with BOS = %v, without = %v; want BOS %d then the same tokens", withBOS, plain, bos[0])
	}
	if parsed, _ := testEngine.Tokenize(ctx, "<s>", false, true); len(parsed) != 1 || parsed[0] != bos[0] {
		t.Errorf("Tokenize(\"<s>\", parse special) = %v, want [%d]", parsed, bos[0])
	}
	if literal, _ := testEngine.Tokenize(ctx, "<s>", false, false); len(literal) < 2 {
		t.Errorf("Tokenize(\"<s>\", literal) = %v, want it spelled out", literal)
	}
}

func TestGreedyIsDeterministic(t *testing.T) {
	const prompt = "Greedy test. Once upon a time, there was a little cat"
	want := len(tokenize(t, testEngine, prompt))
	first := mustGenerate(t, testEngine, greedy(prompt, 40))
	second := mustGenerate(t, testEngine, greedy(prompt, 40))
	if first.text != second.text {
		t.Errorf("greedy outputs differ:\n%q\n%q", first.text, second.text)
	}
	for _, r := range []result{first, second} {
		u := r.done.Usage
		if u.PromptTokens != want {
			t.Errorf("prompt tokens = %d, want %d (Tokenize)", u.PromptTokens, want)
		}
		if u.CompletionTokens > 40 || (r.done.FinishReason == llm.FinishLength) != (u.CompletionTokens == 40) {
			t.Errorf("completion tokens %d with finish %q, max 40", u.CompletionTokens, r.done.FinishReason)
		}
	}
	capped := greedy(prompt, 7)
	capped.IgnoreEOS = true
	r := mustGenerate(t, testEngine, capped)
	if r.done.FinishReason != llm.FinishLength || r.done.Usage.CompletionTokens != 7 {
		t.Errorf("capped at 7: finish %q with %d tokens", r.done.FinishReason, r.done.Usage.CompletionTokens)
	}
	if !strings.HasPrefix(first.text, r.text) {
		t.Errorf("capped output %q is not a prefix of %q", r.text, first.text)
	}
}

func TestPrefixCache(t *testing.T) {
	const a = "Prefix cache test: the dog ran to the park and played with a red ball all day long"
	const b = "Prefix cache test: the dog ran to the park and then a bird flew"
	first := mustGenerate(t, testEngine, greedy(a, 10))
	second := mustGenerate(t, testEngine, greedy(a, 10))
	if got, want := second.done.Usage.CachedTokens, second.done.Usage.PromptTokens-1; got != want {
		t.Errorf("identical request: cached %d tokens, want %d (all but the last prompt token)", got, want)
	}
	if second.started.CachedTokens != second.done.Usage.CachedTokens || second.started.Lane != first.started.Lane {
		t.Errorf("Started %+v, first on lane %d; want the cached count and the same lane", second.started, first.started.Lane)
	}
	if first.text != second.text {
		t.Errorf("the cached run wrote %q, the first %q", second.text, first.text)
	}

	ta, tb := tokenize(t, testEngine, a), tokenize(t, testEngine, b)
	common := commonPrefix(ta, tb)
	if common < 5 || common >= len(ta) || common >= len(tb) {
		t.Fatalf("test prompts share %d of %d and %d tokens; want a real, proper prefix", common, len(ta), len(tb))
	}
	third := mustGenerate(t, testEngine, greedy(b, 10))
	if third.done.Usage.CachedTokens != common || third.started.Lane != first.started.Lane {
		t.Errorf("shared prefix: cached %d on lane %d, want %d on lane %d", third.done.Usage.CachedTokens, third.started.Lane, common, first.started.Lane)
	}
	// The lane now holds b; a is only cached up to the common prefix.
	fourth := mustGenerate(t, testEngine, greedy(a, 10))
	if fourth.done.Usage.CachedTokens != common || fourth.text != first.text {
		t.Errorf("back to the first prompt: cached %d, text %q; want %d and %q", fourth.done.Usage.CachedTokens, fourth.text, common, first.text)
	}
}

func TestStopString(t *testing.T) {
	const prompt = "Stop test. One day, a boy named Tom went to the big forest"
	req := greedy(prompt, 40)
	req.IgnoreEOS = true
	full := mustGenerate(t, testEngine, req)
	stop := pickStop(full.text)
	if stop == "" {
		t.Fatalf("no stop string to pick in %q", full.text)
	}
	req.Stop = []string{stop}
	r := mustGenerate(t, testEngine, req)
	want := full.text[:strings.Index(full.text, stop)]
	if r.text != want || r.done.FinishReason != llm.FinishStop {
		t.Errorf("stop %q: got %q (%s), want %q (stop)", stop, r.text, r.done.FinishReason, want)
	}
	if n := r.done.Usage.CompletionTokens; n == 0 || n >= full.done.Usage.CompletionTokens {
		t.Errorf("stop %q: %d completion tokens, want between 1 and %d", stop, n, full.done.Usage.CompletionTokens-1)
	}
	// A stop string that never appears changes nothing.
	req.Stop = []string{"\x00never\x00"}
	if r := mustGenerate(t, testEngine, req); r.text != full.text || r.done.FinishReason != llm.FinishLength {
		t.Errorf("absent stop: got %q (%s), want %q (length)", r.text, r.done.FinishReason, full.text)
	}
}

// pickStop returns a word from the second half of text (or, for gibberish, two characters).
func pickStop(text string) string {
	clean := func(s string) bool { return !strings.ContainsAny(s, "\uFFFD\x00") }
	fields := strings.Fields(text)
	for _, w := range fields[len(fields)/2:] {
		if len(w) >= 3 && clean(w) {
			return w
		}
	}
	runes := []rune(text)
	for i := len(runes) / 2; i+2 <= len(runes); i++ {
		if s := string(runes[i : i+2]); clean(s) && strings.TrimSpace(s) != "" {
			return s
		}
	}
	return ""
}

func TestIgnoreEOS(t *testing.T) {
	for _, temp := range []float64{0, 0.8} {
		req := &llm.Request{Prompt: "The end.", AddSpecial: true, MaxTokens: 50, IgnoreEOS: true,
			Sampling: llm.Sampling{Temperature: ptr(temp), Seed: 7}}
		r := mustGenerate(t, testEngine, req)
		if r.done.Usage.CompletionTokens != 50 || r.done.FinishReason != llm.FinishLength {
			t.Errorf("temperature %v: %d completion tokens, finish %q; want 50, length", temp, r.done.Usage.CompletionTokens, r.done.FinishReason)
		}
	}
}

func TestSeeds(t *testing.T) {
	sampled := func(seed uint64) string {
		req := &llm.Request{Prompt: "Seed test. Lily had a", AddSpecial: true, MaxTokens: 30, IgnoreEOS: true,
			Sampling: llm.Sampling{Temperature: ptr(0.8), Seed: seed}}
		return mustGenerate(t, testEngine, req).text
	}
	if a, b := sampled(42), sampled(42); a != b {
		t.Errorf("seed 42 twice:\n%q\n%q", a, b)
	}
	distinct := map[string]bool{}
	for seed := uint64(1); seed <= 5; seed++ {
		distinct[sampled(seed)] = true
	}
	if len(distinct) < 2 {
		t.Errorf("seeds 1-5 all wrote the same text %v", distinct)
	}
}

func TestConcurrentGenerations(t *testing.T) {
	const n = 2 * testParallel
	reqs := make([]*llm.Request, n)
	want := make([]string, n)
	for i := range reqs {
		reqs[i] = greedy(fmt.Sprintf("Concurrent test %d. Once upon a time, a %s", i, []string{"cat", "dog", "bird", "fish"}[i%4]), 30)
		reqs[i].IgnoreEOS = true
		want[i] = mustGenerate(t, testEngine, reqs[i]).text
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i, req := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var events []llm.Event
			if err := testEngine.Generate(context.Background(), req, func(ev llm.Event) error {
				events = append(events, ev)
				return nil
			}); err != nil {
				errs <- fmt.Errorf("request %d: %w", i, err)
				return
			}
			if err := checkEvents(events, testParallel); err != nil {
				errs <- fmt.Errorf("request %d: %w", i, err)
				return
			}
			var text strings.Builder
			for _, ev := range events {
				text.WriteString(ev.Text)
			}
			done := events[len(events)-1].Done
			if done.Usage.CompletionTokens != 30 || done.FinishReason != llm.FinishLength {
				errs <- fmt.Errorf("request %d: %d completion tokens, finish %q", i, done.Usage.CompletionTokens, done.FinishReason)
			}
			if text.String() != want[i] {
				errs <- fmt.Errorf("request %d: batched output %q differs from the sequential %q", i, text.String(), want[i])
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestContextLength(t *testing.T) {
	long := textOfLength(t, testEngine, testCtx+1)
	_, err := generate(t, testEngine, greedy(long, 5))
	var cl *llm.ContextLengthError
	if !errors.As(err, &cl) || cl.PromptTokens != testCtx+1 || cl.ContextLength != testCtx || !errors.Is(err, llm.ErrContextLength) {
		t.Errorf("a prompt of %d tokens: err = %v, want a ContextLengthError", testCtx+1, err)
	}

	exact := mustGenerate(t, testEngine, greedy(textOfLength(t, testEngine, testCtx), 0))
	if u := exact.done.Usage; u.PromptTokens != testCtx || u.CompletionTokens != 0 || exact.done.FinishReason != llm.FinishLength || exact.text != "" {
		t.Errorf("a prompt filling the context: usage %+v, finish %q, text %q; want 0 tokens, length", u, exact.done.FinishReason, exact.text)
	}

	oneLeft := greedy(textOfLength(t, testEngine, testCtx-1), 0)
	oneLeft.IgnoreEOS = true
	if r := mustGenerate(t, testEngine, oneLeft); r.done.Usage.CompletionTokens != 1 || r.done.FinishReason != llm.FinishLength {
		t.Errorf("one token of room: %d completion tokens, finish %q; want 1, length", r.done.Usage.CompletionTokens, r.done.FinishReason)
	}
}

// Every lane can hold a whole window at once: MaxTokens 0 fills the context on all lanes.
func TestFillContextOnEveryLane(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan error, testParallel)
	for i := range testParallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := &llm.Request{Prompt: fmt.Sprintf("Fill test %d: a long story", i), AddSpecial: true, IgnoreEOS: true,
				Sampling: llm.Sampling{Seed: uint64(i + 1)}}
			var events []llm.Event
			if err := testEngine.Generate(context.Background(), req, func(ev llm.Event) error {
				events = append(events, ev)
				return nil
			}); err != nil {
				errs <- err
				return
			}
			if err := checkEvents(events, testParallel); err != nil {
				errs <- err
				return
			}
			u := events[len(events)-1].Done.Usage
			if u.PromptTokens+u.CompletionTokens != testCtx {
				errs <- fmt.Errorf("request %d: %d prompt + %d completion tokens, want %d in all", i, u.PromptTokens, u.CompletionTokens, testCtx)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestInvalidInput(t *testing.T) {
	vocab := testEngine.Info().VocabSize
	tests := []struct {
		name string
		req  *llm.Request
	}{
		{"logit bias past the vocabulary", &llm.Request{Prompt: "hi", AddSpecial: true, Sampling: llm.Sampling{LogitBias: map[int]float64{vocab: 5}}}},
		{"negative logit bias id", &llm.Request{Prompt: "hi", AddSpecial: true, Sampling: llm.Sampling{LogitBias: map[int]float64{-1: 5}}}},
		{"empty prompt without BOS", &llm.Request{Prompt: "", AddSpecial: false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := generate(t, testEngine, tt.req); !errors.Is(err, llm.ErrInvalidInput) {
				t.Errorf("err = %v, want llm.ErrInvalidInput", err)
			}
		})
	}
	// An empty prompt with BOS is one token, and fine.
	req := &llm.Request{Prompt: "", AddSpecial: true, MaxTokens: 3, IgnoreEOS: true}
	if r := mustGenerate(t, testEngine, req); r.done.Usage.PromptTokens != 1 || r.done.Usage.CompletionTokens != 3 {
		t.Errorf("BOS-only prompt: usage %+v, want 1 prompt and 3 completion tokens", r.done.Usage)
	}
}

func TestLogitBias(t *testing.T) {
	ids := tokenize(t, testEngine, " dog")
	favourite := ids[len(ids)-1]
	req := greedy("Logit bias test:", 5)
	req.IgnoreEOS = true
	req.Sampling.LogitBias = map[int]float64{favourite: 1000}
	r := mustGenerate(t, testEngine, req)
	if want := strings.Repeat(testEngine.Piece(favourite), 5); r.text != want {
		t.Errorf("with token %d boosted: %q, want %q", favourite, r.text, want)
	}
	// Banning the greedy choice changes the output.
	req.Sampling.LogitBias = nil
	plain := mustGenerate(t, testEngine, req)
	req.Sampling.LogitBias = map[int]float64{}
	for _, id := range tokenize(t, testEngine, plain.text)[1:] {
		req.Sampling.LogitBias[id] = -100
	}
	if banned := mustGenerate(t, testEngine, req); banned.text == plain.text {
		t.Errorf("with the greedy tokens banned the text is still %q", banned.text)
	}
}
