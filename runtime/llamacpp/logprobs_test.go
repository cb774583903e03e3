package llamacpp

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/sampling"
	"github.com/superfluid/superfluid/runtime/worker"
)

// checkLogprobs checks r's logprobs against its events: one per counted token, event by event;
// bytes that make the text (through a TextStream with the request's stop strings, as the engine
// makes it); every logprob a probability's log; Top sorted with top entries (the chosen token
// first when greedy says it must be). It returns the logprobs in order.
func checkLogprobs(t *testing.T, r result, stops []string, top int, greedy bool) []llm.TokenLogprob {
	t.Helper()
	var all []llm.TokenLogprob
	for i, ev := range r.events {
		if len(ev.Logprobs) != ev.Tokens {
			t.Fatalf("event %d counts %d tokens and has %d logprobs", i, ev.Tokens, len(ev.Logprobs))
		}
		all = append(all, ev.Logprobs...)
	}
	if len(all) != r.done.Usage.CompletionTokens {
		t.Fatalf("%d logprobs for %d completion tokens", len(all), r.done.Usage.CompletionTokens)
	}
	stream := llm.NewTextStream(stops)
	var text strings.Builder
	for i, lp := range all {
		out, _ := stream.Push(lp.Bytes)
		text.WriteString(out)
		if lp.Token != string(lp.Bytes) || lp.Logprob > 0 || lp.Logprob < sampling.MinLogprob || len(lp.Top) != top {
			t.Fatalf("token %d: %+v; want Token = Bytes, a logprob in [-9999, 0] and %d alternatives", i, lp, top)
		}
		for k, alt := range lp.Top {
			if alt.Logprob > 0 || alt.Token != string(alt.Bytes) || (k > 0 && alt.Logprob > lp.Top[k-1].Logprob) {
				t.Fatalf("token %d: Top %+v not sorted, or not logprobs", i, lp.Top)
			}
		}
		if top > 0 && lp.Logprob > lp.Top[0].Logprob {
			t.Errorf("token %d: chosen %g above the best alternative %g", i, lp.Logprob, lp.Top[0].Logprob)
		}
		if greedy && top > 0 && (lp.Logprob != lp.Top[0].Logprob || !reflect.DeepEqual(lp.Bytes, lp.Top[0].Bytes)) {
			t.Errorf("token %d at temperature 0: chosen %q (%g), Top[0] %q (%g)", i, lp.Bytes, lp.Logprob, lp.Top[0].Bytes, lp.Top[0].Logprob)
		}
	}
	text.WriteString(stream.Flush())
	if text.String() != r.text {
		t.Errorf("logprob bytes make %q, the text is %q", text.String(), r.text)
	}
	return all
}

