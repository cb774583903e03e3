package ollama_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/models"
)

// TestBrokenModelBackoff: a model whose file broke behind the catalog's back fails to load;
// Ollama clients retrying it (chat, generate, embed) get the remembered failure for the
// backoff instead of starting a worker each time. Only Ollama's load call (/api/generate with
// no prompt) retries at once, as POST /v1/models/load does.
func TestBrokenModelBackoff(t *testing.T) {
	l := setupLibrary(t, models.Config{Backoff: time.Hour}) // the whole test runs inside the backoff
	e := l.AddModel(t, "broken", gguftest.TinyLlamaOptions{ChatTemplate: chatML})
	data, err := os.ReadFile(e.Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.Path, data[:len(data)*2/3], 0o644); err != nil {
		t.Fatal(err)
	}
	// The fake worker refuses what the strict GGUF reader refuses, as the real one would.
	l.SetStartCheck(func(e *models.Entry) error {
		_, err := gguf.ReadFile(e.Path)
		return err
	})
	events, stop := l.Mgr.Subscribe(64)
	defer stop()
	countLoads := loadCounter(events)
	stream := false
	chat := func() error {
		return l.client.Chat(t.Context(), &api.ChatRequest{Model: "broken", Stream: &stream,
			Messages: []api.Message{{Role: "user", Content: "hi"}}}, func(api.ChatResponse) error { return nil })
	}
	var se api.StatusError
	if err := chat(); !errors.As(err, &se) || se.StatusCode != http.StatusInternalServerError || !strings.Contains(se.ErrorMessage, "truncated") {
		t.Fatalf("first chat: %v", err)
	}
	if n := countLoads(); n != 1 {
		t.Fatalf("the first chat started %d loads", n)
	}
	retries := []func() error{
		chat,
		chat,
		func() error {
			return l.client.Generate(t.Context(), &api.GenerateRequest{Model: "broken", Prompt: "hi", Stream: &stream},
				func(api.GenerateResponse) error { return nil })
		},
		func() error { // streaming, as Ollama's CLI chats
			return l.client.Chat(t.Context(), &api.ChatRequest{Model: "broken", Messages: []api.Message{{Role: "user", Content: "hi"}}},
				func(api.ChatResponse) error { return nil })
		},
		func() error { // an empty chat loads, but it is not Ollama's load call
			return l.client.Chat(t.Context(), &api.ChatRequest{Model: "broken"}, func(api.ChatResponse) error { return nil })
		},
	}
	for i, retry := range retries {
		if err := retry(); !errors.As(err, &se) || se.StatusCode != http.StatusInternalServerError || !strings.Contains(se.ErrorMessage, "the load failed 1 times") {
			t.Fatalf("retry %d within the backoff: %v; want the remembered failure", i, err)
		}
	}
	if n := countLoads(); n != 1 {
		t.Fatalf("%d retries within the backoff started %d more loads; want none", len(retries), n-1)
	}
	m, err := l.Svc.Model("broken")
	if err != nil {
		t.Fatal(err)
	}
	if st := l.Svc.ModelStatus(m); st.State != models.StateFailed {
		t.Fatalf("the model is %s, want failed", st.State)
	}
	// Ollama's load call is explicit: it tries again at once, once, and fails again. (Bounded:
	// a manager that retried an explicit load until it succeeds would never answer.)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	err = l.client.Generate(ctx, &api.GenerateRequest{Model: "broken"}, func(api.GenerateResponse) error { return nil })
	if !errors.As(err, &se) || se.StatusCode != http.StatusInternalServerError || !strings.Contains(se.ErrorMessage, "truncated") {
		t.Fatalf("the load call: %v", err)
	}
	if n := countLoads(); n != 2 {
		t.Fatalf("the load call started %d loads; want 1", n-1)
	}
}

// loadCounter counts the loads the manager's events have announced so far, on each call.
func loadCounter(events <-chan models.Event) func() int {
	loads := 0
	return func() int {
		for {
			select {
			case ev := <-events:
				if ev.Kind == models.EventLoading {
					loads++
				}
			default:
				return loads
			}
		}
	}
}
