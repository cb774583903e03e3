package ollama_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/models"
)

// forever is how far away "keep loaded" puts expires_at, at least (Ollama shows ~292 years).
const forever = 100 * 365 * 24 * time.Hour

// keep_alive on a chat or generation sets how long the model stays loaded after it.
func TestKeepAlive(t *testing.T) {
	tests := []struct {
		name      string
		route     string // "chat" (default) or "generate"
		keepAlive string // raw JSON; "" leaves it out
		unloaded  bool   // the model unloads right after the reply
		expiry    time.Duration
	}{
		{name: "absent: the server's default", expiry: 5 * time.Minute},
		{name: "null: the server's default", keepAlive: `null`, expiry: 5 * time.Minute},
		{name: "zero string", keepAlive: `"0"`, unloaded: true},
		{name: "zero seconds", keepAlive: `0`, unloaded: true},
		{name: "zero duration, generate", route: "generate", keepAlive: `"0s"`, unloaded: true},
		{name: "-1 seconds", keepAlive: `-1`, expiry: forever},
		{name: "-1 as a string", keepAlive: `"-1"`, expiry: forever},
		{name: "negative duration", keepAlive: `"-1m"`, expiry: forever},
		{name: "seconds too large for a duration", keepAlive: `1e300`, expiry: forever},
		{name: "10m", keepAlive: `"10m"`, expiry: 10 * time.Minute},
		{name: "1h30m, generate", route: "generate", keepAlive: `"1h30m"`, expiry: 90 * time.Minute},
		{name: "seconds", keepAlive: `3600`, expiry: time.Hour},
		{name: "fractional seconds", keepAlive: `120.5`, expiry: 120*time.Second + 500*time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := setupLibrary(t, models.Config{})
			e := l.AddModel(t, "tiny", gguftest.TinyLlamaOptions{ChatTemplate: chatML})
			ka := ""
			if tt.keepAlive != "" {
				ka = `,"keep_alive":` + tt.keepAlive
			}
			body := `{"model":"tiny","stream":false,"messages":[{"role":"user","content":"hi"}]` + ka + `}`
			path := "/api/chat"
			if tt.route == "generate" {
				body, path = `{"model":"tiny","stream":false,"prompt":"hi"`+ka+`}`, "/api/generate"
			}
			before := time.Now()
			if resp, b := l.do(t, http.MethodPost, path, body); resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
			}
			if tt.unloaded {
				waitUnloaded(t, l, "tiny")
				if r := l.Runner(e.Path); r.Starts.Load() != 1 || r.Unloads.Load() != 1 {
					t.Errorf("starts %d unloads %d, want 1 and 1", r.Starts.Load(), r.Unloads.Load())
				}
				return
			}
			ps, err := l.client.ListRunning(t.Context())
			if err != nil || len(ps.Models) != 1 {
				t.Fatalf("ps: %+v, %v", ps, err)
			}
			if tt.expiry == forever {
				if ps.Models[0].ExpiresAt.Before(time.Now().Add(forever)) {
					t.Errorf("expires_at %v, want years away", ps.Models[0].ExpiresAt)
				}
				return
			}
			checkExpiry(t, ps.Models[0].ExpiresAt, before, tt.expiry)
		})
	}
}

// waitUnloaded polls the model's state until it is unloaded (the unload runs after the reply).
func waitUnloaded(t *testing.T, l *library, name string) {
	t.Helper()
	m, err := l.Svc.Model(name)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); l.Svc.ModelStatus(m).State != models.StateUnloaded; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the model is still %s", l.Svc.ModelStatus(m).State)
		}
	}
}

