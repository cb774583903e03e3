package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
)

// fimServer serves a fake model with FIM markers (fim=true) or without, under server cfg.
func fimServer(t *testing.T, fim bool, reply string, cfg server.Config, adjust func(*enginetest.Engine)) (*httptest.Server, *enginetest.Engine, openai.Client) {
	t.Helper()
	st := servertest.Store(t)
	tmpl, _ := chat.Parse("")
	eng := enginetest.New(4096, reply)
	if adjust != nil {
		adjust(eng)
	}
	m := &core.Model{ID: "coder", Path: "/models/coder.gguf", Engine: eng, Template: tmpl, ContextLength: 4096}
	if fim {
		m.FIM = &core.FIMTokens{Prefix: 300, Suffix: 301, Middle: 302}
	}
	srv := httptest.NewServer(server.New(cfg, core.New(core.Config{}, st, m)))
	t.Cleanup(srv.Close)
	return srv, eng, openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("x"), option.WithMaxRetries(0))
}

func TestCompletionPlain(t *testing.T) {
	long := strings.Repeat("abcd", 50)
	_, eng, client := fimServer(t, false, long, server.Config{}, nil)
	res, err := client.Completions.New(context.Background(), openai.CompletionNewParams{
		Model: "coder", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("def add(a, b):")},
	})
	if err != nil {
		t.Fatal(err)
	}
	// No max_tokens and no --max-tokens: the spec's default of 128.
	if res.Object != "text_completion" || !strings.HasPrefix(res.ID, "cmpl-") || res.Choices[0].Text != long[:128] ||
		res.Choices[0].FinishReason != "length" || res.Usage.CompletionTokens != 128 || res.Usage.PromptTokens != 15 {
		t.Fatalf("reply %+v usage %+v", res.Choices, res.Usage)
	}
	if got := eng.Requests()[0]; got.Prompt != "def add(a, b):" || !got.AddSpecial || got.Tokens != nil {
		t.Fatalf("engine got %+v; want the raw prompt with BOS", got)
	}
	var extra struct {
		Superfluid struct {
			Cached   int    `json:"cached"`
			Expired  bool   `json:"expired"`
			ServedBy string `json:"served_by"`
		} `json:"superfluid"`
	}
	if err := json.Unmarshal([]byte(res.RawJSON()), &extra); err != nil || extra.Superfluid.ServedBy != "coder" {
		t.Fatalf("superfluid object %+v (%v)", extra, err)
	}

	echo, err := client.Completions.New(context.Background(), openai.CompletionNewParams{
		Model: "coder", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Hi ")},
		MaxTokens: openai.Int(4), Echo: openai.Bool(true),
	})
	if err != nil || echo.Choices[0].Text != "Hi abcd" {
		t.Fatalf("echo: %v %+v", err, echo)
	}
}

