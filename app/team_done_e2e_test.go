package app

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
)

// TestTeamTwoPeopleTwoLanes is issue 19's "done when", whole: two people with keys share two
// lanes — one local, one forwarded to a second superfluid process — through openai-go. alice's
// booking of the local lane gives bob 403 gpu_reserved (saying until when) until it ends on
// time, while bob is served on the forwarded lane; a switch of the forwarded lane lets alice's
// running stream finish while a new request gets 503 model_switching; usage by person shows
// both people's tokens.
func TestTeamTwoPeopleTwoLanes(t *testing.T) {
	upstream := startServeProcess(t, testModel, "--ctx", "2048", "--parallel", "2")
	cfg := testConfig(t, testModel)
	cfg.Team = true
	keys := teamPeople(t, cfg, "root", "alice", "bob")
	a, srv := startServer(t, cfg, false)
	local := a.preload.ID
	do := teamCaller(t, srv.URL, keys)
	addLanes(t, do, map[string]string{"here": local, "there": "remote"},
		`{"name": "here", "device": "cpu", "engine": "local", "model": "`+local+`"}`,
		`{"name": "there", "device": "cpu", "engine": "openai", "model": "remote", "url": "`+upstream+`", "served_model": "`+modelID(testModel)+`"}`)

	ctx := context.Background()
	ask := func(who, model string, maxTokens int64) (*openai.ChatCompletion, error) {
		return keyClient(srv.URL, keys[who]).Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model,
			MaxTokens: openai.Int(maxTokens), Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Once upon a time")}})
	}
	code, v, body := do("alice", "POST", "/v1/bookings", `{"lane": "here", "start": "now", "end": "+3s"}`)
	if code != 201 || v["state"] != "approved" {
		t.Fatalf("alice books here: %d %s", code, body)
	}
	var end time.Time // Unix seconds
	if n, ok := v["end"].(float64); ok {
		end = time.Unix(int64(n)+1, 0)
	}
	_, err := ask("bob", local, 4)
	var e *openai.Error
	if !errors.As(err, &e) || e.StatusCode != 403 || e.Code != "gpu_reserved" || !strings.Contains(e.Message, "until") {
		t.Fatalf("bob on alice's booked lane: %v, want 403 gpu_reserved until ...", err)
	}
	if res, err := ask("alice", local, 4); err != nil || res.Model != local || res.Usage.CompletionTokens == 0 {
		t.Fatalf("alice on her booked lane: %+v %v", res, err)
	}
	if res, err := ask("bob", "remote", 4); err != nil || res.Model != "remote" || res.Usage.CompletionTokens == 0 {
		t.Fatalf("bob on the forwarded lane during alice's booking: %+v %v", res, err)
	}
	if end.IsZero() {
		t.Fatalf("the booking names no end: %s", body)
	}
	time.Sleep(time.Until(end) + 500*time.Millisecond)
	if res, err := ask("bob", local, 4); err != nil || res.Usage.CompletionTokens == 0 {
		t.Fatalf("bob on the local lane after alice's booking ended: %+v %v", res, err)
	}

	// A switch drains: alice's running stream on the forwarded lane finishes, a new request
	// meanwhile gets model_switching, and then the lane serves the new model.
	stream := keyClient(srv.URL, keys["alice"]).Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "remote",
		MaxTokens: openai.Int(1500), Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Tell me a long story")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
	if !stream.Next() {
		t.Fatalf("alice's stream did not start: %v", stream.Err())
	}
	finished := make(chan error, 1)
	var acc openai.ChatCompletionAccumulator
	acc.AddChunk(stream.Current())
	go func() {
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		finished <- stream.Err()
	}()
	if code, _, body := do("root", "PATCH", "/v1/admin/lanes/there", `{"model": "remote-2"}`); code != 200 {
		t.Fatalf("switch there: %d %s", code, body)
	}
	select {
	case err := <-finished:
		t.Fatalf("alice's stream ended before the switch could be seen draining (%v): make it longer", err)
	default:
	}
	_, err = ask("bob", "remote", 4)
	if !errors.As(err, &e) || e.StatusCode != 503 || e.Code != "model_switching" || e.Response.Header.Get("Retry-After") == "" {
		t.Fatalf("a request while the lane drains: %v, want 503 model_switching with Retry-After", err)
	}
	if err := <-finished; err != nil || len(acc.Choices) != 1 || acc.Choices[0].FinishReason == "" || acc.Usage.CompletionTokens == 0 {
		t.Fatalf("alice's stream across the switch: %v, choices %+v usage %+v", err, acc.Choices, acc.Usage)
	}
	waitLanes(t, do, map[string]string{"here": local, "there": "remote-2"})
	if res, err := ask("bob", "remote-2", 4); err != nil || res.Model != "remote-2" {
		t.Fatalf("bob on the switched lane: %+v %v", res, err)
	}

	// Usage by person shows both people's tokens.
	if err := a.store.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	code, v, body = do("root", "GET", "/v1/usage?group_by=person", "")
	tokens := map[string]float64{}
	for _, r := range v["data"].([]any) {
		row := r.(map[string]any)
		name, _ := row["person_name"].(string)
		tokens[name], _ = row["completion_tokens"].(float64)
	}
	if code != 200 || tokens["alice"] == 0 || tokens["bob"] == 0 {
		raw, _ := json.Marshal(v)
		t.Fatalf("usage by person: %d %s, want alice's and bob's tokens", code, raw)
	}
}
