package app

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	ollama "github.com/ollama/ollama/api"
	"github.com/ollama/ollama/types/model"
)

// ollamaCities bounds the city the forced call may name, so that the tiny model's call ends.
var ollamaCities = []any{"Oslo", "Bergen", "Tromso"}

// ollamaCityTool is cityTool built with the official Ollama client's types.
func ollamaCityTool() ollama.Tool {
	props := ollama.NewToolPropertiesMap()
	props.Set("city", ollama.ToolProperty{Type: ollama.PropertyType{"string"}, Enum: ollamaCities})
	return ollama.Tool{Type: "function", Function: ollama.ToolFunction{
		Name: "get_weather", Description: "The weather in a city",
		Parameters: ollama.ToolFunctionParameters{Type: "object", Properties: props, Required: []string{"city"}},
	}}
}

// ollamaChat runs a chat and gathers its lines into one reply (content, calls, logprobs); the
// last line's fields stand for the rest.
func ollamaChat(t *testing.T, client *ollama.Client, req *ollama.ChatRequest) ollama.ChatResponse {
	t.Helper()
	var out ollama.ChatResponse
	var content strings.Builder
	var calls []ollama.ToolCall
	var logprobs []ollama.Logprob
	err := client.Chat(context.Background(), req, func(r ollama.ChatResponse) error {
		content.WriteString(r.Message.Content)
		calls = append(calls, r.Message.ToolCalls...)
		logprobs = append(logprobs, r.Logprobs...)
		out = r
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out.Message.Content, out.Message.ToolCalls, out.Logprobs = content.String(), calls, logprobs
	return out
}

// checkCityCalls asserts one forced call of get_weather whose arguments match the schema, and
// returns it as text to compare.
func checkCityCalls(t *testing.T, r ollama.ChatResponse) string {
	t.Helper()
	if r.DoneReason != "stop" || len(r.Message.ToolCalls) != 1 {
		t.Fatalf("done_reason %q, calls %+v, content %q", r.DoneReason, r.Message.ToolCalls, r.Message.Content)
	}
	var out []string
	for i, c := range r.Message.ToolCalls {
		city, ok := c.Function.Arguments.Get("city")
		if c.Function.Name != "get_weather" || c.Function.Index != i || c.ID == "" || c.Function.Arguments.Len() != 1 || !ok || !slices.Contains(ollamaCities, city) {
			t.Fatalf("call %d does not match the tool: %+v (arguments %s)", i, c, c.Function.Arguments.String())
		}
		out = append(out, c.Function.Name+c.Function.Arguments.String())
	}
	return strings.Join(out, "; ")
}

// TestOllamaToolCallEndToEnd: options.tool_choice "required" gets a parsable call through the
// official client even from stories260K (a grammar forces it); streamed, the same call
// arrive at temperature 0 with a fixed seed; the calls and their results go back and the
// model answers in text.
func TestOllamaToolCallEndToEnd(t *testing.T) {
	_, srv := startServer(t, toolConfig(t), true)
	base, _ := url.Parse(srv.URL)
	client := ollama.NewClient(base, srv.Client())
	name := modelID(testModel)

	show, err := client.Show(context.Background(), &ollama.ShowRequest{Model: name})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(show.Capabilities, model.Capability("tools")) || slices.Contains(show.Capabilities, model.Capability("thinking")) {
		t.Errorf("capabilities %v: tools (through the prompt), no thinking", show.Capabilities)
	}

	no := false
	req := &ollama.ChatRequest{
		Model: name, Stream: &no, Tools: ollama.Tools{ollamaCityTool()},
		// parallel_tool_calls false: one call, not a list stories260K would keep adding to.
		Options:  map[string]any{"tool_choice": "required", "parallel_tool_calls": false, "temperature": 0, "seed": 7, "num_predict": 60},
		Messages: []ollama.Message{{Role: "user", Content: "What is the weather in Oslo?"}},
	}
	first := ollamaChat(t, client, req)
	calls := checkCityCalls(t, first)
	t.Logf("calls %s", calls)

	yes := true
	req.Stream = &yes
	streamed := ollamaChat(t, client, req)
	if got := checkCityCalls(t, streamed); got != calls {
		t.Errorf("streamed calls %s, non-streamed %s", got, calls)
	}

	// Step two: the call and its result as history; the model answers in text.
	req.Stream = &no
	req.Options = map[string]any{"tool_choice": "none", "temperature": 0, "seed": 7, "num_predict": 24}
	req.Messages = append(req.Messages, ollama.Message{Role: "assistant", ToolCalls: first.Message.ToolCalls})
	for _, c := range first.Message.ToolCalls {
		req.Messages = append(req.Messages, ollama.Message{Role: "tool", ToolName: c.Function.Name, Content: "Sunny and warm."})
	}
	final := ollamaChat(t, client, req)
	t.Logf("final answer %q", final.Message.Content)
	if final.Message.Content == "" || len(final.Message.ToolCalls) != 0 || (final.DoneReason != "stop" && final.DoneReason != "length") {
		t.Errorf("final answer %+v", final)
	}

	// think on a model whose template knows no reasoning is Ollama's 400.
	req.Think = &ollama.ThinkValue{Value: true}
	err = client.Chat(context.Background(), req, func(ollama.ChatResponse) error { return nil })
	var se ollama.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusBadRequest || !strings.Contains(se.ErrorMessage, "does not support thinking") {
		t.Errorf("think true: %v", err)
	}
}

// TestOllamaLogprobsEndToEnd: logprobs through the official client, on /api/chat and
// /api/generate, streamed and not: one per token, their bytes the reply's, the chosen token
// the most likely at temperature 0.
func TestOllamaLogprobsEndToEnd(t *testing.T) {
	_, srv := startServer(t, testConfig(t, testModel), true)
	base, _ := url.Parse(srv.URL)
	client := ollama.NewClient(base, srv.Client())
	opts := map[string]any{"temperature": 0, "num_predict": 16}
	for _, stream := range []bool{false, true} {
		r := ollamaChat(t, client, &ollama.ChatRequest{Model: modelID(testModel), Stream: &stream, Options: opts, Logprobs: true, TopLogprobs: 5,
			Messages: []ollama.Message{{Role: "user", Content: "Once upon a time, there was a little dog"}}})
		checkOllamaLogprobs(t, r.Logprobs, r.EvalCount, r.Message.Content)

		var lps []ollama.Logprob
		var text strings.Builder
		var count int
		err := client.Generate(context.Background(), &ollama.GenerateRequest{Model: modelID(testModel), Prompt: "Once upon a time", Raw: true,
			Stream: &stream, Options: opts, Logprobs: true, TopLogprobs: 5}, func(r ollama.GenerateResponse) error {
			lps = append(lps, r.Logprobs...)
			text.WriteString(r.Response)
			count = r.EvalCount
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		checkOllamaLogprobs(t, lps, count, text.String())
	}
}

func checkOllamaLogprobs(t *testing.T, lps []ollama.Logprob, tokens int, text string) {
	t.Helper()
	if len(lps) != tokens || tokens == 0 {
		t.Fatalf("%d logprobs for %d tokens", len(lps), tokens)
	}
	var joined []byte
	for _, lp := range lps {
		if len(lp.TopLogprobs) != 5 || lp.Logprob > 0 {
			t.Fatalf("token %+v", lp)
		}
		best := lp.TopLogprobs[0].Logprob
		for _, alt := range lp.TopLogprobs {
			if alt.Logprob > best {
				t.Errorf("top_logprobs not sorted: %+v", lp.TopLogprobs)
			}
		}
		if lp.Logprob < best-1e-6 {
			t.Errorf("chosen %q has logprob %g; the most likely %q has %g", lp.Token, lp.Logprob, lp.TopLogprobs[0].Token, best)
		}
		for _, b := range lp.Bytes {
			joined = append(joined, byte(b))
		}
	}
	// A character cut by the cap is U+FFFD in the text; its bytes are exact in the logprobs.
	if strings.ToValidUTF8(string(joined), "\uFFFD") != text {
		t.Errorf("logprob bytes %q, text %q", joined, text)
	}
}
