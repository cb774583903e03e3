package ollama_test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/models"
)

// TestBrokenEmbeddingModelBackoff: an embedding model that fails to load, retried by Ollama
// clients through /api/embed and /api/embeddings (with input, and the empty requests that only
// load it), gets the remembered failure for the backoff; no retry starts a worker.
func TestBrokenEmbeddingModelBackoff(t *testing.T) {
	l := setupLibrary(t, models.Config{Backoff: time.Hour}) // the whole test runs inside the backoff
	path := filepath.Join(l.Dir, "embedder.gguf")
	if err := gguftest.WriteTinyBERT(path, gguftest.TinyBERTOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Mgr.Catalog().AddLocal(context.Background(), path, "embedder"); err != nil {
		t.Fatal(err)
	}
	l.SetStartCheck(func(e *models.Entry) error {
		return errors.New("load model: tensor 'token_embd.weight' has a bad offset")
	})
	events, stop := l.Mgr.Subscribe(64)
	defer stop()
	countLoads := loadCounter(events)
	embed := func(input any) func() error {
		return func() error {
			_, err := l.client.Embed(t.Context(), &api.EmbedRequest{Model: "embedder", Input: input})
			return err
		}
	}
	embeddings := func(prompt string) func() error {
		return func() error {
			_, err := l.client.Embeddings(t.Context(), &api.EmbeddingRequest{Model: "embedder", Prompt: prompt})
			return err
		}
	}
	var se api.StatusError
	if err := embed("hi")(); !errors.As(err, &se) || se.StatusCode != http.StatusInternalServerError || !strings.Contains(se.ErrorMessage, "bad offset") {
		t.Fatalf("the first /api/embed: %v", err)
	}
	if n := countLoads(); n != 1 {
		t.Fatalf("the first /api/embed started %d loads", n)
	}
	retries := []struct {
		name string
		call func() error
	}{
		{"/api/embed", embed("hi")},
		{"/api/embed of two inputs", embed([]string{"a", "b"})},
		{"/api/embed with no input (it loads the model)", embed("")},
		{"/api/embeddings", embeddings("hi")},
		{"/api/embeddings with no prompt (it loads the model)", embeddings("")},
		{"/api/embed again", embed("hi")},
	}
	for _, retry := range retries {
		err := retry.call()
		if !errors.As(err, &se) || se.StatusCode != http.StatusInternalServerError || !strings.Contains(se.ErrorMessage, "the load failed 1 times") {
			t.Fatalf("%s within the backoff: %v; want the remembered failure", retry.name, err)
		}
	}
	if n := countLoads(); n != 1 {
		t.Fatalf("%d retries within the backoff started %d more loads; want none", len(retries), n-1)
	}
	m, err := l.Svc.Model("embedder")
	if err != nil {
		t.Fatal(err)
	}
	if st := l.Svc.ModelStatus(m); st.State != models.StateFailed {
		t.Fatalf("the model is %s, want failed", st.State)
	}
}
