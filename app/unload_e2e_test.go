package app

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/runtime/worker"
)

// slowServer runs the real app on a model big enough that a few hundred tokens take a moment
// on any machine, with one lane, loaded; it returns the app, the server, the model's id and its
// worker client.
func slowServer(t *testing.T) (*App, *httptest.Server, string, *worker.Client) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "slow.gguf")
	if err := gguftest.WriteTinyLlama(path, gguftest.TinyLlamaOptions{Embd: 512, Layers: 4, Heads: 8, KVHeads: 8, FF: 1536, Q8: true}); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, path)
	cfg.Parallel = 1
	a, srv := startServer(t, cfg, true)
	return a, srv, "slow", a.Worker()
}

// longStream starts a streamed chat of tokens tokens; its channel gets the completion tokens
// the stream reported at its end (-1 for an error frame or a broken stream).
func longStream(t *testing.T, url, model string, tokens int) <-chan int {
	out := make(chan int, 1)
	body := chatJSON(model, "Once upon a time", fmt.Sprintf(`,"max_tokens":%d,"ignore_eos":true,"stream":true`, tokens))
	go func() {
		res, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Error(err)
			out <- -1
			return
		}
		defer res.Body.Close()
		out <- streamedTokens(t, res.Body)
	}()
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// unloadedForGood checks that the model is unloaded and that no worker runs for it: neither
// the one that served it nor one its client started on demand, unknown to the manager.
func unloadedForGood(t *testing.T, a *App, model string, w *worker.Client, pid int) {
	t.Helper()
	e, err := a.Manager().Catalog().Lookup(model)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the model unloaded", func() bool { return a.Manager().Status(e).State == models.StateUnloaded })
	if got := w.PID(); got != 0 {
		t.Fatalf("worker %d runs for %s while the manager lists the model as unloaded (the one unloaded was %d)", got, model, pid)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("the unloaded worker %d still runs", pid)
	}
}

// TestUnloadWithARequestAtTheGate: the model's one lane is busy and a second request waits at
// the QoS gate when an admin unloads it. The waiter runs before the unload completes (or gets
// a clean error); afterwards no worker runs that the manager does not list.
func TestUnloadWithARequestAtTheGate(t *testing.T) {
	a, srv, model, w := slowServer(t)
	pid := w.PID()
	running := longStream(t, srv.URL, model, 300)
	waitFor(t, "the lane busy", func() bool { return w.InFlight() == 1 })
	waiting := sendChat(srv.URL, model)
	m, err := a.Service().Model(model)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a request waiting at the gate", func() bool { return m.Waiting() == 1 })
	status, _, b := post(t, srv.URL+"/v1/models/unload", fmt.Sprintf(`{"model":%q}`, model))
	if status != 200 {
		t.Fatalf("unload: %d %s", status, b)
	}
	if n := <-running; n != 300 {
		t.Fatalf("the running stream got %d tokens, want all 300 (the unload drains it)", n)
	}
	// It ran before the unload completed, or it was refused with a clean error.
	if r := <-waiting; r.status != 200 && (r.status != 500 || !strings.Contains(r.body, "unloaded before this request")) {
		t.Fatalf("the request waiting at the gate: %d %s", r.status, r.body)
	}
	unloadedForGood(t, a, model, w, pid)
}

// TestUnloadOutlivesTheAdminsConnection: an admin unloads a model while a long generation of
// another user runs and hangs up at once. The generation completes normally, and the unload
// still happens, after it.
func TestUnloadOutlivesTheAdminsConnection(t *testing.T) {
	a, srv, model, w := slowServer(t)
	pid := w.PID()
	e, err := a.Manager().Catalog().Lookup(model)
	if err != nil {
		t.Fatal(err)
	}
	running := longStream(t, srv.URL, model, 300)
	waitFor(t, "generating", func() bool { return w.InFlight() == 1 })
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/models/unload", strings.NewReader(fmt.Sprintf(`{"model":%q}`, model)))
	req.Header.Set("Content-Type", "application/json")
	sent := make(chan error, 1)
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
		}
		sent <- err
	}()
	waitFor(t, "the unload under way", func() bool { return a.Manager().Status(e).State == models.StateUnloading })
	cancel() // the admin's connection drops
	<-sent
	if n := <-running; n != 300 {
		t.Fatalf("the generation running during the unload got %d tokens, want all 300", n)
	}
	unloadedForGood(t, a, model, w, pid)
}

// chatReply is a reply's status and body (status 0: the request failed, body its error).
type chatReply struct {
	status int
	body   string
}

// sendChat sends a short chat on model from a goroutine; its reply comes on the channel.
func sendChat(base, model string) <-chan chatReply {
	waiting := make(chan chatReply, 1)
	go func() {
		res, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(chatJSON(model, "hi", `,"max_tokens":4`)))
		if err != nil {
			waiting <- chatReply{0, err.Error()}
			return
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		waiting <- chatReply{res.StatusCode, string(b)}
	}()
	return waiting
}
