package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/servertest"
)

// TestModelsMoveRefusesEveryClient: while the models folder is being moved (the guard the
// desktop's move holds), every route that pulls, deletes, copies or loads a model, or runs a
// model that would load, is a 409 in its dialect's error shape that names the move, and
// changes nothing; once the move ends the same requests work.
func TestModelsMoveRefusesEveryClient(t *testing.T) {
	cat := servertest.NewCatalog(t, models.Config{KeepAlive: time.Hour})
	cat.AddModel(t, "tiny", gguftest.TinyLlamaOptions{})
	cat.Hub.AddFile("owner/repo", "repo-Q8_0.gguf", servertest.TinyModel(t, gguftest.TinyLlamaOptions{Seed: 2}))
	lora := servertest.WriteLoRAFiles(t, "tone")
	srv := httptest.NewServer(server.New(server.Config{}, cat.Svc))
	t.Cleanup(srv.Close)

	end, err := cat.Svc.BeginModelsMove()
	if err != nil {
		t.Fatal(err)
	}
	routes := []struct {
		name, method, path, body, then string
		// message is where the dialect puts the message: "error" (Ollama), "error.message"
		// (OpenAI, Anthropic).
		message string
	}{
		{"ollama pull", "POST", "/api/pull", `{"model": "hf.co/owner/repo:Q8_0"}`, "download again", "error"},
		{"ollama pull, no stream", "POST", "/api/pull", `{"model": "hf.co/owner/repo:Q8_0", "stream": false}`, "download again", "error"},
		{"ollama delete", "DELETE", "/api/delete", `{"model": "tiny"}`, "delete the model", "error"},
		{"ollama copy", "POST", "/api/copy", `{"source": "tiny", "destination": "tiny2"}`, "copy the model", "error"},
		{"ollama load (empty generate)", "POST", "/api/generate", `{"model": "tiny"}`, "load the model", "error"},
		{"ollama generate", "POST", "/api/generate", `{"model": "tiny", "prompt": "hi", "stream": false}`, "load the model", "error"},
		{"ollama chat, streamed", "POST", "/api/chat", `{"model": "tiny", "messages": [{"role": "user", "content": "hi"}]}`, "load the model", "error"},
		{"openai load", "POST", "/v1/models/load", `{"model": "tiny"}`, "load the model", "error.message"},
		{"openai tokenize", "POST", "/v1/tokenize", `{"model": "tiny", "input": "hi"}`, "load the model", "error.message"},
		{"openai chat", "POST", "/v1/chat/completions", `{"model": "tiny", "messages": [{"role": "user", "content": "hi"}]}`, "load the model", "error.message"},
		{"openai chat, streamed", "POST", "/v1/chat/completions", `{"model": "tiny", "stream": true, "messages": [{"role": "user", "content": "hi"}]}`, "load the model", "error.message"},
		{"openai completion", "POST", "/v1/completions", `{"model": "tiny", "prompt": "hi"}`, "load the model", "error.message"},
		{"openai lora load", "POST", "/v1/lora/load", `{"model": "tiny", "adapter": "` + lora.Adapters["tone"] + `"}`, "load the adapter", "error.message"},
		{"anthropic messages", "POST", "/v1/messages", `{"model": "tiny", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}`, "load the model", "error.message"},
		{"anthropic messages, streamed", "POST", "/v1/messages", `{"model": "tiny", "max_tokens": 8, "stream": true, "messages": [{"role": "user", "content": "hi"}]}`, "load the model", "error.message"},
	}
	for _, r := range routes {
		t.Run(r.name, func(t *testing.T) {
			resp, body := servertest.Do(t, r.method, srv.URL+r.path, r.body)
			if resp.StatusCode != http.StatusConflict {
				t.Fatalf("status %d, want 409: %s", resp.StatusCode, body)
			}
			var wire map[string]any
			if err := json.Unmarshal(body, &wire); err != nil {
				t.Fatalf("not one JSON error: %s", body)
			}
			var msg any = wire
			for _, k := range strings.Split(r.message, ".") {
				obj, _ := msg.(map[string]any)
				msg = obj[k]
			}
			want := "the models folder is being moved; " + r.then + " once the move is done"
			if s, _ := msg.(string); s != want {
				t.Fatalf("message %q, want %q in %s", msg, want, body)
			}
			if strings.HasPrefix(r.path, "/v1/messages") && wire["type"] != "error" {
				t.Fatalf("not Anthropic's error shape: %s", body)
			}
			if strings.HasPrefix(r.path, "/v1/") && !strings.HasPrefix(r.path, "/v1/messages") {
				if code := wire["error"].(map[string]any)["code"]; code != "models_moving" {
					t.Fatalf("code %v, want models_moving: %s", code, body)
				}
			}
		})
	}
	// Nothing changed: the model is still there and not loaded, nothing was pulled or copied.
	var ids []string
	for _, e := range cat.Mgr.Catalog().List() {
		ids = append(ids, e.ID)
		if st := cat.Mgr.Status(e).State; st != models.StateUnloaded {
			t.Errorf("%s is %s during the move", e.ID, st)
		}
	}
	if strings.Join(ids, ",") != "tiny" {
		t.Fatalf("the catalog changed during the move: %v", ids)
	}
	if n := cat.Hub.BytesSent("owner/repo", "repo-Q8_0.gguf"); n != 0 {
		t.Fatalf("%d bytes downloaded during the move", n)
	}

	end()
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/v1/models/load", `{"model": "tiny"}`},
		{"POST", "/api/pull", `{"model": "hf.co/owner/repo:Q8_0", "stream": false}`},
		{"POST", "/api/copy", `{"source": "tiny", "destination": "tiny2"}`},
		{"DELETE", "/api/delete", `{"model": "tiny2"}`},
	} {
		if resp, body := servertest.Do(t, r.method, srv.URL+r.path, r.body); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s after the move: %d %s", r.method, r.path, resp.StatusCode, body)
		}
	}
}

