package enginetest

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

func run(t *testing.T, e *Engine, req *llm.Request) ([]llm.Event, error) {
	t.Helper()
	var events []llm.Event
	err := e.Generate(context.Background(), req, func(ev llm.Event) error {
		events = append(events, ev)
		return nil
	})
	return events, err
}

func TestLogprobs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		reply     string
		req       llm.Request
		wantText  string
		wantCount int // logprobs expected in all (0: none asked for)
		top       int
	}{
		{"off", "Hello world!", llm.Request{Prompt: "Hi"}, "Hello world!", 0, 0},
		{"chosen only", "Hello world!", llm.Request{Prompt: "Hi", Logprobs: true}, "Hello world!", 12, 0},
		{"top 3", "Hello world!", llm.Request{Prompt: "Hi", Logprobs: true, TopLogprobs: 3}, "Hello world!", 12, 3},
		{"top 20 without the flag", "abc", llm.Request{Prompt: "Hi", TopLogprobs: 20}, "abc", 3, 20},
		{"capped", "Hello world!", llm.Request{Prompt: "Hi", Logprobs: true, TopLogprobs: 1, MaxTokens: 4}, "Hell", 4, 1},
		// The stop string's tokens are counted (and covered) though their text never shows.
		{"stop string", "Hello world!", llm.Request{Prompt: "Hi", Logprobs: true, TopLogprobs: 2, Stop: []string{"wor"}}, "Hello ", 9, 2},
		// "é" is two tokens, the first not a whole character: its logprob waits for the event
		// that completes the character, which counts both.
		{"split character", "né!", llm.Request{Prompt: "Hi", Logprobs: true, TopLogprobs: 2}, "né!", 4, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events, err := run(t, New(64, tc.reply), &tc.req)
			if err != nil {
				t.Fatal(err)
			}
			var text strings.Builder
			var joined []byte
			count, tokens := 0, 0
			for _, ev := range events {
				text.WriteString(ev.Text)
				tokens += ev.Tokens
				if tc.wantCount > 0 && len(ev.Logprobs) != ev.Tokens {
					t.Errorf("event %+v: %d logprobs for %d tokens", ev, len(ev.Logprobs), ev.Tokens)
				}
				for _, lp := range ev.Logprobs {
					count++
					joined = append(joined, lp.Bytes...)
					checkLogprob(t, lp, tc.top)
				}
			}
			if text.String() != tc.wantText || count != tc.wantCount {
				t.Errorf("text %q with %d logprobs, want %q with %d", text.String(), count, tc.wantText, tc.wantCount)
			}
			if done := events[len(events)-1].Done; done == nil || done.Usage.CompletionTokens != tokens {
				t.Errorf("events count %d tokens, Done %+v", tokens, done)
			}
			if tc.wantCount > 0 && string(joined) != tc.reply[:tc.wantCount] {
				t.Errorf("logprob bytes %q, want the reply's first %d bytes", joined, tc.wantCount)
			}
		})
	}
}

// checkLogprob: the chosen token is the most likely and first of Top, which is sorted and holds
// top distinct tokens, every logprob a probability's log.
func checkLogprob(t *testing.T, lp llm.TokenLogprob, top int) {
	t.Helper()
	if lp.Logprob > 0 || lp.Token != string(lp.Bytes) || len(lp.Top) != top {
		t.Fatalf("logprob %+v, want <= 0, Token = Bytes and %d alternatives", lp, top)
	}
	if top == 0 {
		return
	}
	if string(lp.Top[0].Bytes) != string(lp.Bytes) || lp.Top[0].Logprob != lp.Logprob {
		t.Errorf("Top[0] = %+v, want the chosen token %q", lp.Top[0], lp.Bytes)
	}
	seen := map[string]bool{}
	sum := 0.0
	for k, alt := range lp.Top {
		if (k > 0 && alt.Logprob > lp.Top[k-1].Logprob) || seen[string(alt.Bytes)] {
			t.Errorf("Top %+v: not sorted, or a token twice", lp.Top)
		}
		seen[string(alt.Bytes)] = true
		sum += math.Exp(alt.Logprob)
	}
	if sum > 1 {
		t.Errorf("Top's probabilities sum to %g", sum)
	}
}

func TestInvalidRequests(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  llm.Request
		want string
	}{
		{"top_logprobs 21", llm.Request{Logprobs: true, TopLogprobs: 21}, "top_logprobs"},
		{"top_logprobs -1", llm.Request{Logprobs: true, TopLogprobs: -1}, "top_logprobs"},
		{"logit_bias past the vocabulary", llm.Request{Sampling: llm.Sampling{LogitBias: map[int]float64{258: 1}}}, "logit_bias token 258 is outside the vocabulary (0-257)"},
		{"negative logit_bias id", llm.Request{Sampling: llm.Sampling{LogitBias: map[int]float64{-1: 1}}}, "outside the vocabulary"},
		{"NaN logit_bias", llm.Request{Sampling: llm.Sampling{LogitBias: map[int]float64{5: math.NaN()}}}, "NaN"},
		{"infinite logit_bias", llm.Request{Sampling: llm.Sampling{LogitBias: map[int]float64{5: math.Inf(-1)}}}, "-Inf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(64, "Hello")
			tc.req.Prompt = "Hi"
			events, err := run(t, e, &tc.req)
			if !errors.Is(err, llm.ErrInvalidInput) || !strings.Contains(err.Error(), tc.want) || len(events) != 0 {
				t.Fatalf("Generate = %v after %d events, want llm.ErrInvalidInput saying %q and no events", err, len(events), tc.want)
			}
			if len(e.Requests()) != 1 {
				t.Errorf("the refused request was not recorded")
			}
		})
	}
}
