package worker

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
)

// TestLogprobsSurviveTheSocket: logprobs come out of a worker exactly as the engine made them,
// tokens that are part of a UTF-8 character included (JSON alone would turn their text into
// U+FFFD).
func TestLogprobsSurviveTheSocket(t *testing.T) {
	for _, tc := range []struct {
		name, model, reply string
		req                llm.Request
	}{
		{"chosen only", "ok", childReply, llm.Request{Prompt: "hi", Logprobs: true}},
		{"top 5", "ok", childReply, llm.Request{Prompt: "hi", Logprobs: true, TopLogprobs: 5}},
		{"top 20 with a stop string", "ok", childReply, llm.Request{Prompt: "hi", TopLogprobs: 20, Stop: []string{"wor"}}},
		{"partial characters", "utf8", childUTF8Reply, llm.Request{Prompt: "hi", Logprobs: true, TopLogprobs: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := started(t, tc.model)
			got, err := collect(context.Background(), c, &tc.req)
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			want, err := collect(context.Background(), enginetest.New(64, tc.reply), &tc.req)
			if err != nil {
				t.Fatalf("fake Generate: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("events through the worker differ from the fake's:\ngot  %+v\nwant %+v", got, want)
			}
			n := 0
			for _, ev := range got {
				n += len(ev.Logprobs)
			}
			if done := got[len(got)-1].Done; done == nil || n == 0 || n != done.Usage.CompletionTokens {
				t.Errorf("%d logprobs, Done %+v", n, done)
			}
		})
	}
}

// TestInvalidLogprobRequests: the engine's refusals, and values JSON cannot carry, reach the
// caller as llm.ErrInvalidInput with their message, and the worker goes on serving.
func TestInvalidLogprobRequests(t *testing.T) {
	c, _ := started(t, "ok")
	inf := math.Inf(1)
	for _, tc := range []struct {
		name string
		req  llm.Request
		want string
	}{
		{"top_logprobs 21", llm.Request{Prompt: "hi", Logprobs: true, TopLogprobs: 21}, "between 0 and 20"},
		{"logit_bias past the vocabulary", llm.Request{Prompt: "hi", Sampling: llm.Sampling{LogitBias: map[int]float64{50000: 1}}}, "logit_bias token 50000 is outside the vocabulary (0-257)"},
		// JSON cannot carry these: the client refuses them before the socket.
		{"NaN logit_bias", llm.Request{Prompt: "hi", Sampling: llm.Sampling{LogitBias: map[int]float64{5: math.NaN()}}}, "NaN"},
		{"infinite temperature", llm.Request{Prompt: "hi", Sampling: llm.Sampling{Temperature: &inf}}, "+Inf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := collect(context.Background(), c, &tc.req)
			if !errors.Is(err, llm.ErrInvalidInput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Generate = %v, want llm.ErrInvalidInput saying %q", err, tc.want)
			}
		})
	}
	if events, err := collect(context.Background(), c, &llm.Request{Prompt: "hi"}); err != nil || textOf(events) != childReply {
		t.Fatalf("after the refusals: %q, %v", textOf(events), err)
	}
}