// TestModelsMoveWaitsForEveryClient: a move does not start while a download started over the
// HTTP API runs, naming it, nor while a model that a request loaded is loaded, nor while an
// adapter loaded over the API is; it starts once they are over.
func TestModelsMoveWaitsForEveryClient(t *testing.T) {
	cat := servertest.NewCatalog(t, models.Config{KeepAlive: time.Hour})
	cat.AddModel(t, "tiny", gguftest.TinyLlamaOptions{})
	data := servertest.TinyModel(t, gguftest.TinyLlamaOptions{Seed: 3})
	cat.Hub.AddFile("owner/slow", "slow-Q8_0.gguf", data)
	cat.Hub.Faults("owner/slow", "slow-Q8_0.gguf").StallAt.Store(int64(len(data) / 2))
	srv := httptest.NewServer(server.New(server.Config{}, cat.Svc))
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/api/pull", strings.NewReader(`{"model": "hf.co/owner/slow:Q8_0"}`))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Logf("pull: %d %s", resp.StatusCode, b)
		}
	}()
	for cat.Hub.BytesSent("owner/slow", "slow-Q8_0.gguf") == 0 {
		select {
		case <-done:
			t.Fatal("the pull ended")
		case <-time.After(time.Millisecond):
		}
	}
	_, err := cat.Svc.BeginModelsMove()
	if err == nil || err.Error() != "the download of hf.co/owner/slow:Q8_0 is running; wait for it to finish or cancel it, then move the models" {
		t.Fatalf("move during an HTTP pull: %v", err)
	}
	cancel()
	<-done
	// The server ends the cancelled pull after its client left: wait for the guard to free.
	servertest.WaitMoveAllowed(t, cat.Svc)

	if resp, body := servertest.Do(t, "POST", srv.URL+"/v1/chat/completions", `{"model": "tiny", "messages": [{"role": "user", "content": "hi"}]}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("chat: %d %s", resp.StatusCode, body)
	}
	_, err = cat.Svc.BeginModelsMove()
	if err == nil || err.Error() != "tiny is loaded; unload it first, then move the models" {
		t.Fatalf("move with a model a request loaded: %v", err)
	}
	// The refused move left no mark: requests still load models.
	if resp, body := servertest.Do(t, "POST", srv.URL+"/v1/models/unload", `{"model": "tiny"}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("unload: %d %s", resp.StatusCode, body)
	}
	// An adapter loaded over the API would be left naming its old file.
	lora := servertest.WriteLoRAFiles(t, "tone")
	if resp, body := servertest.Do(t, "POST", srv.URL+"/v1/lora/load", `{"model": "tiny", "adapter": "`+lora.Adapters["tone"]+`"}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("lora load: %d %s", resp.StatusCode, body)
	}
	_, err = cat.Svc.BeginModelsMove()
	if err == nil || err.Error() != "the adapter tone is loaded for tiny; unload it (POST /v1/lora/unload), then move the models" {
		t.Fatalf("move with an adapter loaded: %v", err)
	}
	if resp, body := servertest.Do(t, "POST", srv.URL+"/v1/lora/unload", `{"model": "tiny"}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("lora unload: %d %s", resp.StatusCode, body)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		end, err := cat.Svc.BeginModelsMove()
		if err == nil {
			end()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no move once the pull was cancelled and the model unloaded: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestModelsMoveStopsTokenizers: a count of tokens on an unloaded model before the move left a
// tokenizer-only worker with the model's file open; the move stops it (a file kept open is not
// freed when its copy's original is removed, nor renamed on Windows), and during the move a
// count is a 409 like a load, not answered from the file being moved.
func TestModelsMoveStopsTokenizers(t *testing.T) {
	cat := servertest.NewCatalog(t, models.Config{KeepAlive: time.Hour})
	cat.AddModel(t, "tiny", gguftest.TinyLlamaOptions{})
	srv := httptest.NewServer(server.New(server.Config{}, cat.Svc))
	t.Cleanup(srv.Close)
	count := `{"model": "tiny", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}`
	if resp, body := servertest.Do(t, "POST", srv.URL+"/v1/messages/count_tokens", count); resp.StatusCode != http.StatusOK {
		t.Fatalf("count before the move: %d %s", resp.StatusCode, body)
	}
	end, err := cat.Svc.BeginModelsMove()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ path, body string }{
		{"/v1/messages/count_tokens", count},
		{"/v1/tokenize", `{"model": "tiny", "input": "hi"}`},
		{"/api/tokenize", `{"model": "tiny", "text": "hi"}`},
	} {
		resp, body := servertest.Do(t, "POST", srv.URL+r.path, r.body)
		if resp.StatusCode != http.StatusConflict || !strings.Contains(string(body), "the models folder is being moved; load the model once the move is done") {
			t.Errorf("%s during the move: %d %s", r.path, resp.StatusCode, body)
		}
	}
	end()
	if resp, body := servertest.Do(t, "POST", srv.URL+"/v1/messages/count_tokens", count); resp.StatusCode != http.StatusOK {
		t.Fatalf("count after the move: %d %s", resp.StatusCode, body)
	}
}

// TestModelsMoveFetchesNothing: a load during the move of a model whose file is kept in a
// storage (fetched back before a load) is the move's 409, and fetches nothing: a download of
// many GB would be refused only once it was done.
func TestModelsMoveFetchesNothing(t *testing.T) {
	cat := servertest.NewCatalog(t, models.Config{KeepAlive: time.Hour})
	e := cat.AddModel(t, "tiny", gguftest.TinyLlamaOptions{})
	srv := httptest.NewServer(server.New(server.Config{}, cat.Svc))
	t.Cleanup(srv.Close)
	data, err := os.ReadFile(e.Path)
	if err != nil {
		t.Fatal(err)
	}
	var fetches atomic.Int32
	cat.Mgr.SetFetch(func(_ context.Context, path string) error {
		fetches.Add(1)
		return os.WriteFile(path, data, 0o644)
	})
	if err := os.Remove(e.Path); err != nil {
		t.Fatal(err)
	}
	end, err := cat.Svc.BeginModelsMove()
	if err != nil {
		t.Fatal(err)
	}
	resp, body := servertest.Do(t, "POST", srv.URL+"/v1/models/load", `{"model": "tiny"}`)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(body), "the models folder is being moved") {
		t.Errorf("load during the move: %d %s", resp.StatusCode, body)
	}
	if n := fetches.Load(); n != 0 {
		t.Errorf("the load during the move fetched the file %d times", n)
	}
	end()
	if resp, body := servertest.Do(t, "POST", srv.URL+"/v1/models/load", `{"model": "tiny"}`); resp.StatusCode != http.StatusOK || fetches.Load() != 1 {
		t.Fatalf("load after the move: %d %s; %d fetches", resp.StatusCode, body, fetches.Load())
	}
}

// TestModelsMoveEndOnce: a move's end called again (a deferred end after an explicit one) does
// not end the move that began since: its loads are still refused.
func TestModelsMoveEndOnce(t *testing.T) {
	cat := servertest.NewCatalog(t, models.Config{KeepAlive: time.Hour})
	cat.AddModel(t, "tiny", gguftest.TinyLlamaOptions{})
	srv := httptest.NewServer(server.New(server.Config{}, cat.Svc))
	t.Cleanup(srv.Close)
	first, err := cat.Svc.BeginModelsMove()
	if err != nil {
		t.Fatal(err)
	}
	first()
	second, err := cat.Svc.BeginModelsMove()
	if err != nil {
		t.Fatal(err)
	}
	defer second()
	first()
	if resp, body := servertest.Do(t, "POST", srv.URL+"/v1/models/load", `{"model": "tiny"}`); resp.StatusCode != http.StatusConflict {
		t.Fatalf("load during the second move: %d %s", resp.StatusCode, body)
	}
}
