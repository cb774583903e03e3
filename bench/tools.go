package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/superfluid/superfluid/runtime/llamacpp"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/schema"
)

// benchTools measures what tool calling and logprobs cost the decode: the engine decodes
// under the grammar that tool_choice required builds, and with top_logprobs 5, each as a ratio
// of plain decode, interleaved run by run so drift hits all three alike.
func benchTools(model string, o Options, w io.Writer) error {
	e, err := llamacpp.Load(llamacpp.Options{ModelPath: model, ContextLength: o.ContextLength, Parallel: 1, Threads: o.Threads})
	if err != nil {
		return err
	}
	defer e.Close()
	// A long required string keeps the grammar in charge for the whole run rather than
	// letting a short call end it early.
	params := json.RawMessage(`{"type":"object","properties":{"story":{"type":"string","minLength":1500}},"required":["story"]}`)
	call, err := schema.ToolCall([]schema.Tool{{Name: "write_story", Parameters: params}}, "", true)
	if err != nil {
		return err
	}
	info := e.Info()
	fmt.Fprintf(w, "model %s (%s), threads %d, %d decode tokens, %d runs each\n", model, info.Architecture, info.Threads, o.DecodeTokens, o.Repeat)
	variants := []struct {
		name  string
		apply func(*llm.Request)
	}{
		{"plain", func(*llm.Request) {}},
		{"tool_choice required", func(r *llm.Request) { r.Format, r.Schema = llm.FormatSchema, call }},
		{"top_logprobs 5", func(r *llm.Request) { r.Logprobs, r.TopLogprobs = true, 5 }},
	}
	rates := make([][]float64, len(variants))
	for run := range o.Repeat {
		for i, v := range variants {
			zero := 0.0
			req := &llm.Request{Prompt: fmt.Sprintf("%d. Write a story as a tool call.", run), AddSpecial: true,
				MaxTokens: o.DecodeTokens, IgnoreEOS: true, Sampling: llm.Sampling{Temperature: &zero}}
			v.apply(req)
			rate, err := decodeRate(e, req)
			if err != nil {
				return fmt.Errorf("%s: %w", v.name, err)
			}
			rates[i] = append(rates[i], rate)
		}
	}
	base, _ := medianMin(rates[0])
	fmt.Fprintf(w, "%-22s %12s %12s %10s\n", "", "decode med", "decode min", "vs plain")
	for i, v := range variants {
		med, least := medianMin(rates[i])
		fmt.Fprintf(w, "%-22s %12.1f %12.1f %9.1f%%\n", v.name, med, least, 100*med/base)
	}
	return nil
}

// decodeRate is the engine's own decode speed for one generation: the tokens after the first
// over the time the engine spent decoding them.
func decodeRate(e *llamacpp.Engine, req *llm.Request) (float64, error) {
	var done *llm.Done
	err := e.Generate(context.Background(), req, func(ev llm.Event) error {
		if ev.Done != nil {
			done = ev.Done
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if done == nil || done.Usage.CompletionTokens < 2 || done.Timings.Decode <= 0 {
		return 0, fmt.Errorf("too short a generation to time (%+v)", done)
	}
	return float64(done.Usage.CompletionTokens-1) / done.Timings.Decode.Seconds(), nil
}
