package app

// Every error of the SlotServe spec's table, and the test that produces it against a real App
// in team mode (the ones marked * in this file, through openai-go):
//
//	401 missing_api_key    TestTeamSpecErrorsE2E*; server.TestTeamKeyErrors
//	401 invalid_api_key    TestTeamSpecErrorsE2E*; TestUsersCommand (a disabled person's key)
//	403 gpu_reserved       TestTeamBookingsE2E (the message says until when); TestTeamBookingGapsE2E
//	409 model_not_loaded   TestTeamLanesE2E (a registered model no lane serves)
//	503 gpu_exclusive      TestTeamBookingsE2E (the owner's own whole-device booking)
//	503 model_switching    TestTeamSpecErrorsE2E* (Retry-After, while a running stream drains)
//	503 model_unavailable  TestTeamLanesE2E (Retry-After, a lane whose engine cannot start)
//	502 upstream_error     TestTeamSpecErrorsE2E*; server/forward.TestForwardDeadlines and
//	                       TestUpstreamFaults (refused, 500, stalls, malformed SSE)

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/openai/openai-go/v3"
)

// heldUpstream is a fake vLLM serving qwen and other: a chat stream sends one chunk, then waits
// for release before it finishes (with usage), so a lane switch has a stream to drain.
type heldUpstream struct {
	*httptest.Server
	started chan struct{}
	release chan struct{}
	once    sync.Once
}

func newHeldUpstream(t *testing.T) *heldUpstream {
	u := &heldUpstream{started: make(chan struct{}, 16), release: make(chan struct{})}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/v1/models":
			fmt.Fprint(w, `{"object":"list","data":[{"id":"qwen","max_model_len":4096},{"id":"other","max_model_len":4096}]}`)
		case "/v1/chat/completions":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"hi\"}}]}\n\n")
			w.(http.Flusher).Flush()
			u.started <- struct{}{}
			select {
			case <-u.release:
			case <-r.Context().Done():
				return
			}
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"+
				"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(func() { u.open(); u.Close() })
	return u
}

func (u *heldUpstream) open() { u.once.Do(func() { close(u.release) }) }

