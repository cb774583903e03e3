package openai_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/servertest"
)

// catalogFixture serves a catalog of two tiny models over fake workers.
type catalogFixture struct {
	*fixture
	cat *servertest.Catalog
}

func setupCatalog(t *testing.T) *catalogFixture {
	t.Helper()
	cat := servertest.NewCatalog(t, models.Config{KeepAlive: time.Hour})
	cat.AddModel(t, "alpha", gguftest.TinyLlamaOptions{})
	cat.AddModel(t, "beta", gguftest.TinyLlamaOptions{Seed: 2})
	srv := httptest.NewServer(server.New(server.Config{}, cat.Svc))
	t.Cleanup(srv.Close)
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	return &catalogFixture{fixture: &fixture{srv: srv, st: cat.Store, client: client}, cat: cat}
}

type catalogModel struct {
	ID     string `json:"id"`
	Loaded bool   `json:"loaded"`
	State  string `json:"state"`
	Error  string `json:"error"`
	Meta   struct {
		NCtx int `json:"n_ctx"`
	} `json:"meta"`
	Runtime      string         `json:"runtime"`
	Capabilities map[string]any `json:"capabilities"`
	Quantization string         `json:"quantization"`
	ExpiresAt    *int64         `json:"expires_at"`
}

func (f *catalogFixture) list(t *testing.T) map[string]catalogModel {
	t.Helper()
	var list struct{ Data []catalogModel }
	getJSON(t, f.fixture, http.MethodGet, "/v1/models", "", &list)
	out := map[string]catalogModel{}
	for _, m := range list.Data {
		out[m.ID] = m
	}
	return out
}

func TestCatalogModelsLoadOnDemand(t *testing.T) {
	f := setupCatalog(t)
	list := f.list(t)
	// The bundled model is the app's business; here the catalog holds what the test added.
	for _, id := range []string{"alpha", "beta"} {
		m, ok := list[id]
		if !ok || m.Loaded || m.State != "unloaded" || m.Meta.NCtx <= 0 || m.Runtime == "" || m.Capabilities == nil || m.Quantization == "" {
			t.Fatalf("%s before use: %+v", id, m)
		}
	}
	reply, err := f.client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
		Model: "beta", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	if err != nil || reply.Choices[0].Message.Content != servertest.Reply {
		t.Fatalf("chat on an unloaded model: %v %+v", err, reply)
	}
	list = f.list(t)
	if !list["beta"].Loaded || list["beta"].State != "loaded" || list["beta"].ExpiresAt == nil || list["alpha"].Loaded {
		t.Fatalf("after one chat on beta: %+v %+v", list["beta"], list["alpha"])
	}
	if at := time.Unix(*list["beta"].ExpiresAt, 0); at.Before(time.Now().Add(50*time.Minute)) || at.After(time.Now().Add(61*time.Minute)) {
		t.Fatalf("expires_at %v, want about an hour from now (the keep-alive)", at)
	}
	// The SDK reads the same list.
	page, err := f.client.Models.List(t.Context())
	if err != nil || len(page.Data) != 2 {
		t.Fatalf("SDK list: %v %+v", err, page)
	}
}

func TestCatalogLoadUnloadRoutes(t *testing.T) {
	f := setupCatalog(t)
	var m catalogModel
	getJSON(t, f.fixture, http.MethodPost, "/v1/models/load", `{"model":"alpha"}`, &m)
	if m.ID != "alpha" || !m.Loaded || m.State != "loaded" {
		t.Fatalf("load: %+v", m)
	}
	var un struct {
		ID       string `json:"id"`
		Unloaded bool   `json:"unloaded"`
		State    string `json:"state"`
	}
	getJSON(t, f.fixture, http.MethodPost, "/v1/models/unload", `{"model":"alpha"}`, &un)
	if un.ID != "alpha" || !un.Unloaded || un.State != "unloaded" {
		t.Fatalf("unload: %+v", un)
	}
	getJSON(t, f.fixture, http.MethodPost, "/v1/models/load", `{"model":"alpha"}`, &m)
	getJSON(t, f.fixture, http.MethodDelete, "/v1/models/alpha", "", &un)
	if !un.Unloaded || f.list(t)["alpha"].Loaded {
		t.Fatalf("DELETE /v1/models/alpha did not unload it: %+v", un)
	}
	if _, ok := f.list(t)["alpha"]; !ok {
		t.Fatal("DELETE /v1/models unloads; the model must stay in the catalog")
	}
	// A later request loads it again.
	if _, err := f.client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
		Model: "alpha", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	}); err != nil {
		t.Fatal(err)
	}

	bad := []struct {
		name, method, path, body string
		want                     wantError
	}{
		{"load unknown", http.MethodPost, "/v1/models/load", `{"model":"nope"}`, wantError{404, invalidReq, "model", "model_not_found", "nope"}},
		{"load no model", http.MethodPost, "/v1/models/load", `{}`, wantError{400, invalidReq, "model", "", "model"}},
		{"load malformed", http.MethodPost, "/v1/models/load", `{"model":`, wantError{400, invalidReq, "", "", ""}},
		{"load a path", http.MethodPost, "/v1/models/load", `{"model":"/etc/passwd"}`, wantError{400, invalidReq, "", "", "is a path"}},
		{"load dot-dot", http.MethodPost, "/v1/models/load", `{"model":"a/../../b"}`, wantError{400, invalidReq, "", "", ".."}},
		{"load NUL", http.MethodPost, "/v1/models/load", `{"model":"a\u0000b"}`, wantError{400, invalidReq, "", "", "control character"}},
		{"load 10 KB name", http.MethodPost, "/v1/models/load", `{"model":"` + strings.Repeat("x", 10<<10) + `"}`, wantError{400, invalidReq, "", "", "at most"}},
		{"unload unknown", http.MethodPost, "/v1/models/unload", `{"model":"nope"}`, wantError{404, invalidReq, "model", "model_not_found", "nope"}},
		{"delete unknown", http.MethodDelete, "/v1/models/nope", "", wantError{404, invalidReq, "model", "model_not_found", "nope"}},
		{"bad keep_alive", http.MethodPost, "/v1/chat/completions", `{"model":"alpha","messages":[{"role":"user","content":"x"}],"keep_alive":"banana"}`, wantError{400, invalidReq, "keep_alive", "", "keep_alive"}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := f.do(t, tt.method, tt.path, tt.body)
			checkError(t, resp, b, tt.want)
		})
	}
}

