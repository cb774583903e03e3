package openai_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	openai "github.com/openai/openai-go/v3"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/servertest"
)

type loraJSON struct {
	Object string  `json:"object"`
	ID     string  `json:"id"`
	Path   string  `json:"path"`
	Scale  float64 `json:"scale"`
	Active bool    `json:"active"`
	Model  string  `json:"model"`
}

type loraListJSON struct {
	Object string     `json:"object"`
	Data   []loraJSON `json:"data"`
}

// lastAdapters is what the fake worker of model was last asked to run with.
func (f *catalogFixture) lastAdapters(t *testing.T, model string) []llm.AdapterRef {
	t.Helper()
	e, err := f.cat.Mgr.Catalog().Lookup(model)
	if err != nil {
		t.Fatal(err)
	}
	seen := f.cat.Runner(e.Path).Requests()
	if len(seen) == 0 {
		t.Fatalf("%s ran nothing", model)
	}
	return seen[len(seen)-1].Adapters
}

func (f *catalogFixture) chatSDK(t *testing.T, model string) {
	t.Helper()
	if _, err := f.client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
		Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	}); err != nil {
		t.Fatal(err)
	}
}

// TestLoRARoutes: /v1/lora/load loads an adapter for a model (the entry back, its id the
// file's base name), GET /v1/lora lists it (per model and for all), a chat on the model then
// runs with it and a chat on another model does not; /v1/lora/unload takes it out again.
func TestLoRARoutes(t *testing.T) {
	f := setupCatalog(t)
	path := filepath.Join(t.TempDir(), "pirate.gguf")
	servertest.WriteLoRAHeader(t, path, "llama", 64, 2)
	body, _ := json.Marshal(map[string]any{"model": "alpha", "adapter": path, "scale": 0.5})
	var loaded loraJSON
	getJSON(t, f.fixture, http.MethodPost, "/v1/lora/load", string(body), &loaded)
	want := loraJSON{Object: "lora_adapter", ID: "pirate", Path: path, Scale: 0.5, Active: true, Model: "alpha"}
	if loaded != want {
		t.Fatalf("load: %+v, want %+v", loaded, want)
	}
	for _, q := range []string{"/v1/lora?model=alpha", "/v1/lora"} {
		var list loraListJSON
		getJSON(t, f.fixture, http.MethodGet, q, "", &list)
		if list.Object != "list" || len(list.Data) != 1 || list.Data[0] != want {
			t.Fatalf("GET %s: %+v", q, list)
		}
	}
	var none loraListJSON
	getJSON(t, f.fixture, http.MethodGet, "/v1/lora?model=beta", "", &none)
	if none.Object != "list" || none.Data == nil || len(none.Data) != 0 {
		t.Fatalf("beta's adapters: %+v; want an empty list", none)
	}

	f.chatSDK(t, "alpha")
	if got := f.lastAdapters(t, "alpha"); !slices.Equal(got, []llm.AdapterRef{{ID: "pirate", Path: path, Scale: 0.5}}) {
		t.Fatalf("a chat on alpha ran with %+v; want the loaded adapter", got)
	}
	f.chatSDK(t, "beta")
	if got := f.lastAdapters(t, "beta"); len(got) != 0 {
		t.Fatalf("a chat on beta ran with %+v", got)
	}

	var gone loraListJSON
	getJSON(t, f.fixture, http.MethodPost, "/v1/lora/unload", `{"model":"alpha","id":"pirate"}`, &gone)
	if len(gone.Data) != 1 || gone.Data[0].ID != "pirate" || gone.Data[0].Active {
		t.Fatalf("unload: %+v", gone)
	}
	f.chatSDK(t, "alpha")
	if got := f.lastAdapters(t, "alpha"); len(got) != 0 {
		t.Fatalf("after unload a chat ran with %+v", got)
	}
	// No id unloads them all.
	getJSON(t, f.fixture, http.MethodPost, "/v1/lora/load", `{"model":"alpha","adapter":"`+path+`","id":"one"}`, &loaded)
	if loaded.ID != "one" || loaded.Scale != 1 {
		t.Fatalf("load with an id and no scale: %+v", loaded)
	}
	getJSON(t, f.fixture, http.MethodPost, "/v1/lora/unload", `{"model":"alpha"}`, &gone)
	var after loraListJSON
	getJSON(t, f.fixture, http.MethodGet, "/v1/lora?model=alpha", "", &after)
	if len(gone.Data) != 1 || len(after.Data) != 0 {
		t.Fatalf("unload all: %+v, left %+v", gone, after)
	}
}

