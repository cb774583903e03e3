package openai_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	openai "github.com/openai/openai-go/v3"

	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/server/store"
)

// getJSON fetches path and decodes a 200 JSON reply into v.
func getJSON(t *testing.T, f *fixture, method, path, body string, v any) {
	t.Helper()
	resp, b := f.do(t, method, path, body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s %s: %v: %s", method, path, err, b)
	}
}

type modelJSON struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	OwnedBy string `json:"owned_by"`
	Loaded  bool   `json:"loaded"`
	Meta    struct {
		NCtx int    `json:"n_ctx"`
		Path string `json:"path"`
	} `json:"meta"`
	Architecture struct {
		InputModalities []string `json:"input_modalities"`
	} `json:"architecture"`
	Runtime      string         `json:"runtime"`
	Capabilities map[string]any `json:"capabilities"`
}

func checkModel(t *testing.T, m modelJSON, ctx int) {
	t.Helper()
	if m.ID != "fake" || m.Object != "model" || m.OwnedBy == "" || !m.Loaded || m.Meta.NCtx != ctx || m.Meta.Path != "/models/fake.gguf" ||
		!slices.Equal(m.Architecture.InputModalities, []string{"text"}) || m.Runtime == "" {
		t.Errorf("model entry %+v", m)
	}
	if m.Capabilities["chat"] != true {
		t.Errorf("capabilities %v", m.Capabilities)
	}
	dialect, ok := m.Capabilities["dialect"].(map[string]any)
	if !ok {
		t.Fatalf("capabilities without a dialect object: %v", m.Capabilities)
	}
	for _, k := range []string{"enable_thinking", "reasoning_effort", "reasoning_effort_levels", "fim", "fim_model"} {
		if _, ok := dialect[k]; !ok {
			t.Errorf("capabilities.dialect lacks %s: %v", k, dialect)
		}
	}
}

func TestModels(t *testing.T) {
	f := setup(t, config{ctx: 512})
	var list struct {
		Object string      `json:"object"`
		Data   []modelJSON `json:"data"`
	}
	getJSON(t, f, http.MethodGet, "/v1/models", "", &list)
	if list.Object != "list" || len(list.Data) != 1 {
		t.Fatalf("list %+v", list)
	}
	checkModel(t, list.Data[0], 512)

	var one modelJSON
	getJSON(t, f, http.MethodGet, "/v1/models/fake", "", &one)
	checkModel(t, one, 512)
	for _, path := range []string{"/v1/models//models/fake.gguf", "/v1/models/%2Fmodels%2Ffake.gguf", "/v1/models/a/../../b"} {
		resp, b := f.do(t, http.MethodGet, path, "")
		checkError(t, resp, b, wantError{400, invalidReq, "", "", ""})
	}
	for _, path := range []string{"/v1/models/nope", "/v1/models/models/fake.gguf", "/v1/models/"} {
		resp, b := f.do(t, http.MethodGet, path, "")
		checkError(t, resp, b, wantError{404, invalidReq, "model", "model_not_found", "does not exist"})
	}

	// The official SDK reads the same.
	page, err := f.client.Models.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || page.Data[0].ID != "fake" || page.Data[0].Object != "model" {
		t.Errorf("SDK list %+v", page.Data)
	}
	m, err := f.client.Models.Get(t.Context(), "fake")
	if err != nil || m.ID != "fake" {
		t.Errorf("SDK get: %+v %v", m, err)
	}
	if _, err := f.client.Models.Get(t.Context(), "nope"); err == nil {
		t.Error("SDK get of an unknown model succeeded")
	} else if apiErr, ok := err.(*openai.Error); !ok || apiErr.StatusCode != 404 {
		t.Errorf("SDK get of an unknown model: %v", err)
	}
}

func TestHealth(t *testing.T) {
	f := setup(t, config{})
	var h struct{ Status string }
	getJSON(t, f, http.MethodGet, "/health", "", &h)
	if h.Status != "ok" {
		t.Errorf("health %+v", h)
	}
}

