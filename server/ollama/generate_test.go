package ollama_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/types/model"
)

func TestGenerateClient(t *testing.T) {
	const story = "Once upon a time"
	tests := []struct {
		name    string
		req     api.GenerateRequest
		prompt  string // what the engine must see
		special bool   // whether the engine adds BOS
	}{
		{name: "templated", req: api.GenerateRequest{Prompt: userHello}, prompt: chatMLPrompt("user", userHello), special: true},
		{name: "templated with system", req: api.GenerateRequest{Prompt: userHello, System: "Be brief."},
			prompt: chatMLPrompt("system", "Be brief.", "user", userHello), special: true},
		{name: "raw", req: api.GenerateRequest{Prompt: story, Raw: true}, prompt: story, special: true},
		{name: "raw, not streaming", req: api.GenerateRequest{Prompt: story, Raw: true, Stream: ptr(false)}, prompt: story, special: true},
		{name: "old context is ignored", req: api.GenerateRequest{Prompt: userHello, Context: []int{1, 2, 3}}, prompt: chatMLPrompt("user", userHello), special: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := setup(t, config{cached: 3})
			req := tt.req
			req.Model = "fake"
			var chunks []api.GenerateResponse
			if err := f.client.Generate(t.Context(), &req, func(r api.GenerateResponse) error {
				chunks = append(chunks, r)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			streaming := req.Stream == nil || *req.Stream
			if streaming != (len(chunks) > 1) {
				t.Fatalf("streaming %v but %d replies", streaming, len(chunks))
			}
			var text strings.Builder
			for i, c := range chunks {
				text.WriteString(c.Response)
				if c.Done != (i == len(chunks)-1) || c.Model != "fake" || c.CreatedAt.IsZero() {
					t.Errorf("chunk %d: done %v model %q created_at %v", i, c.Done, c.Model, c.CreatedAt)
				}
			}
			if text.String() != defaultReply {
				t.Errorf("response = %q, want %q", text.String(), defaultReply)
			}
			last := chunks[len(chunks)-1]
			if last.DoneReason != "stop" || len(last.Context) != 0 {
				t.Errorf("done_reason %q context %v", last.DoneReason, last.Context)
			}
			checkMetrics(t, last.Metrics, len(tt.prompt)+1, 3, len(defaultReply))
			r := f.lastRequest(t)
			if r.Prompt != tt.prompt || r.AddSpecial != tt.special {
				t.Errorf("engine prompt %q add_special %v, want %q %v", r.Prompt, r.AddSpecial, tt.prompt, tt.special)
			}
		})
	}
}

// Generate takes the same options and format as chat.
func TestGenerateOptions(t *testing.T) {
	f := setup(t, config{})
	var got api.GenerateResponse
	err := f.client.Generate(t.Context(), &api.GenerateRequest{
		Model: "fake", Prompt: "x", Raw: true, Stream: ptr(false), Format: []byte(`"json"`),
		Options: map[string]any{"num_predict": 3, "temperature": 0},
	}, func(r api.GenerateResponse) error {
		got = r
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.Response != "Hel" || got.DoneReason != "length" || got.EvalCount != 3 {
		t.Errorf("reply %+v", got)
	}
	r := f.lastRequest(t)
	if r.Format != "json" || r.MaxTokens != 3 || r.Sampling.Temperature == nil || *r.Sampling.Temperature != 0 {
		t.Errorf("engine request %+v", r)
	}
}

// A prompt longer than the window is a 400 before any line is sent.
func TestContextLength(t *testing.T) {
	f := setup(t, config{})
	resp, b := f.do(t, http.MethodPost, "/api/generate", `{"model":"fake","raw":true,"prompt":"`+strings.Repeat("a", 5000)+`"}`)
	checkError(t, resp, b, http.StatusBadRequest, "the context window is 4096 tokens")
}

// Every Ollama request is recorded under its route, streamed or not.
func TestRecords(t *testing.T) {
	f := setup(t, config{})
	f.do(t, http.MethodPost, "/api/chat", `{"model":"fake:latest","messages":[{"role":"user","content":"hi"}]}`)
	f.do(t, http.MethodPost, "/api/generate", `{"model":"fake","prompt":"hi","stream":false}`)
	if err := f.st.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	recs, err := f.st.RecentRequests(t.Context(), 10)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, r := range recs {
		if !strings.HasPrefix(r.ID, "ollama-") || r.Model != "fake" || r.Status != 200 || r.CompletionTokens != len(defaultReply) {
			t.Errorf("record %+v", r)
		}
		got[r.Endpoint] = r.Stream
	}
	if len(got) != 2 || !got["/api/chat"] || got["/api/generate"] {
		t.Errorf("records by endpoint (streamed?): %v", got)
	}
}

// suffix is fill-in-the-middle on a model with FIM markers: the engine gets BOS, the prefix
// marker and the prompt's tokens, the suffix marker and the suffix's, then the middle marker.
func TestGenerateInsert(t *testing.T) {
	f := setup(t, config{fim: true})
	var got strings.Builder
	err := f.client.Generate(t.Context(), &api.GenerateRequest{Model: "fake", Prompt: "ab", Suffix: "c"}, func(r api.GenerateResponse) error {
		got.WriteString(r.Response)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != defaultReply {
		t.Errorf("response %q", got.String())
	}
	want := []int{1, fimPrefix, 'a' + 2, 'b' + 2, fimPrefix + 1, 'c' + 2, fimPrefix + 2}
	if r := f.lastRequest(t); !slices.Equal(r.Tokens, want) {
		t.Errorf("engine tokens %v, want %v", r.Tokens, want)
	}
	show, err := f.client.Show(t.Context(), &api.ShowRequest{Model: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(show.Capabilities, []model.Capability{"completion", "tools", "insert"}) {
		t.Errorf("capabilities %v", show.Capabilities)
	}
	resp, b := f.do(t, http.MethodPost, "/api/generate", `{"model":"fake","prompt":"ab","suffix":"c","system":"x"}`)
	checkError(t, resp, b, http.StatusBadRequest, "system does not apply to insert")
}
