package forward

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
)

// sse writes one event per chunk, flushed.
func sse(w http.ResponseWriter, chunks ...string) {
	for _, c := range chunks {
		fmt.Fprintf(w, "data: %s\n\n", c)
		w.(http.Flusher).Flush()
	}
}

func sseHeader(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
}

// upstream is a fake OpenAI server: handle answers the POSTs, /v1/models lists served.
func upstream(t *testing.T, handle http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"other","max_model_len":99},{"id":"served","max_model_len":32768}]}`)
			return
		}
		// Read the body whole, so the server watches the connection and a client that hangs
		// up ends r's context.
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		handle(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func newEngine(t *testing.T, url string, idle time.Duration) *Engine {
	t.Helper()
	e, err := New(context.Background(), Config{URL: url, Key: "up-key", Model: "served", IdleTimeout: idle, HeaderTimeout: idle, Instance: "sf-self"})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func ptr[T any](v T) *T { return &v }

// collect runs chat and returns its events.
func collect(t *testing.T, e *Engine, ctx context.Context, req *core.ChatRequest) ([]llm.Event, error) {
	t.Helper()
	var evs []llm.Event
	err := e.Chat(ctx, req, func(ev llm.Event) error { evs = append(evs, ev); return nil })
	return evs, err
}

// TestChatWireAndRelay: the typed request reaches the upstream as OpenAI JSON under the served
// name, always streamed with usage; reasoning, content and tool-call deltas come back as
// events, then one Done with the finish reason and usage.
func TestChatWireAndRelay(t *testing.T) {
	var got map[string]any
	var auth, via string
	srv := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		auth, via = r.Header.Get("Authorization"), r.Header.Get(ViaHeader)
		if r.URL.Path != "/v1/chat/completions" {
			t.Errorf("path %s", r.URL.Path)
		}
		_ = json.NewDecoder(r.Body).Decode(&got)
		sseHeader(w)
		sse(w,
			`{"choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"hmm"}}]}`,
			`{"choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":{"content":[{"token":"Hi","logprob":-0.5,"bytes":[72,105],"top_logprobs":[{"token":"Hi","logprob":-0.5}]}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"weather","arguments":""}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","function":{"arguments":"{\"city\":\"Oslo\"}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
			`{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":4}}}`,
			`[DONE]`)
	})
	e := newEngine(t, srv.URL, 0)
	if e.Info().ContextLength != 32768 {
		t.Errorf("window %d, want the upstream's max_model_len 32768", e.Info().ContextLength)
	}
	req := &core.ChatRequest{Model: "whatever-the-client-said",
		Messages: []chat.Message{
			{Role: "system", Content: "Be brief."},
			{Role: "user", Content: "Weather?"},
			{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: "call_0", Name: "weather", Arguments: json.RawMessage(`{"city":"Bergen"}`)}}},
			{Role: "tool", ToolCallID: "call_0", Content: "rain"},
		},
		Tools:             []chat.Tool{{Name: "weather", Description: "forecast", Parameters: json.RawMessage(`{"type":"object"}`)}},
		ToolChoice:        core.ToolChoice{Mode: core.ToolFunction, Name: "weather"},
		ParallelToolCalls: ptr(false),
		Generation: llm.Request{MaxTokens: 64, Stop: []string{"END"}, Format: llm.FormatSchema, Schema: json.RawMessage(`{"type":"object"}`),
			Logprobs: true, TopLogprobs: 2, Sampling: llm.Sampling{Temperature: ptr(0.25), TopP: ptr(0.9), Seed: 7}},
	}
	evs, err := collect(t, e, context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"model": "served", "stream": true, "stream_options": map[string]any{"include_usage": true},
		"max_tokens": 64.0, "stop": []any{"END"}, "temperature": 0.25, "top_p": 0.9, "seed": 7.0, "logprobs": true, "top_logprobs": 2.0,
		"parallel_tool_calls": false,
		"tool_choice":         map[string]any{"type": "function", "function": map[string]any{"name": "weather"}},
		"response_format":     map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "response", "schema": map[string]any{"type": "object"}}},
		"tools":               []any{map[string]any{"type": "function", "function": map[string]any{"name": "weather", "description": "forecast", "parameters": map[string]any{"type": "object"}}}},
		"messages": []any{
			map[string]any{"role": "system", "content": "Be brief."},
			map[string]any{"role": "user", "content": "Weather?"},
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "call_0", "type": "function", "function": map[string]any{"name": "weather", "arguments": `{"city":"Bergen"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": "call_0", "content": "rain"},
		}}
	for k, v := range want {
		if a, b := jsonOf(got[k]), jsonOf(v); a != b {
			t.Errorf("upstream got %s = %s, want %s", k, a, b)
		}
	}
	if auth != "Bearer up-key" || via != "sf-self" {
		t.Errorf("Authorization %q, Via %q", auth, via)
	}
	wantEvs := []llm.Event{
		{Reasoning: "hmm", Tokens: 1},
		{Text: "Hi", Tokens: 1, Logprobs: []llm.TokenLogprob{{Token: "Hi", Bytes: []byte("Hi"), Logprob: -0.5, Top: []llm.TopLogprob{{Token: "Hi", Bytes: []byte("Hi"), Logprob: -0.5}}}}},
		{ToolCalls: []llm.ToolCallDelta{{Index: 0, ID: "call_1", Name: "weather"}}, Tokens: 1},
		{ToolCalls: []llm.ToolCallDelta{{Index: 0, Arguments: `{"city":"Oslo"}`}}, Tokens: 1},
		{Done: &llm.Done{FinishReason: llm.FinishToolCalls, Usage: llm.Usage{PromptTokens: 12, CompletionTokens: 5, CachedTokens: 4}}},
	}
	if a, b := jsonOf(evs), jsonOf(wantEvs); a != b {
		t.Errorf("events\n%s\nwant\n%s", a, b)
	}
}

func jsonOf(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestRelayAsTheyArrive: an event is emitted while the upstream still holds the rest back.
func TestRelayAsTheyArrive(t *testing.T) {
	release := make(chan struct{})
	srv := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		sse(w, `{"choices":[{"index":0,"delta":{"content":"first"}}]}`)
		select {
		case <-release:
		case <-time.After(5 * time.Second):
		}
		sse(w, `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`, `[DONE]`)
	})
	e := newEngine(t, srv.URL, 0)
	start := time.Now()
	err := e.Chat(context.Background(), &core.ChatRequest{}, func(ev llm.Event) error {
		if ev.Text == "first" {
			if time.Since(start) > 3*time.Second {
				t.Error("the first delta waited for the rest")
			}
			close(release)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFaults: each upstream fault is a 502 upstream_error; an upstream 4xx is passed on.
func TestFaults(t *testing.T) {
	refused := func() string { // a port nobody listens on
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return "http://" + addr
	}()
	tests := []struct {
		name    string
		handle  http.HandlerFunc
		url     string
		relayed int // events before the fault
		status  int
		code    string
		message string
	}{
		{name: "connection refused", url: refused, status: 502, code: "upstream_error", message: "did not answer"},
		{name: "upstream 500", handle: func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"error":{"message":"CUDA out of memory"}}`, 500)
		}, status: 502, code: "upstream_error", message: "CUDA out of memory"},
		{name: "upstream 400 passed on", handle: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			fmt.Fprint(w, `{"error":{"message":"max_tokens is too large","type":"invalid_request_error","code":"bad_max"}}`)
		}, status: 400, code: "bad_max", message: "max_tokens is too large"},
		{name: "upstream 401 is the upstream key's", handle: func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"error":{"message":"invalid api key"}}`, 401)
		}, status: 502, code: "upstream_error", message: "refused the upstream key"},
		{name: "stall mid-stream", handle: func(w http.ResponseWriter, r *http.Request) {
			sseHeader(w)
			sse(w, `{"choices":[{"index":0,"delta":{"content":"a"}}]}`)
			<-r.Context().Done()
		}, relayed: 1, status: 502, code: "upstream_error", message: "stalled"},
		{name: "stall before headers", handle: func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		}, status: 502, code: "upstream_error", message: "stalled"},
		{name: "malformed SSE", handle: func(w http.ResponseWriter, r *http.Request) {
			sseHeader(w)
			sse(w, `{"choices":[{"index":0,"delta":{"content":"a"}}]}`, `{"choices":[{"index":0,"delta":`)
		}, relayed: 1, status: 502, code: "upstream_error", message: "malformed chunk"},
		{name: "not an event stream", handle: func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"choices":[]}`)
		}, status: 502, code: "upstream_error", message: "not an event stream"},
		{name: "close mid-event", handle: func(w http.ResponseWriter, r *http.Request) {
			sseHeader(w)
			sse(w, `{"choices":[{"index":0,"delta":{"content":"a"}}]}`)
			fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"content":"b"`)
			w.(http.Flusher).Flush()
			conn, _, _ := http.NewResponseController(w).Hijack()
			conn.Close()
		}, relayed: 1, status: 502, code: "upstream_error", message: "closed the stream"},
		{name: "error event mid-stream", handle: func(w http.ResponseWriter, r *http.Request) {
			sseHeader(w)
			sse(w, `{"error":{"message":"engine died"}}`)
		}, status: 502, code: "upstream_error", message: "engine died"},
		{name: "no finish before DONE", handle: func(w http.ResponseWriter, r *http.Request) {
			sseHeader(w)
			sse(w, `[DONE]`)
		}, status: 502, code: "upstream_error", message: "without a finish reason"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := tt.url
			if tt.handle != nil {
				url = upstream(t, tt.handle).URL
			}
			e := newEngine(t, url, 300*time.Millisecond)
			evs, err := collect(t, e, context.Background(), &core.ChatRequest{})
			var se *llm.StatusError
			if !errors.As(err, &se) {
				t.Fatalf("error %v (%T), want a StatusError", err, err)
			}
			if se.Status != tt.status || se.Code != tt.code || !strings.Contains(se.Message, tt.message) {
				t.Errorf("got %d %s %q, want %d %s containing %q", se.Status, se.Code, se.Message, tt.status, tt.code, tt.message)
			}
			if len(evs) != tt.relayed {
				t.Errorf("%d events relayed before the fault, want %d", len(evs), tt.relayed)
			}
		})
	}
}

// TestClientGoneCancelsUpstream: a client that stops reading (emit fails) or whose context
// ends cancels the upstream request.
func TestClientGoneCancelsUpstream(t *testing.T) {
	for _, how := range []string{"emit fails", "context ends"} {
		t.Run(how, func(t *testing.T) {
			ended := make(chan struct{})
			srv := upstream(t, func(w http.ResponseWriter, r *http.Request) {
				sseHeader(w)
				sse(w, `{"choices":[{"index":0,"delta":{"content":"a"}}]}`)
				select {
				case <-r.Context().Done():
					close(ended)
				case <-time.After(10 * time.Second):
				}
			})
			e := newEngine(t, srv.URL, 0)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			gone := errors.New("client gone")
			err := e.Chat(ctx, &core.ChatRequest{}, func(ev llm.Event) error {
				if how == "emit fails" {
					return gone
				}
				cancel()
				return nil
			})
			if err == nil {
				t.Fatal("no error")
			}
			select {
			case <-ended:
			case <-time.After(5 * time.Second):
				t.Fatal("the upstream request was not cancelled")
			}
		})
	}
}

// TestCompleteAndEmbed: completions stream like chat; embeddings come back in input order
// with the upstream's token count.
func TestCompleteAndEmbed(t *testing.T) {
	var completion, embed map[string]any
	srv := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/completions":
			_ = json.NewDecoder(r.Body).Decode(&completion)
			sseHeader(w)
			sse(w, `{"choices":[{"index":0,"text":"lo"}]}`, `{"choices":[{"index":0,"text":"","finish_reason":"length"}]}`,
				`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}`, `[DONE]`)
		case "/v1/embeddings":
			_ = json.NewDecoder(r.Body).Decode(&embed)
			fmt.Fprint(w, `{"data":[{"index":1,"embedding":[0.5,1]},{"index":0,"embedding":[1,2]}],"usage":{"prompt_tokens":5}}`)
		}
	})
	e := newEngine(t, srv.URL, 0)
	var evs []llm.Event
	err := e.Complete(context.Background(), &core.CompletionRequest{Generation: llm.Request{Prompt: "hel", MaxTokens: 1}},
		func(ev llm.Event) error { evs = append(evs, ev); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if jsonOf(evs) != jsonOf([]llm.Event{{Text: "lo", Tokens: 1}, {Done: &llm.Done{FinishReason: "length", Usage: llm.Usage{PromptTokens: 3, CompletionTokens: 1}}}}) {
		t.Errorf("events %s", jsonOf(evs))
	}
	// An upstream that sends no usage: the relayed chunks count the completion.
	noUsage := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		sse(w, `{"choices":[{"index":0,"text":"a"}]}`, `{"choices":[{"index":0,"text":"b","finish_reason":"stop"}]}`, `[DONE]`)
	})
	var done *llm.Done
	err = newEngine(t, noUsage.URL, 0).Complete(context.Background(), &core.CompletionRequest{}, func(ev llm.Event) error {
		if ev.Done != nil {
			done = ev.Done
		}
		return nil
	})
	if err != nil || done == nil || done.Usage.CompletionTokens != 2 || done.FinishReason != "stop" {
		t.Errorf("without usage: %v %+v", err, done)
	}
	if completion["prompt"] != "hel" || completion["model"] != "served" || completion["stream"] != true {
		t.Errorf("completion request %v", completion)
	}
	r, err := e.Embed(context.Background(), &core.EmbedRequest{Inputs: []llm.EmbedInput{{Text: "a b"}, {Text: "c"}}})
	if err != nil {
		t.Fatal(err)
	}
	if jsonOf(r) != `{"vectors":[[1,2],[0.5,1]],"tokens":[2,3]}` {
		t.Errorf("embed result %s", jsonOf(r))
	}
	if jsonOf(embed["input"]) != `["a b","c"]` || embed["model"] != "served" {
		t.Errorf("embed request %v", embed)
	}
	if _, err := e.Embed(context.Background(), &core.EmbedRequest{Inputs: []llm.EmbedInput{{Text: "q", Pair: "d"}}}); !errors.Is(err, llm.ErrInvalidInput) {
		t.Errorf("a rerank: %v", err)
	}
}

// TestNew: the window falls back to the configured one when the upstream is down or does not
// say; an upstream that answers as this server is refused; Tokenize refuses cleanly.
func TestNew(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	e, err := New(context.Background(), Config{URL: down.URL + "/v1/", Model: "m", ContextLength: 1234})
	if err != nil {
		t.Fatal(err)
	}
	if e.Info().ContextLength != 1234 || e.base != down.URL+"/v1" {
		t.Errorf("window %d, base %s", e.Info().ContextLength, e.base)
	}
	if _, err := New(context.Background(), Config{URL: down.URL, Model: "m", MustAnswer: true}); err == nil {
		t.Error("MustAnswer took an upstream that is down")
	}
	if _, err := e.Model().Tokenize(context.Background(), "x", true, true); !errors.Is(err, llm.ErrInvalidInput) {
		t.Errorf("tokenize: %v", err)
	}
	self := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(InstanceHeader, "sf-me")
		w.WriteHeader(401)
	}))
	defer self.Close()
	if _, err := New(context.Background(), Config{URL: self.URL, Model: "m", Instance: "sf-me"}); !errors.Is(err, ErrSelf) {
		t.Errorf("an upstream that is this server: %v", err)
	}
	if _, err := New(context.Background(), Config{URL: "ftp://x", Model: "m"}); err == nil {
		t.Error("a URL that is not http was taken")
	}
	m, err := NewModel(context.Background(), "fwd", Config{URL: down.URL, Model: "m"})
	if err != nil || m.Requests == nil || m.Engine == nil || m.Engine.Info().Parallel != DefaultParallel {
		t.Errorf("NewModel: %v %+v", err, m)
	}
}
