package server_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/servertest"
)

// writeStubProjector writes gguftest's vision projector for a text model of width embd.
func writeStubProjector(t *testing.T, path string, embd int) {
	t.Helper()
	if err := gguftest.WriteVisionProjector(path, gguftest.VisionProjectorOptions{TextEmbd: embd}); err != nil {
		t.Fatal(err)
	}
}

// writeStubAdapter writes a rank-2 LoRA adapter of a llama's blk.0.attn_q.weight (width embd).
func writeStubAdapter(t *testing.T, path string, embd int) {
	t.Helper()
	w := gguftest.NewWriter()
	w.AddString("general.architecture", "llama")
	w.AddString("general.type", "adapter")
	w.AddString("adapter.type", "lora")
	n := uint64(embd)
	w.AddTensorF32("blk.0.attn_q.weight.lora_a", []uint64{n, 2}, make([]float32, 2*embd))
	w.AddTensorF32("blk.0.attn_q.weight.lora_b", []uint64{2, n}, make([]float32, 2*embd))
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
}

// TestCatalogProjectorsAndAdapters: through every dialect, a projector is no model, an adapter
// is listed by no dialect and refused as a model (400, saying whose adapter it is), the core's
// model says what its projector encodes, and a projector that no longer fits is a 400 at load
// naming both files, before any worker starts.
func TestCatalogProjectorsAndAdapters(t *testing.T) {
	cat := servertest.NewCatalog(t, models.Config{KeepAlive: time.Hour})
	proj := filepath.Join(cat.Dir, "mmproj-seer-F16.gguf")
	writeStubProjector(t, proj, 64)
	seer := cat.AddModel(t, "seer", gguftest.TinyLlamaOptions{Embd: 64})
	if seer.Projector != proj {
		t.Fatalf("the projector beside the model was not found: %+v", seer.Record)
	}
	adapter := filepath.Join(cat.Dir, "style.gguf")
	writeStubAdapter(t, adapter, 64)
	if _, err := cat.Mgr.Catalog().AddLocal(t.Context(), adapter, ""); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.New(server.Config{}, cat.Svc))
	t.Cleanup(srv.Close)

	m, err := cat.Svc.Model("seer")
	if err != nil || m.Projector != proj || !m.Vision || m.Audio {
		t.Fatalf("core model: %+v, %v", m, err)
	}
	for _, path := range []string{"/v1/models", "/api/tags", "/v1/models?limit=100"} {
		headers := []string{}
		if strings.Contains(path, "limit") {
			headers = []string{"anthropic-version", "2023-06-01", "x-api-key", "unused"}
		}
		res, body := servertest.Do(t, http.MethodGet, srv.URL+path, "", headers...)
		if res.StatusCode != http.StatusOK || !strings.Contains(string(body), "seer") {
			t.Fatalf("%s: %d %s", path, res.StatusCode, body)
		}
		for _, not := range []string{"style", "mmproj"} {
			if strings.Contains(string(body), `"`+not) {
				t.Errorf("%s lists %s: %s", path, not, body)
			}
		}
	}
	refusals := []struct{ method, path, body string }{
		{http.MethodPost, "/v1/models/load", `{"model":"style"}`},
		{http.MethodPost, "/v1/chat/completions", `{"model":"style","messages":[{"role":"user","content":"hi"}]}`},
		{http.MethodPost, "/v1/messages", `{"model":"style","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`},
		{http.MethodPost, "/api/chat", `{"model":"style","stream":false,"messages":[{"role":"user","content":"hi"}]}`},
	}
	for _, r := range refusals {
		res, body := servertest.Do(t, r.method, srv.URL+r.path, r.body, "anthropic-version", "2023-06-01")
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "LoRA adapter of seer") {
			t.Errorf("%s with the adapter as the model: %d %s", r.path, res.StatusCode, body)
		}
	}

	// The projector replaced by one for a wider model: the load is refused naming both files,
	// and no worker started.
	writeStubProjector(t, proj, 128)
	res, body := servertest.Do(t, http.MethodPost, srv.URL+"/v1/models/load", `{"model":"seer"}`)
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "mmproj-seer-F16.gguf") ||
		!strings.Contains(string(body), "seer.gguf") || !strings.Contains(string(body), "128-wide") {
		t.Fatalf("load with a projector that does not fit: %d %s", res.StatusCode, body)
	}
	if r := cat.Runner(seer.Path); r != nil && r.Starts.Load() > 0 {
		t.Error("a worker started for a model whose projector does not fit")
	}

	// An adapter is deleted like a model (Ollama's /api/delete); its file, outside the models
	// folder, stays.
	res, body = servertest.Do(t, http.MethodDelete, srv.URL+"/api/delete", `{"model":"style"}`)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("delete the adapter: %d %s", res.StatusCode, body)
	}
	if got := cat.Mgr.Catalog().Adapters(""); len(got) != 0 {
		t.Errorf("adapters after the delete: %v", got)
	}
	if _, err := os.Stat(adapter); err != nil {
		t.Errorf("the adapter's own file was deleted: %v", err)
	}
}