func TestProps(t *testing.T) {
	tests := []struct {
		name     string
		template string
		fallback bool
	}{
		{"fallback template", "", true},
		{"chatml template", chatML, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := setup(t, config{ctx: 256, template: tt.template, maxTokens: 100})
			var p struct {
				Model                     string `json:"model"`
				MaxContext                int    `json:"max_context"`
				ChatTemplate              string `json:"chat_template"`
				ChatTemplateIsFallback    bool   `json:"chat_template_is_fallback"`
				DefaultGenerationSettings struct {
					NCtx   int            `json:"n_ctx"`
					Params map[string]any `json:"params"`
				} `json:"default_generation_settings"`
				KVCache      map[string]any `json:"kv_cache"`
				Capabilities map[string]any `json:"capabilities"`
			}
			getJSON(t, f, http.MethodGet, "/props", "", &p)
			if p.Model != "fake" || p.MaxContext != 256 || p.DefaultGenerationSettings.NCtx != 256 {
				t.Errorf("props %+v", p)
			}
			if p.ChatTemplate != f.tmpl.Source() || p.ChatTemplate == "" || p.ChatTemplateIsFallback != tt.fallback {
				t.Errorf("chat_template %q (fallback %v)", p.ChatTemplate, p.ChatTemplateIsFallback)
			}
			if tt.template != "" && p.ChatTemplate != tt.template {
				t.Errorf("chat_template %q, want the model's", p.ChatTemplate)
			}
			if got := p.DefaultGenerationSettings.Params["max_tokens"]; got != 100.0 {
				t.Errorf("params.max_tokens %v, want the operator's 100", got)
			}
			if p.KVCache == nil || p.Capabilities["chat"] != true {
				t.Errorf("kv_cache %v capabilities %v", p.KVCache, p.Capabilities)
			}
			if dialect, _ := p.Capabilities["dialect"].(map[string]any); dialect["chat_template"] != !tt.fallback {
				t.Errorf("capabilities.dialect %v", dialect)
			}

			var byName struct{ Model string }
			getJSON(t, f, http.MethodGet, "/props?model=fake", "", &byName)
			if byName.Model != "fake" {
				t.Errorf("props?model=fake: %+v", byName)
			}
			resp, b := f.do(t, http.MethodGet, "/props?model=nope", "")
			checkError(t, resp, b, wantError{404, invalidReq, "model", "model_not_found", "nope"})
		})
	}
}

func TestTokenize(t *testing.T) {
	f := setup(t, config{})
	bos := enginetest.BOS
	tests := []struct {
		name, body string
		tokens     []int
	}{
		{"input", `{"model":"fake","input":"hi"}`, []int{'h' + 2, 'i' + 2}},
		{"model omitted with one model served", `{"input":"hi"}`, []int{'h' + 2, 'i' + 2}},
		{"llama.cpp content", `{"content":"A"}`, []int{'A' + 2}},
		{"text", `{"text":"A"}`, []int{'A' + 2}},
		{"add_special", `{"input":"hi","add_special":true}`, []int{bos, 'h' + 2, 'i' + 2}},
		{"empty text", `{"input":""}`, []int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got struct {
				Model  string `json:"model"`
				Tokens []int  `json:"tokens"`
				Count  int    `json:"count"`
			}
			getJSON(t, f, http.MethodPost, "/v1/tokenize", tt.body, &got)
			if got.Tokens == nil {
				t.Errorf("tokens is null, want %v", tt.tokens)
			}
			if !slices.Equal(got.Tokens, tt.tokens) || got.Count != len(tt.tokens) || got.Model == "" {
				t.Errorf("got %+v, want tokens %v", got, tt.tokens)
			}
		})
	}

	bad := []struct {
		name, body string
		want       wantError
	}{
		{"missing input", `{"model":"fake"}`, wantError{400, invalidReq, "input", "", "input"}},
		{"input a number", `{"input":5}`, wantError{400, invalidReq, "input", "", "string"}},
		{"unknown model", `{"model":"nope","input":"x"}`, wantError{404, invalidReq, "model", "model_not_found", "nope"}},
		{"empty model", `{"model":"","input":"x"}`, wantError{400, invalidReq, "model", "", "model"}},
		{"malformed", `{"input":`, wantError{400, invalidReq, "", "", "malformed JSON"}},
		{"empty body", ``, wantError{400, invalidReq, "", "", "empty"}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := f.do(t, http.MethodPost, "/v1/tokenize", tt.body)
			checkError(t, resp, b, tt.want)
		})
	}
}