// TestTeamSpecErrorsE2E: the spec's errors no other end-to-end test produces, through openai-go
// against serve --team: 401 missing_api_key and invalid_api_key, 502 upstream_error from an
// upstream that answers 500, 503 model_switching with Retry-After while a lane drains a running
// stream (which finishes). Along the way: the drained stream's record names its lane and engine,
// an empty model routes to a free lane, and the lane writes are audited without the upstream key.
func TestTeamSpecErrorsE2E(t *testing.T) {
	held := newHeldUpstream(t)
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"broken"}]}`)
			return
		}
		http.Error(w, `{"error":{"message":"CUDA out of memory"}}`, http.StatusInternalServerError)
	}))
	t.Cleanup(broken.Close)
	cfg := testConfig(t, testModel)
	cfg.Team = true
	keys := teamPeople(t, cfg, "root", "alice")
	a, srv := startServer(t, cfg, false)
	do := teamCaller(t, srv.URL, keys)
	ctx := context.Background()
	for _, body := range []string{
		`{"name": "up", "engine": "openai", "model": "qwen", "url": "` + held.URL + `/v1"}`,
		`{"name": "down", "engine": "openai", "model": "broken", "url": "` + broken.URL + `/v1", "upstream_key": "sk-upstream-secret-1"}`,
	} {
		if code, _, out := do("root", "POST", "/v1/admin/lanes", body); code != 201 {
			t.Fatalf("add lane: %d %s", code, out)
		}
	}
	waitServing := func(model string) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			_, v, body := do("root", "GET", "/v1/admin/lanes", "")
			data, _ := v["data"].([]any)
			ok := len(data) == 2
			for _, l := range data {
				if m := l.(map[string]any); m["state"] != "serving" || (m["name"] == "up" && m["model"] != model) {
					ok = false
				}
			}
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the lanes do not serve: %s", body)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitServing("qwen")
	chat := func(key, model string) (*openai.ChatCompletion, error) {
		return keyClient(srv.URL, key).Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	}
	refusal := func(what string, err error, status int, code string) *openai.Error {
		t.Helper()
		var e *openai.Error
		if !errors.As(err, &e) || e.StatusCode != status || e.Code != code {
			t.Fatalf("%s: %v, want %d %s", what, err, status, code)
		}
		return e
	}

	_, err := chat("", "qwen")
	refusal("no key", err, 401, "missing_api_key")
	_, err = chat("sk-ss-"+strings.Repeat("0", 48), "qwen")
	refusal("an unknown key", err, 401, "invalid_api_key")
	_, err = chat(keys["alice"], "broken")
	if e := refusal("an upstream answering 500", err, 502, "upstream_error"); !strings.Contains(e.Message, "CUDA out of memory") {
		t.Errorf("the 502 does not say what the upstream said: %q", e.Message)
	}

	// A stream runs on lane up; the lane is switched to other: new requests are refused with
	// model_switching and Retry-After until the stream has finished.
	streamed := make(chan error, 1)
	go func() {
		s := keyClient(srv.URL, keys["alice"]).Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "qwen",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("a long one")}})
		for s.Next() {
		}
		streamed <- s.Err()
	}()
	select {
	case <-held.started:
	case <-time.After(time.Minute):
		t.Fatal("the stream did not reach the upstream")
	}
	if code, _, body := do("root", "PATCH", "/v1/admin/lanes/up", `{"model": "other"}`); code != 200 {
		t.Fatalf("switch: %d %s", code, body)
	}
	for _, model := range []string{"qwen", "other"} {
		_, err = chat(keys["alice"], model)
		if e := refusal("during the drain, "+model, err, 503, "model_switching"); e.Response == nil || e.Response.Header.Get("Retry-After") == "" {
			t.Errorf("model_switching for %s without Retry-After", model)
		}
	}
	held.open()
	if err := <-streamed; err != nil {
		t.Fatalf("the drained stream: %v", err)
	}
	waitServing("other")

	// An empty model goes to a free lane (the first serving one, up).
	if res, err := chat(keys["alice"], ""); err != nil || len(res.Choices) != 1 {
		t.Fatalf("an empty model: %+v %v", res, err)
	}

	// The drained stream is recorded on lane up, engine openai, with the upstream's tokens.
	if err := a.svc.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.store.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	recs, err := a.store.RecentRequests(ctx, 50)
	if err != nil {
		t.Fatal(err)
	}
	var onLanes []string
	for _, r := range recs {
		onLanes = append(onLanes, fmt.Sprintf("%s/%s/%s/%d/%d", r.Model, r.LaneName, r.Engine, r.Status, r.PromptTokens))
	}
	all := strings.Join(onLanes, " ")
	for _, want := range []string{"qwen/up/openai/200/5", "broken/down/openai/502/0"} {
		if !strings.Contains(all, want) {
			t.Errorf("records %s lack %s", all, want)
		}
	}

	// Lane writes are audited by who made them, without the upstream key.
	_, _, audit := do("root", "GET", "/v1/admin/audit", "")
	for _, want := range []string{`"lane.create"`, `"lane.switch"`, `"has_key":true`} {
		if !strings.Contains(audit, want) {
			t.Errorf("the audit log lacks %s: %s", want, audit)
		}
	}
	if strings.Contains(audit, "sk-upstream-secret-1") {
		t.Errorf("the audit log holds the upstream key: %s", audit)
	}
}

// TestTeamBookingGapsE2E: over the real worker, a booking of a model that is not registered is
// a 400 naming it; disabling a person (admin API) ends their running booking, so the other
// person's 403 gpu_reserved goes away and the lane is free; disabling one through the CLI
// cancels their booking ahead. Both are audited.
func TestTeamBookingGapsE2E(t *testing.T) {
	cfg := testConfig(t, testModel)
	cfg.Team = true
	keys := teamPeople(t, cfg, "root", "alice", "bob", "carol")
	a, srv := startServer(t, cfg, false)
	model := a.preload.ID
	do := teamCaller(t, srv.URL, keys)
	serveMainLane(t, do, model)
	chat := func(who string) (int, string) {
		code, _, body := do(who, "POST", "/v1/chat/completions", `{"model": "`+model+`", "max_tokens": 2, "messages": [{"role": "user", "content": "hi"}]}`)
		return code, body
	}

	code, _, body := do("alice", "POST", "/v1/bookings", `{"lane": "main", "model": "nope-7b", "start": "now", "end": "+1h"}`)
	if code != 400 || !strings.Contains(body, "nope-7b") {
		t.Fatalf("booking an unregistered model: %d %s, want a 400 naming it", code, body)
	}
	code, v, body := do("alice", "POST", "/v1/bookings", `{"lane": "main", "start": "now", "end": "+1h"}`)
	if code != 201 {
		t.Fatalf("alice books main: %d %s", code, body)
	}
	booking := v["id"].(string)
	if code, body := chat("bob"); code != 403 || !strings.Contains(body, "gpu_reserved") {
		t.Fatalf("bob during alice's booking: %d %s", code, body)
	}
	if code, _, body := do("root", "PATCH", "/v1/admin/users/alice", `{"state": "disabled"}`); code != 200 {
		t.Fatalf("disable alice: %d %s", code, body)
	}
	if code, body := chat("bob"); code != 200 {
		t.Fatalf("bob once alice is disabled: %d %s, want the lane free", code, body)
	}

	if code, _, body := do("carol", "POST", "/v1/bookings", `{"lane": "main", "start": "+2h", "end": "+3h"}`); code != 201 {
		t.Fatalf("carol books ahead: %d %s", code, body)
	}
	if code, _, errOut := cli("users", "disable", "carol", "--data-dir", cfg.DataDir); code != 0 {
		t.Fatalf("users disable carol: %d %s", code, errOut)
	}
	_, v, body = do("root", "GET", "/v1/admin/bookings", "")
	states := map[string]string{}
	for _, b := range v["data"].([]any) {
		m := b.(map[string]any)
		states[m["person"].(string)] = m["state"].(string)
	}
	if states["alice"] != "ended" || states["carol"] != "cancelled" {
		t.Fatalf("bookings after the disables: %v (%s), want alice's ended and carol's cancelled", states, body)
	}
	_, _, audit := do("root", "GET", "/v1/admin/audit", "")
	if n := strings.Count(audit, `"booking.cancel"`); n != 2 || !strings.Contains(audit, booking) {
		t.Errorf("the audit log has %d booking.cancel entries, want 2 (alice's %s, carol's): %s", n, booking, audit)
	}
}