func TestLogprobs(t *testing.T) {
	const prompt = "Logprobs test. Once upon a time, there was a little"
	base := func() *llm.Request {
		req := greedy(prompt, 40)
		req.IgnoreEOS = true
		return req
	}
	plain := mustGenerate(t, testEngine, base())
	schema := json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],"additionalProperties":false}`)
	tests := []struct {
		name   string
		edit   func(*llm.Request)
		top    int
		greedy bool
	}{
		{"greedy, top 5", func(r *llm.Request) { r.Logprobs, r.TopLogprobs = true, 5 }, 5, true},
		{"greedy, top 20", func(r *llm.Request) { r.Logprobs, r.TopLogprobs = true, 20 }, 20, true},
		{"greedy, chosen only", func(r *llm.Request) { r.Logprobs = true }, 0, true},
		{"top_logprobs alone implies logprobs", func(r *llm.Request) { r.TopLogprobs = 3 }, 3, true},
		{"sampled", func(r *llm.Request) {
			r.Logprobs, r.TopLogprobs = true, 4
			r.Sampling = llm.Sampling{Temperature: ptr(1.5), TopK: ptr(0), MinP: ptr(0.0), Seed: 7}
		}, 4, false},
		{"stop string", func(r *llm.Request) {
			r.Logprobs, r.TopLogprobs = true, 2
			r.Stop = []string{pickStop(plain.text)}
		}, 2, true},
		// Ends with EOS (stories260K does), which gets no logprob, or at the cap.
		{"to the end of the reply", func(r *llm.Request) { r.Logprobs, r.MaxTokens, r.IgnoreEOS = true, 400, false }, 0, true},
		{"grammar", func(r *llm.Request) {
			r.Logprobs, r.TopLogprobs, r.MaxTokens, r.IgnoreEOS = true, 3, 200, false
			r.Format, r.Schema = llm.FormatSchema, schema
		}, 3, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := base()
			tc.edit(req)
			r := mustGenerate(t, testEngine, req)
			if r.done.Usage.CompletionTokens == 0 {
				t.Fatalf("no completion tokens: %+v", r.done)
			}
			checkLogprobs(t, r, req.Stop, tc.top, tc.greedy)
			if tc.greedy && req.MaxTokens == 40 && !strings.HasPrefix(plain.text, r.text) {
				t.Errorf("logprobs changed the greedy text: %q, without them %q", r.text, plain.text)
			}
		})
	}
	for _, ev := range plain.events {
		if ev.Logprobs != nil {
			t.Fatalf("logprobs without asking: %+v", ev)
		}
	}
}

// TestTopLogprobsRankTheModelsChoices: Top lists the model's most likely tokens in order.
// Banning the best k of them (logit_bias -100) makes greedy decoding choose the next one, and
// the reported distribution stays the model's, whatever the bias. NoCache makes every run
// compute the position the same way, so the numbers match exactly.
func TestTopLogprobsRankTheModelsChoices(t *testing.T) {
	req := greedy("Once upon a time", 1)
	req.IgnoreEOS, req.NoCache = true, true
	req.Logprobs, req.TopLogprobs = true, 5
	lps := checkLogprobs(t, mustGenerate(t, testEngine, req), nil, 5, true)
	top := lps[0].Top
	var sum float64
	for _, alt := range top {
		sum += math.Exp(alt.Logprob)
	}
	if sum > 1+1e-9 {
		t.Errorf("the five most likely tokens have probability %g", sum)
	}
	// Tokens can share a piece (a byte token and a word token), so bans go by piece: every
	// token with a banned piece is banned, end-of-generation tokens too (IgnoreEOS).
	banned := map[string]bool{}
	for _, id := range testEngine.eog {
		banned[testEngine.Piece(id)] = true
	}
	req.TopLogprobs = 1
	req.Sampling.LogitBias = map[int]float64{}
	for round := 0; ; round++ {
		var want *llm.TopLogprob
		for i := range top {
			if !banned[string(top[i].Bytes)] {
				want = &top[i]
				break
			}
		}
		if want == nil {
			if round < 2 {
				t.Fatalf("only %d rounds: top %+v", round, top)
			}
			return
		}
		got := checkLogprobs(t, mustGenerate(t, testEngine, req), nil, 1, false)[0]
		if got.Top[0].Logprob != top[0].Logprob || string(got.Bytes) != string(want.Bytes) || got.Logprob != want.Logprob {
			t.Fatalf("round %d: greedy chose %q (%g) and the best is %g; want %q (%g) and %g",
				round, got.Bytes, got.Logprob, got.Top[0].Logprob, want.Bytes, want.Logprob, top[0].Logprob)
		}
		banned[string(want.Bytes)] = true
		for id := range testEngine.Info().VocabSize {
			if testEngine.Piece(id) == string(want.Bytes) {
				req.Sampling.LogitBias[id] = -100
			}
		}
	}
}

func TestLogprobRequestsRefused(t *testing.T) {
	vocab := testEngine.Info().VocabSize
	for _, tc := range []struct {
		name string
		edit func(*llm.Request)
		want string
	}{
		{"top_logprobs 21", func(r *llm.Request) { r.Logprobs, r.TopLogprobs = true, 21 }, "top_logprobs must be between 0 and 20, got 21"},
		{"top_logprobs -1", func(r *llm.Request) { r.Logprobs, r.TopLogprobs = true, -1 }, "got -1"},
		{"logit_bias id past the vocabulary", func(r *llm.Request) { r.Sampling.LogitBias = map[int]float64{50000: 1} },
			"logit_bias token 50000 is outside the vocabulary (0-" + strconv.Itoa(vocab-1) + ")"},
		{"NaN logit_bias", func(r *llm.Request) { r.Sampling.LogitBias = map[int]float64{3: math.NaN()} }, "logit_bias token 3 has the value NaN"},
		{"infinite logit_bias", func(r *llm.Request) { r.Sampling.LogitBias = map[int]float64{3: math.Inf(1)} }, "+Inf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := greedy("Once", 4)
			tc.edit(req)
			if _, err := generate(t, testEngine, req); !errors.Is(err, llm.ErrInvalidInput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Generate = %v, want llm.ErrInvalidInput saying %q", err, tc.want)
			}
		})
	}
}

// TestLogprobsThroughWorker: a real worker's logprobs are the in-process engine's, number for
// number (JSON carries float64 exactly) and byte for byte.
func TestLogprobsThroughWorker(t *testing.T) {
	c, log := startWorker(t, worker.Options{ContextLength: testCtx, Parallel: testParallel, Threads: testEngine.Info().Threads})
	req := greedy("Once upon a time", 24)
	req.Logprobs, req.TopLogprobs, req.NoCache = true, 3, true
	want := collectLogprobs(mustGenerate(t, testEngine, req).events)
	var events []llm.Event
	if err := c.Generate(context.Background(), req, func(ev llm.Event) error {
		events = append(events, ev)
		return nil
	}); err != nil {
		t.Fatalf("Generate through the worker: %v\nlog:\n%s", err, log)
	}
	got := collectLogprobs(events)
	if len(got) != len(want) || len(got) == 0 {
		t.Fatalf("%d logprobs through the worker, %d in process", len(got), len(want))
	}
	// Two processes may round the model's arithmetic differently; the text must not differ.
	const tolerance = 1e-4
	for i := range got {
		g, w := got[i], want[i]
		same := g.Token == w.Token && reflect.DeepEqual(g.Bytes, w.Bytes) && math.Abs(g.Logprob-w.Logprob) < tolerance && len(g.Top) == len(w.Top)
		for k := 0; same && k < len(g.Top); k++ {
			same = g.Top[k].Token == w.Top[k].Token && reflect.DeepEqual(g.Top[k].Bytes, w.Top[k].Bytes) && math.Abs(g.Top[k].Logprob-w.Top[k].Logprob) < tolerance
		}
		if !same {
			t.Errorf("token %d through the worker %+v, in process %+v", i, g, w)
		}
	}
}

func collectLogprobs(events []llm.Event) []llm.TokenLogprob {
	var all []llm.TokenLogprob
	for _, ev := range events {
		all = append(all, ev.Logprobs...)
	}
	return all
}

// loadRandom32k loads llama-2-tiny-random from ../shared/models (a real 32000-token Llama-2
// vocabulary around one random layer), or skips when that folder is absent.
func loadRandom32k(tb testing.TB) *Engine {
	tb.Helper()
	path := filepath.Join(sharedModels, "llama-2-tiny-random.gguf")
	if _, err := os.Stat(path); err != nil {
		tb.Skipf("no %s: %v", path, err)
	}
	e, err := Load(Options{ModelPath: path, ContextLength: 512, Parallel: 1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Close() })
	return e
}

// TestLogprobs32k: on a real 32k vocabulary, gibberish with byte tokens that are parts of
// characters, logprobs still cover every token and their bytes still make the text.
func TestLogprobs32k(t *testing.T) {
	e := loadRandom32k(t)
	partial := 0
	for _, temp := range []float64{0, 1} {
		req := greedy("Hello, world. Здравствуй, мир. 你好", 120)
		req.IgnoreEOS, req.Logprobs, req.TopLogprobs = true, true, 5
		req.Sampling = llm.Sampling{Temperature: ptr(temp), TopK: ptr(0), Seed: 3}
		for _, lp := range checkLogprobs(t, mustGenerate(t, e, req), nil, 5, temp == 0) {
			if !utf8.Valid(lp.Bytes) {
				partial++
			}
		}
	}
	t.Logf("%d tokens that are part of a character", partial)
	req := greedy("Hello", 4)
	req.Sampling.LogitBias = map[int]float64{32000: 1}
	if _, err := generate(t, e, req); !errors.Is(err, llm.ErrInvalidInput) || !strings.Contains(err.Error(), "logit_bias token 32000 is outside the vocabulary (0-31999)") {
		t.Fatalf("logit_bias 32000: %v", err)
	}
}

// BenchmarkDecodeLogprobs measures decoding with and without logprobs (tokens/s), on the test
// model and on the 32k-vocabulary random model, where the vocabulary pass weighs most against
// a one-layer network.
func BenchmarkDecodeLogprobs(b *testing.B) {
	engines := []struct {
		name string
		e    func(testing.TB) *Engine
	}{
		{"test-model", func(testing.TB) *Engine { return testEngine }},
		{"random-32k", loadRandom32k},
	}
	for _, en := range engines {
		b.Run(en.name, func(b *testing.B) {
			e := en.e(b)
			for _, mode := range []struct {
				name     string
				logprobs bool
				top      int
			}{{"off", false, 0}, {"logprobs", true, 0}, {"top5", true, 5}} {
				b.Run(mode.name, func(b *testing.B) {
					tokens, decode := 0, time.Duration(0)
					for b.Loop() {
						req := greedy("Once upon a time", 200)
						req.IgnoreEOS, req.Logprobs, req.TopLogprobs = true, mode.logprobs, mode.top
						err := e.Generate(context.Background(), req, func(ev llm.Event) error {
							if ev.Done != nil {
								tokens += ev.Done.Usage.CompletionTokens
								decode += ev.Done.Timings.Decode
							}
							return nil
						})
						if err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(tokens)/decode.Seconds(), "tok/s")
				})
			}
		})
	}
}