// windowJSON is where clients read a model's window in a /v1/models entry.
type windowJSON struct {
	ID                  string `json:"id"`
	ContextLength       int    `json:"context_length"`
	MaxModelLen         int    `json:"max_model_len"`
	MaxContextLength    int    `json:"max_context_length"`
	LoadedContextLength *int   `json:"loaded_context_length"`
	Meta                struct {
		NCtx      int `json:"n_ctx"`
		NCtxTrain int `json:"n_ctx_train"`
	} `json:"meta"`
}

// TestModelWindows: each entry reports the window the model serves with (its settings before
// it loads, the worker's once loaded) as context_length, max_model_len and meta.n_ctx, the
// trained window as max_context_length and meta.n_ctx_train, and loaded_context_length only
// while loaded; the list, one model's entry and the official SDK read the same numbers.
func TestModelWindows(t *testing.T) {
	f := setupCatalog(t)
	f.cat.AddModel(t, "long", gguftest.TinyLlamaOptions{ContextLength: 65536, Seed: 3})
	if err := f.cat.Svc.SetModelSettings(t.Context(), store.ModelSettings{ModelID: "long", ContextLength: 32768}); err != nil {
		t.Fatal(err)
	}
	check := func(what string, w windowJSON, serve, train int, loaded bool) {
		t.Helper()
		if w.ContextLength != serve || w.MaxModelLen != serve || w.Meta.NCtx != serve || w.MaxContextLength != train || w.Meta.NCtxTrain != train ||
			(w.LoadedContextLength != nil) != loaded || (loaded && *w.LoadedContextLength != serve) {
			t.Errorf("%s: %+v (loaded_context_length %v); want window %d, trained %d, loaded %v", what, w, w.LoadedContextLength, serve, train, loaded)
		}
	}
	find := func() windowJSON {
		var list struct{ Data []windowJSON }
		getJSON(t, f.fixture, http.MethodGet, "/v1/models", "", &list)
		for _, m := range list.Data {
			if m.ID == "long" {
				return m
			}
		}
		t.Fatalf("no model long in %+v", list.Data)
		return windowJSON{}
	}
	check("listed before loading", find(), 32768, 65536, false)
	var one windowJSON
	getJSON(t, f.fixture, http.MethodGet, "/v1/models/long", "", &one)
	check("GET /v1/models/long before loading", one, 32768, 65536, false)

	page, err := f.client.Models.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(page.Data, func(m openai.Model) bool { return m.ID == "long" })
	if i < 0 {
		t.Fatalf("SDK list lacks long: %+v", page.Data)
	}
	for k, want := range map[string]string{"context_length": "32768", "max_model_len": "32768", "max_context_length": "65536"} {
		if got := page.Data[i].JSON.ExtraFields[k].Raw(); got != want {
			t.Errorf("SDK list: %s is %q, want %s", k, got, want)
		}
	}

	// Loaded, the entry reports the worker's own window (the fake worker runs 512 tokens).
	getJSON(t, f.fixture, http.MethodPost, "/v1/models/load", `{"model":"long"}`, &one)
	check("load's answer", one, 512, 512, true)
	check("listed while loaded", find(), 512, 512, true)
}