func TestCatalogAdminRoutesAnswerOnlyLoopback(t *testing.T) {
	f := setupCatalog(t)
	h := server.New(server.Config{}, f.cat.Svc)
	for _, r := range []struct{ method, path, body string }{
		{http.MethodPost, "/v1/models/load", `{"model":"alpha"}`},
		{http.MethodPost, "/v1/models/unload", `{"model":"alpha"}`},
		{http.MethodDelete, "/v1/models/alpha", ""},
	} {
		req := httptest.NewRequest(r.method, r.path, strings.NewReader(r.body))
		req.RemoteAddr = "192.168.1.20:40000"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var body struct {
			Error struct{ Code, Message string }
		}
		_ = json.Unmarshal(rec.Body.Bytes(), &body)
		if rec.Code != http.StatusForbidden || body.Error.Code != "admin_required" {
			t.Errorf("%s %s from the LAN: %d %s", r.method, r.path, rec.Code, rec.Body)
		}
	}
	if f.list(t)["alpha"].Loaded {
		t.Fatal("a refused load loaded the model")
	}
}

func TestCatalogKeepAliveZeroUnloads(t *testing.T) {
	f := setupCatalog(t)
	resp, b := f.do(t, http.MethodPost, "/v1/chat/completions", `{"model":"alpha","messages":[{"role":"user","content":"x"}],"keep_alive":0}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	deadline := time.Now().Add(10 * time.Second)
	for f.list(t)["alpha"].Loaded {
		if time.Now().After(deadline) {
			t.Fatal("keep_alive 0 left the model loaded")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCatalogMissingFile(t *testing.T) {
	f := setupCatalog(t)
	e, err := f.cat.Mgr.Catalog().Lookup("beta")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(e.Path); err != nil {
		t.Fatal(err)
	}
	if m := f.list(t)["beta"]; m.State != "missing" || m.Error == "" {
		t.Fatalf("a model whose file is gone: %+v", m)
	}
	resp, b := f.do(t, http.MethodPost, "/v1/chat/completions", `{"model":"beta","messages":[{"role":"user","content":"x"}]}`)
	checkError(t, resp, b, wantError{500, "server_error", "", "", "cannot be used"})
}

func TestCatalogProps(t *testing.T) {
	f := setupCatalog(t)
	var p struct {
		Model  string `json:"model"`
		Loaded bool   `json:"loaded"`
	}
	getJSON(t, f.fixture, http.MethodGet, "/props?model=beta", "", &p)
	if p.Model != "beta" || p.Loaded {
		t.Fatalf("props?model=beta: %+v", p)
	}
	getJSON(t, f.fixture, http.MethodGet, "/props?model=beta&autoload=1", "", &p)
	if p.Model != "beta" || !p.Loaded || !f.list(t)["beta"].Loaded {
		t.Fatalf("props?model=beta&autoload=1: %+v", p)
	}
	// With no model named, /props describes a loaded model rather than the first by name.
	getJSON(t, f.fixture, http.MethodGet, "/props", "", &p)
	if p.Model != "beta" {
		t.Fatalf("props: %+v, want the loaded model", p)
	}
	resp, b := f.do(t, http.MethodGet, "/props?model=../x", "")
	checkError(t, resp, b, wantError{400, invalidReq, "", "", ".."})
}

func TestCatalogLoadWithRuntime(t *testing.T) {
	f := setupCatalog(t)
	resp, b := f.do(t, http.MethodPost, "/v1/models/load", `{"model":"alpha","runtime":"cpu"}`)
	if resp.StatusCode != 200 {
		t.Fatalf("load on cpu: %d %s", resp.StatusCode, b)
	}
	set, err := f.cat.Svc.ModelSettings(t.Context(), "alpha")
	if err != nil || set.Runtime != "cpu" {
		t.Fatalf("settings %+v %v", set, err)
	}
	resp, b = f.do(t, http.MethodPost, "/v1/models/load", `{"model":"alpha","runtime":"vulkan"}`)
	checkError(t, resp, b, wantError{400, invalidReq, "runtime", "unsupported_runtime", "no vulkan runtime"})
	if set, _ := f.cat.Svc.ModelSettings(t.Context(), "alpha"); set.Runtime != "cpu" {
		t.Fatalf("a refused runtime was stored: %+v", set)
	}
}