// TestLoRARoutesRefuseBadInput: each bad body or file is a 400 (404 for an unknown model) in
// OpenAI's shape naming the parameter, and nothing is loaded.
func TestLoRARoutesRefuseBadInput(t *testing.T) {
	f := setupCatalog(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.gguf")
	servertest.WriteLoRAHeader(t, good, "llama", 64, 2)
	wide := filepath.Join(dir, "wide.gguf")
	servertest.WriteLoRAHeader(t, wide, "llama", 128, 2)
	text := filepath.Join(dir, "notes.gguf")
	if err := os.WriteFile(text, []byte("top secret notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(dir, "folder.gguf")
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	load := func(fields string) string { return `{"model":"alpha",` + fields + `}` }
	for _, tt := range []struct {
		name, path, body string
		want             wantError
	}{
		{"no model", "/v1/lora/load", `{"adapter":"` + good + `"}`, wantError{400, invalidReq, "model", "", "model"}},
		{"no adapter", "/v1/lora/load", `{"model":"alpha"}`, wantError{400, invalidReq, "adapter", "", "adapter"}},
		{"unknown model", "/v1/lora/load", `{"model":"nope","adapter":"` + good + `"}`, wantError{404, invalidReq, "model", "model_not_found", "nope"}},
		{"relative path", "/v1/lora/load", load(`"adapter":"adapters/good.gguf"`), wantError{400, invalidReq, "adapter", "", "relative path"}},
		{"a directory", "/v1/lora/load", load(`"adapter":"` + folder + `"`), wantError{400, invalidReq, "adapter", "", "not a regular file"}},
		{"not a GGUF", "/v1/lora/load", load(`"adapter":"` + text + `"`), wantError{400, invalidReq, "adapter", "", "not a readable GGUF file"}},
		{"another model's", "/v1/lora/load", load(`"adapter":"` + wide + `"`), wantError{400, invalidReq, "adapter", "", "[128 128]"}},
		{"scale NaN", "/v1/lora/load", load(`"adapter":"` + good + `","scale":NaN`), wantError{400, invalidReq, "", "", "malformed JSON"}},
		{"scale \"NaN\"", "/v1/lora/load", load(`"adapter":"` + good + `","scale":"NaN"`), wantError{400, invalidReq, "scale", "", "expected a number"}},
		{"scale 1e3", "/v1/lora/load", load(`"adapter":"` + good + `","scale":1e3`), wantError{400, invalidReq, "scale", "", "from -100 to 100"}},
		{"scale 1e999", "/v1/lora/load", load(`"adapter":"` + good + `","scale":1e999`), wantError{400, invalidReq, "scale", "", "scale"}},
		{"id with a space", "/v1/lora/load", load(`"adapter":"` + good + `","id":"a b"`), wantError{400, invalidReq, "adapter", "", "space"}},
		{"malformed", "/v1/lora/load", `{"model":`, wantError{400, invalidReq, "", "", "malformed JSON"}},
		{"unload unknown id", "/v1/lora/unload", `{"model":"alpha","id":"nope"}`, wantError{400, invalidReq, "id", "", `"nope"`}},
		{"unload no model", "/v1/lora/unload", `{"id":"x"}`, wantError{400, invalidReq, "model", "", "model"}},
		{"list unknown model", "GET /v1/lora?model=nope", "", wantError{404, invalidReq, "model", "model_not_found", "nope"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			method, path := http.MethodPost, tt.path
			if m, p, ok := strings.Cut(tt.path, " "); ok {
				method, path = m, p
			}
			resp, b := f.do(t, method, path, tt.body)
			checkError(t, resp, b, tt.want)
			if strings.Contains(string(b), "top secret") {
				t.Errorf("the reply echoes the file: %s", b)
			}
		})
	}
	var list loraListJSON
	getJSON(t, f.fixture, http.MethodGet, "/v1/lora", "", &list)
	if len(list.Data) != 0 {
		t.Fatalf("refused loads left %+v", list.Data)
	}
}

// TestLoRARoutesNeedAnAdminKey: with keys, a key that is not an admin key may list adapters
// (without their paths) but not load or unload them (403 admin_required, nothing changed);
// the admin key may.
func TestLoRARoutesNeedAnAdminKey(t *testing.T) {
	cat := setupCatalog(t).cat
	const adminKey, userKey = "sk-sf-admin-for-lora-tests", "sk-sf-user-for-lora-tests"
	admin, err := auth.APIKey(adminKey)
	if err != nil {
		t.Fatal(err)
	}
	policy, err := auth.ParsePolicy([]byte(`{"keys": [{"name": "user", "key": "` + userKey + `"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := auth.New(context.Background(), auth.Config{Keys: append([]auth.Key{admin}, policy...), Store: cat.Store})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.New(server.Config{Keys: keys}, cat.Svc))
	t.Cleanup(srv.Close)
	path := filepath.Join(t.TempDir(), "a.gguf")
	servertest.WriteLoRAHeader(t, path, "llama", 64, 2)
	call := func(key, method, route, body string) (int, string) {
		req, err := http.NewRequest(method, srv.URL+route, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	loadBody := `{"model":"alpha","adapter":"` + path + `"}`
	for _, r := range [][2]string{{"/v1/lora/load", loadBody}, {"/v1/lora/unload", `{"model":"alpha"}`}} {
		if status, b := call(userKey, http.MethodPost, r[0], r[1]); status != 403 || !strings.Contains(b, `"code":"admin_required"`) {
			t.Fatalf("%s with a user key: %d %s", r[0], status, b)
		}
	}
	if list, _ := cat.Svc.Adapters(t.Context(), "alpha"); len(list) != 0 {
		t.Fatalf("a refused load loaded %+v", list)
	}
	if status, b := call(adminKey, http.MethodPost, "/v1/lora/load", loadBody); status != 200 || !strings.Contains(b, `"path":`) {
		t.Fatalf("load with the admin key: %d %s", status, b)
	}
	status, b := call(userKey, http.MethodGet, "/v1/lora?model=alpha", "")
	var list loraListJSON
	if status != 200 || json.Unmarshal([]byte(b), &list) != nil || len(list.Data) != 1 || list.Data[0].ID != "a" || strings.Contains(b, path) {
		t.Fatalf("GET /v1/lora with a user key: %d %s; want the adapter without its path", status, b)
	}
	if status, b := call(adminKey, http.MethodPost, "/v1/lora/unload", `{"model":"alpha","id":"a"}`); status != 200 {
		t.Fatalf("unload with the admin key: %d %s", status, b)
	}
}
