package ollama_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
)

const userHello = "Say hello."

// chatMLPrompt is what chatML renders for msgs (role, content pairs) with the generation prompt.
func chatMLPrompt(msgs ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(msgs); i += 2 {
		b.WriteString("<|im_start|>" + msgs[i] + "\n" + msgs[i+1] + "<|im_end|>\n")
	}
	return b.String() + "<|im_start|>assistant\n"
}

// checkMetrics asserts the final counts and timings: eval_count is the fake's tokens and
// prompt_eval_count leaves out the cached part of the prompt.
func checkMetrics(t *testing.T, m api.Metrics, prompt, cached, completion int) {
	t.Helper()
	if m.EvalCount != completion {
		t.Errorf("eval_count = %d, want %d", m.EvalCount, completion)
	}
	if m.PromptEvalCount != prompt-cached {
		t.Errorf("prompt_eval_count = %d, want %d (prompt %d minus cached %d)", m.PromptEvalCount, prompt-cached, prompt, cached)
	}
	if m.PromptEvalDuration != prefill || m.EvalDuration != decode {
		t.Errorf("prompt_eval_duration %v eval_duration %v, want %v and %v", m.PromptEvalDuration, m.EvalDuration, prefill, decode)
	}
	if m.TotalDuration <= 0 || m.LoadDuration <= 0 || m.LoadDuration > m.TotalDuration {
		t.Errorf("total_duration %v load_duration %v: want both positive, load within total", m.TotalDuration, m.LoadDuration)
	}
}