func TestKeepAliveInvalid(t *testing.T) {
	l := setupLibrary(t, models.Config{})
	l.AddModel(t, "tiny", gguftest.TinyLlamaOptions{})
	for _, ka := range []string{`"banana"`, `"5x"`, `""`, `true`, `{}`, `[1]`, `"99999999999h"`} {
		for _, route := range []string{"/api/chat", "/api/generate"} {
			body := fmt.Sprintf(`{"model":"tiny","messages":[{"role":"user","content":"hi"}],"prompt":"hi","keep_alive":%s}`, ka)
			resp, b := l.do(t, http.MethodPost, route, body)
			checkError(t, resp, b, http.StatusBadRequest, "invalid keep_alive")
		}
	}
	if m, _ := l.Svc.Model("tiny"); l.Svc.ModelStatus(m).State != models.StateUnloaded {
		t.Error("a refused request loaded the model")
	}
}

// An empty chat or generation loads the model ("load") with its keep-alive, or with keep_alive
// 0 unloads it ("unload"), as Ollama's clients use them.
func TestLoadAndUnload(t *testing.T) {
	l := setupLibrary(t, models.Config{})
	e := l.AddModel(t, "tiny", gguftest.TinyLlamaOptions{})
	m, err := l.Svc.Model("tiny")
	if err != nil {
		t.Fatal(err)
	}
	// unloading a model that is not loaded does not load it first
	var ch []api.ChatResponse
	if err := l.client.Chat(t.Context(), &api.ChatRequest{Model: "tiny", KeepAlive: &api.Duration{}}, func(r api.ChatResponse) error {
		ch = append(ch, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(ch) != 1 || !ch[0].Done || ch[0].DoneReason != "unload" || ch[0].Message.Role != "assistant" {
		t.Errorf("empty chat, keep_alive 0: %+v", ch)
	}
	if r := l.Runner(e.Path); r.Starts.Load() != 0 {
		t.Errorf("unloading loaded the model %d times", r.Starts.Load())
	}

	before := time.Now()
	var gen []api.GenerateResponse
	if err := l.client.Generate(t.Context(), &api.GenerateRequest{Model: "tiny:latest", KeepAlive: &api.Duration{Duration: 10 * time.Minute}},
		func(r api.GenerateResponse) error {
			gen = append(gen, r)
			return nil
		}); err != nil {
		t.Fatal(err)
	}
	if len(gen) != 1 || gen[0].DoneReason != "load" || gen[0].Model != "tiny:latest" {
		t.Errorf("empty generate, keep_alive 10m: %+v", gen)
	}
	st := l.Svc.ModelStatus(m)
	if st.State != models.StateLoaded {
		t.Fatalf("after the load: %s", st.State)
	}
	checkExpiry(t, st.ExpiresAt, before, 10*time.Minute)
	if len(l.Runner(e.Path).Requests()) != 0 {
		t.Error("loading ran a generation")
	}

	// keep_alive -1 from the official client: loaded for good
	if err := l.client.Chat(t.Context(), &api.ChatRequest{Model: "tiny", KeepAlive: &api.Duration{Duration: -1}}, func(api.ChatResponse) error { return nil }); err != nil {
		t.Fatal(err)
	}
	ps, err := l.client.ListRunning(t.Context())
	if err != nil || len(ps.Models) != 1 || ps.Models[0].ExpiresAt.Before(time.Now().Add(forever)) {
		t.Errorf("ps after keep_alive -1: %+v, %v", ps, err)
	}

	resp, b := l.do(t, http.MethodPost, "/api/generate", `{"model":"tiny","keep_alive":0}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("empty generate, keep_alive 0: %d %s", resp.StatusCode, b)
	}
	var got api.GenerateResponse
	if err := json.Unmarshal(b, &got); err != nil || got.DoneReason != "unload" || !got.Done {
		t.Errorf("empty generate, keep_alive 0: %s, %v", b, err)
	}
	if st := l.Svc.ModelStatus(m); st.State != models.StateUnloaded {
		t.Errorf("after unload: %s", st.State)
	}
	ps, err = l.client.ListRunning(t.Context())
	if err != nil || len(ps.Models) != 0 {
		t.Errorf("ps after unload: %+v, %v", ps, err)
	}
}