func TestCompletionFIM(t *testing.T) {
	cases := []struct {
		mode string
		want []int
	}{
		{"", []int{enginetest.BOS, 300, 'a' + 2, 301, 'z' + 2, 302}},
		{"psm", []int{enginetest.BOS, 300, 'a' + 2, 301, 'z' + 2, 302}},
		{"spm", []int{enginetest.BOS, 301, 'z' + 2, 300, 'a' + 2, 302}},
	}
	for _, c := range cases {
		_, eng, client := fimServer(t, true, "mid", server.Config{}, nil)
		opts := []option.RequestOption{}
		if c.mode != "" {
			opts = append(opts, option.WithJSONSet("fim_mode", c.mode))
		}
		res, err := client.Completions.New(context.Background(), openai.CompletionNewParams{
			Model: "coder", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("a")},
			Suffix: openai.String("z"), MaxTokens: openai.Int(8),
		}, opts...)
		if err != nil {
			t.Fatalf("mode %q: %v", c.mode, err)
		}
		if res.Choices[0].Text != "mid" || res.Choices[0].FinishReason != "stop" {
			t.Fatalf("mode %q: %+v", c.mode, res.Choices[0])
		}
		got := eng.Requests()[0].Tokens
		if !equalInts(got, c.want) {
			t.Fatalf("mode %q: engine tokens %v, want %v", c.mode, got, c.want)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCompletionBadInput(t *testing.T) {
	srvNoFIM, _, _ := fimServer(t, false, "x", server.Config{}, nil)
	srvFIM, _, _ := fimServer(t, true, "x", server.Config{}, nil)
	cases := []struct {
		name, url, body   string
		status            int
		param, code, kind string
	}{
		{"prompt array", srvFIM.URL, `{"model":"coder","prompt":["a","b"]}`, 400, "prompt", "", "invalid_request_error"},
		{"token ids", srvFIM.URL, `{"model":"coder","prompt":[1,2,3]}`, 400, "prompt", "", "invalid_request_error"},
		{"no prompt", srvFIM.URL, `{"model":"coder"}`, 400, "prompt", "", "invalid_request_error"},
		{"missing model", srvFIM.URL, `{"prompt":"a"}`, 400, "model", "", "invalid_request_error"},
		{"unknown model", srvFIM.URL, `{"model":"nope","prompt":"a"}`, 404, "model", "model_not_found", "invalid_request_error"},
		{"echo with suffix", srvFIM.URL, `{"model":"coder","prompt":"a","suffix":"b","echo":true}`, 400, "echo", "unsupported_parameter", "invalid_request_error"},
		{"logprobs with suffix", srvFIM.URL, `{"model":"coder","prompt":"a","suffix":"b","logprobs":2}`, 400, "logprobs", "unsupported_parameter", "invalid_request_error"},
		{"bad fim_mode", srvFIM.URL, `{"model":"coder","prompt":"a","suffix":"b","fim_mode":"xyz"}`, 400, "fim_mode", "", "invalid_request_error"},
		{"logprobs out of range", srvFIM.URL, `{"model":"coder","prompt":"a","logprobs":21}`, 400, "logprobs", "", "invalid_request_error"},
		{"model without FIM", srvNoFIM.URL, `{"model":"coder","prompt":"a","suffix":"b"}`, 400, "suffix", "fim_unsupported", "invalid_request_error"},
		{"max_tokens string", srvFIM.URL, `{"model":"coder","prompt":"a","max_tokens":"9"}`, 400, "max_tokens", "", "invalid_request_error"},
		{"temperature too high", srvFIM.URL, `{"model":"coder","prompt":"a","temperature":9}`, 400, "temperature", "", "invalid_request_error"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, e, _ := postJSON(t, c.url+"/v1/completions", c.body)
			if status != c.status || e.Type != c.kind || e.Param != c.param || e.Code != c.code || e.Message == "" {
				t.Fatalf("status %d error %+v; want %d param %q code %q", status, e, c.status, c.param, c.code)
			}
		})
	}
}

func postJSON(t *testing.T, url, body string) (int, apiError, http.Header) {
	t.Helper()
	res, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode == http.StatusOK {
		return res.StatusCode, apiError{}, res.Header
	}
	return res.StatusCode, parseError(t, b), res.Header
}

// TestCompletionRateLimit: FIM requests beyond the burst are refused per client with
// Retry-After; plain completions are not limited.
func TestCompletionRateLimit(t *testing.T) {
	srv, _, _ := fimServer(t, true, "x", server.Config{CompletionBurst: 2, CompletionRate: 0.01}, nil)
	fim := `{"model":"coder","prompt":"a","suffix":"b","max_tokens":1}`
	for i := range 2 {
		if status, e, _ := postJSON(t, srv.URL+"/v1/completions", fim); status != 200 {
			t.Fatalf("FIM request %d within the burst: %d %+v", i, status, e)
		}
	}
	status, e, h := postJSON(t, srv.URL+"/v1/completions", fim)
	if status != 429 || e.Code != "completion_rate_limited" || e.Type != "rate_limit_error" || h.Get("Retry-After") == "" {
		t.Fatalf("over the burst: %d %+v Retry-After %q", status, e, h.Get("Retry-After"))
	}
	if status, e, _ := postJSON(t, srv.URL+"/v1/completions", `{"model":"coder","prompt":"a","max_tokens":1}`); status != 200 {
		t.Fatalf("plain completion limited: %d %+v", status, e)
	}
}

// TestCompletionDeadline: --completion-deadline-ms cuts a slow FIM generation, reported as
// length with superfluid.expired.
func TestCompletionDeadline(t *testing.T) {
	_, _, client := fimServer(t, true, strings.Repeat("x", 500), server.Config{CompletionDeadline: 60 * time.Millisecond},
		func(e *enginetest.Engine) { e.TokenDelay = 10 * time.Millisecond })
	res, err := client.Completions.New(context.Background(), openai.CompletionNewParams{
		Model: "coder", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("a")},
		Suffix: openai.String("b"), MaxTokens: openai.Int(400),
	})
	if err != nil {
		t.Fatal(err)
	}
	var extra struct {
		Superfluid struct{ Expired bool } `json:"superfluid"`
	}
	_ = json.Unmarshal([]byte(res.RawJSON()), &extra)
	if !extra.Superfluid.Expired || res.Choices[0].FinishReason != "length" || res.Usage.CompletionTokens >= 400 {
		t.Fatalf("finish %q expired %v tokens %d", res.Choices[0].FinishReason, extra.Superfluid.Expired, res.Usage.CompletionTokens)
	}
}

func TestCompletionStreaming(t *testing.T) {
	_, _, client := fimServer(t, false, "once upon", server.Config{}, nil)
	stream := client.Completions.NewStreaming(context.Background(), openai.CompletionNewParams{
		Model: "coder", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("a")}, MaxTokens: openai.Int(20),
	})
	var text strings.Builder
	var last openai.Completion
	for stream.Next() {
		last = stream.Current()
		if last.Object != "text_completion" {
			t.Fatalf("chunk object %q", last.Object)
		}
		if len(last.Choices) > 0 {
			text.WriteString(last.Choices[0].Text)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != "once upon" || last.Choices[0].FinishReason != "stop" || last.Usage.CompletionTokens != 9 {
		t.Fatalf("text %q last %+v", text.String(), last)
	}
	var apiErr *openai.Error
	_, err := client.Completions.New(context.Background(), openai.CompletionNewParams{Model: "nope", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("a")}})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Fatalf("unknown model: %v", err)
	}
}

// TestResponseFormatReachesEngine: json_object and json_schema become the engine's output
// constraint.
func TestResponseFormatReachesEngine(t *testing.T) {
	srv, eng, _ := fimServer(t, false, "{}", server.Config{}, nil)
	for _, c := range []struct{ body, format, schema string }{
		{`{"type":"json_object"}`, "json", ""},
		{`{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object"}}}`, "schema", `{"type":"object"}`},
		{`{"type":"text"}`, "", ""},
	} {
		body := `{"model":"coder","messages":[{"role":"user","content":"hi"}],"response_format":` + c.body + `}`
		if status, e, _ := postJSON(t, srv.URL+"/v1/chat/completions", body); status != 200 {
			t.Fatalf("%s: %d %+v", c.body, status, e)
		}
		reqs := eng.Requests()
		got := reqs[len(reqs)-1]
		if got.Format != c.format || string(got.Schema) != c.schema {
			t.Fatalf("%s: engine format %q schema %s", c.body, got.Format, got.Schema)
		}
	}
}