func TestChatClient(t *testing.T) {
	const reply = "Hello world! How are you?"
	prompt := len(chatMLPrompt("user", userHello)) + 1 // one token per byte plus BOS
	tests := []struct {
		name       string
		model      string
		stream     *bool
		options    map[string]any
		cached     int
		content    string
		reason     string
		completion int
	}{
		{name: "streaming", content: reply, reason: "stop", completion: len(reply)},
		{name: "not streaming", stream: ptr(false), content: reply, reason: "stop", completion: len(reply)},
		{name: "name with :latest", model: "fake:latest", content: reply, reason: "stop", completion: len(reply)},
		{name: "warm prompt", cached: 20, content: reply, reason: "stop", completion: len(reply)},
		{name: "num_predict cut", options: map[string]any{"num_predict": 5}, content: "Hello", reason: "length", completion: 5},
		{name: "num_predict cut, not streaming", stream: ptr(false), options: map[string]any{"num_predict": 5},
			content: "Hello", reason: "length", completion: 5},
		{name: "num_predict -1 is no cap", options: map[string]any{"num_predict": -1}, content: reply, reason: "stop", completion: len(reply)},
		{name: "stop", options: map[string]any{"stop": []string{"world"}}, content: "Hello ", reason: "stop", completion: len("Hello world")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := setup(t, config{reply: reply, cached: tt.cached})
			model := tt.model
			if model == "" {
				model = "fake"
			}
			var chunks []api.ChatResponse
			err := f.client.Chat(t.Context(), &api.ChatRequest{
				Model: model, Messages: []api.Message{{Role: "user", Content: userHello}}, Stream: tt.stream, Options: tt.options,
			}, func(r api.ChatResponse) error {
				chunks = append(chunks, r)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			streaming := tt.stream == nil || *tt.stream
			if want := 1; !streaming && len(chunks) != want {
				t.Fatalf("got %d replies without streaming, want 1", len(chunks))
			}
			if streaming && len(chunks) < 3 {
				t.Fatalf("got %d stream lines, want one per piece of text plus the last", len(chunks))
			}
			var text strings.Builder
			for i, c := range chunks {
				text.WriteString(c.Message.Content)
				if c.Model != model || c.Message.Role != "assistant" || c.CreatedAt.IsZero() {
					t.Errorf("chunk %d: model %q role %q created_at %v", i, c.Model, c.Message.Role, c.CreatedAt)
				}
				if last := i == len(chunks)-1; c.Done != last {
					t.Errorf("chunk %d of %d: done = %v", i, len(chunks), c.Done)
				}
			}
			if text.String() != tt.content {
				t.Errorf("content = %q, want %q", text.String(), tt.content)
			}
			last := chunks[len(chunks)-1]
			if last.DoneReason != tt.reason {
				t.Errorf("done_reason = %q, want %q", last.DoneReason, tt.reason)
			}
			if streaming && last.Message.Content != "" {
				t.Errorf("the last stream line carries content %q; Ollama's carries none", last.Message.Content)
			}
			checkMetrics(t, last.Metrics, prompt, tt.cached, tt.completion)
			if got := f.lastRequest(t).Prompt; got != chatMLPrompt("user", userHello) {
				t.Errorf("prompt = %q", got)
			}
		})
	}
}

func TestChatConversation(t *testing.T) {
	f := setup(t, config{})
	msgs := []api.Message{
		{Role: "system", Content: "Be brief."},
		{Role: "User", Content: "Hi"}, // Ollama lower-cases roles
		{Role: "assistant", Content: "Hello.", Thinking: "dropped"},
		{Role: "user", Content: userHello},
	}
	var got api.ChatResponse
	if err := f.client.Chat(t.Context(), &api.ChatRequest{Model: "fake", Messages: msgs, Stream: ptr(false)}, func(r api.ChatResponse) error {
		got = r
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got.Message.Content != defaultReply {
		t.Errorf("content = %q", got.Message.Content)
	}
	want := chatMLPrompt("system", "Be brief.", "user", "Hi", "assistant", "Hello.", "user", userHello)
	if p := f.lastRequest(t).Prompt; p != want {
		t.Errorf("prompt = %q, want %q", p, want)
	}
}

// Sampling options, format and the fields accepted without effect reach (or do not disturb)
// the engine request.
func TestChatOptions(t *testing.T) {
	schema := `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`
	tests := []struct {
		name  string
		body  string
		check func(t *testing.T, r llm.Request)
	}{
		{"sampling", `"options":{"temperature":0.2,"top_p":0.5,"top_k":7,"min_p":0.1,"seed":42,"repeat_penalty":1.2,"presence_penalty":0.5,"frequency_penalty":-0.5,"stop":["x","y"],"num_predict":100}`,
			func(t *testing.T, r llm.Request) {
				s := r.Sampling
				if *s.Temperature != 0.2 || *s.TopP != 0.5 || *s.TopK != 7 || *s.MinP != 0.1 || s.Seed != 42 || *s.RepeatPenalty != 1.2 ||
					s.PresencePenalty != 0.5 || s.FrequencyPenalty != -0.5 || strings.Join(r.Stop, ",") != "x,y" || r.MaxTokens != 100 {
					t.Errorf("request %+v sampling %+v", r, s)
				}
			}},
		{"defaults", ``, func(t *testing.T, r llm.Request) {
			s := r.Sampling
			if s.Temperature != nil || s.TopP != nil || s.TopK != nil || s.Seed != 0 || r.MaxTokens != 0 || r.Format != "" || r.IgnoreEOS {
				t.Errorf("request %+v", r)
			}
		}},
		{"ignore_eos (an extension)", `"options":{"ignore_eos":true,"num_predict":9}`, func(t *testing.T, r llm.Request) {
			if !r.IgnoreEOS || r.MaxTokens != 9 {
				t.Errorf("ignore_eos %v, max tokens %d", r.IgnoreEOS, r.MaxTokens)
			}
		}},
		{"seed -1 is a fresh seed", `"options":{"seed":-1}`, func(t *testing.T, r llm.Request) {
			if r.Sampling.Seed != 0 {
				t.Errorf("seed = %d", r.Sampling.Seed)
			}
		}},
		{"runner and unknown options accepted", `"options":{"num_ctx":8192,"num_gpu":99,"num_thread":4,"use_mmap":true,"mirostat":2,"temperature":null}`,
			func(t *testing.T, r llm.Request) {
				if r.Sampling.Temperature != nil {
					t.Errorf("temperature %v", *r.Sampling.Temperature)
				}
			}},
		{"format json", `"format":"json"`, func(t *testing.T, r llm.Request) {
			if r.Format != llm.FormatJSON || r.Schema != nil {
				t.Errorf("format %q schema %s", r.Format, r.Schema)
			}
		}},
		{"format schema", `"format":` + schema, func(t *testing.T, r llm.Request) {
			if r.Format != llm.FormatSchema || string(r.Schema) != schema {
				t.Errorf("format %q schema %s", r.Format, r.Schema)
			}
		}},
		{"format empty", `"format":""`, func(t *testing.T, r llm.Request) {
			if r.Format != "" {
				t.Errorf("format %q", r.Format)
			}
		}},
		{"keep_alive, think false, truncate, context-free extras", `"keep_alive":"10m","think":false,"truncate":true,"shift":false,"tools":[]`,
			func(t *testing.T, r llm.Request) {}},
		{"keep_alive seconds", `"keep_alive":-1`, func(t *testing.T, r llm.Request) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := setup(t, config{})
			body := `{"model":"fake","stream":false,"messages":[{"role":"user","content":"hi"}]`
			if tt.body != "" {
				body += "," + tt.body
			}
			resp, b := f.do(t, http.MethodPost, "/api/chat", body+"}")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			tt.check(t, f.lastRequest(t))
		})
	}
}

// Streaming is the default: an Ollama request without "stream" gets NDJSON lines.
func TestStreamByDefault(t *testing.T) {
	f := setup(t, config{})
	for _, tt := range []struct{ path, body, field string }{
		{"/api/chat", `{"model":"fake","messages":[{"role":"user","content":"hi"}]}`, "message"},
		{"/api/generate", `{"model":"fake","prompt":"hi"}`, "response"},
		{"/api/generate", `{"model":"fake","prompt":"hi","raw":true}`, "response"},
	} {
		resp, b := f.do(t, http.MethodPost, tt.path, tt.body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d: %s", tt.path, resp.StatusCode, b)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
			t.Errorf("%s: Content-Type = %q, want application/x-ndjson", tt.path, ct)
		}
		ls := lines(t, b)
		if len(ls) < 2 {
			t.Fatalf("%s: %d lines, want several: %s", tt.path, len(ls), b)
		}
		for i, l := range ls {
			if _, ok := l[tt.field]; !ok || l["model"] != "fake" || l["created_at"] == nil {
				t.Errorf("%s line %d lacks %s, model or created_at: %v", tt.path, i, tt.field, l)
			}
			if done := l["done"] == true; done != (i == len(ls)-1) {
				t.Errorf("%s line %d: done = %v", tt.path, i, l["done"])
			}
		}
		last := ls[len(ls)-1]
		if last["done_reason"] != "stop" || last["eval_count"] != float64(len(defaultReply)) {
			t.Errorf("%s: last line %v", tt.path, last)
		}
		if _, ok := last["context"]; ok {
			t.Errorf("%s: the reply carries a context", tt.path)
		}
	}
	// "stream": false is one JSON object.
	resp, b := f.do(t, http.MethodPost, "/api/chat", `{"model":"fake","stream":false,"messages":[{"role":"user","content":"hi"}]}`)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") || strings.Count(string(b), "\n") > 1 {
		t.Errorf("stream false: Content-Type %q body %s", ct, b)
	}
}

// An engine failure before the first line is a 500; after it, the stream ends with an error line.
func TestStreamErrors(t *testing.T) {
	boom := errors.New("engine or worker failure: the worker exited")
	t.Run("before the first line", func(t *testing.T) {
		f := setup(t, config{fake: func(e *enginetest.Engine) { e.Fail, e.FailAfter = boom, 0 }})
		resp, b := f.do(t, http.MethodPost, "/api/chat", `{"model":"fake","messages":[{"role":"user","content":"hi"}]}`)
		checkError(t, resp, b, http.StatusInternalServerError, "the worker exited")
		err := f.client.Chat(t.Context(), &api.ChatRequest{Model: "fake", Messages: []api.Message{{Role: "user", Content: "hi"}}},
			func(api.ChatResponse) error { return nil })
		var se api.StatusError
		if !errors.As(err, &se) || se.StatusCode != 500 || !strings.Contains(se.ErrorMessage, "the worker exited") {
			t.Errorf("client error = %#v", err)
		}
	})
	t.Run("mid-stream", func(t *testing.T) {
		f := setup(t, config{fake: func(e *enginetest.Engine) { e.Fail, e.FailAfter = boom, 4 }})
		resp, b := f.do(t, http.MethodPost, "/api/generate", `{"model":"fake","prompt":"hi"}`)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		ls := lines(t, b)
		last := ls[len(ls)-1]
		if len(last) != 1 || !strings.Contains(last["error"].(string), "the worker exited") {
			t.Errorf("last line = %v, want only an error", last)
		}
		var got strings.Builder
		err := f.client.Generate(t.Context(), &api.GenerateRequest{Model: "fake", Prompt: "hi"}, func(r api.GenerateResponse) error {
			got.WriteString(r.Response)
			return nil
		})
		if err == nil || !strings.Contains(err.Error(), "the worker exited") || got.String() != "Hell" {
			t.Errorf("client: err %v after %q", err, got.String())
		}
	})
}

// Empty generate and chat requests load the model, as Ollama's clients use them to.
func TestLoad(t *testing.T) {
	f := setup(t, config{})
	ps, err := f.client.ListRunning(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(ps.Models) != 0 {
		t.Fatalf("ps before any request: %+v", ps.Models)
	}
	var gen []api.GenerateResponse
	if err := f.client.Generate(t.Context(), &api.GenerateRequest{Model: "fake"}, func(r api.GenerateResponse) error {
		gen = append(gen, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(gen) != 1 || !gen[0].Done || gen[0].DoneReason != "load" || gen[0].Response != "" || gen[0].Model != "fake" || gen[0].CreatedAt.IsZero() {
		t.Errorf("empty generate: %+v", gen)
	}
	var ch []api.ChatResponse
	if err := f.client.Chat(t.Context(), &api.ChatRequest{Model: "fake:latest", KeepAlive: &api.Duration{Duration: time.Minute}}, func(r api.ChatResponse) error {
		ch = append(ch, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(ch) != 1 || !ch[0].Done || ch[0].DoneReason != "load" || ch[0].Message.Role != "assistant" || ch[0].Model != "fake:latest" {
		t.Errorf("empty chat: %+v", ch)
	}
	if n := len(f.eng.Requests()); n != 0 {
		t.Errorf("loading ran %d generations", n)
	}
	ps, err = f.client.ListRunning(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(ps.Models) != 1 || ps.Models[0].Name != "fake:latest" || ps.Models[0].ContextLength != 4096 ||
		ps.Models[0].ExpiresAt.Before(time.Now().AddDate(100, 0, 0)) || ps.Models[0].Details.Format != "gguf" {
		t.Errorf("ps after loading: %+v", ps.Models)
	}
}
