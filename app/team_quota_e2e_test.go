package app

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
)

// TestTeamQuotaE2E: serve --team with a person's daily quota set through superfluid users
// quota (bad values refused, exit 2). Alice's stream, through openai-go, is admitted under
// the quota and runs to its end though its tokens pass it; her next request is 429
// quota_exceeded with Retry-After; bob is not affected; superfluid usage and GET /v1/usage say
// nothing is left of hers; a batch of hers fails its line with quota_exceeded.
func TestTeamQuotaE2E(t *testing.T) {
	cfg := testConfig(t, testModel)
	cfg.Team = true
	keys := teamPeople(t, cfg, "root", "alice", "bob")
	for _, bad := range [][]string{{"--daily", "-5"}, {"--daily", "ten"}, {"--monthly", "1.5"}} {
		if code, _, errOut := cli(append([]string{"users", "quota", "alice", "--data-dir", cfg.DataDir}, bad...)...); code != 2 {
			t.Errorf("users quota %v: exit %d %s, want 2", bad, code, errOut)
		}
	}
	if code, _, _ := cli("users", "quota", "nobody", "--daily", "5", "--data-dir", cfg.DataDir); code != 2 {
		t.Errorf("users quota for nobody: exit %d, want 2", code)
	}
	code, out, errOut := cli("users", "quota", "alice", "--daily", "10", "--data-dir", cfg.DataDir)
	if code != 0 || !strings.Contains(strings.Join(strings.Fields(out), " "), "alice day 10 0 10") || !strings.Contains(out, "unlimited (default)") {
		t.Fatalf("users quota alice --daily 10: %d %q %s", code, out, errOut)
	}
	a, srv := startServer(t, cfg, false)
	do := teamCaller(t, srv.URL, keys)
	serveMainLane(t, do, a.preload.ID)
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{Model: a.preload.ID, MaxTokens: openai.Int(16),
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Tell me a story.")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}}
	stream := keyClient(srv.URL, keys["alice"]).Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("alice's stream: %v", err)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].FinishReason == "" || acc.Usage.CompletionTokens == 0 || acc.Usage.TotalTokens <= 10 {
		t.Fatalf("alice's stream did not run to its end: %+v usage %+v", acc.Choices, acc.Usage)
	}
	_, err := keyClient(srv.URL, keys["alice"]).Chat.Completions.New(ctx, params)
	var e *openai.Error
	if !errors.As(err, &e) || e.StatusCode != 429 || e.Code != "quota_exceeded" || !strings.Contains(e.Message, "resets at") {
		t.Fatalf("alice past her quota: %v, want 429 quota_exceeded", err)
	}
	if n, err := strconv.Atoi(e.Response.Header.Get("Retry-After")); err != nil || n < 1 || n > 86400 {
		t.Errorf("Retry-After %q, want seconds until midnight UTC", e.Response.Header.Get("Retry-After"))
	}
	if _, err := keyClient(srv.URL, keys["bob"]).Chat.Completions.New(ctx, params); err != nil {
		t.Errorf("bob: %v", err)
	}
	// A batch is no way around the quota: its lines never pass the HTTP limits, so each is
	// admitted on its own, and alice's fails with quota_exceeded.
	alice := keyClient(srv.URL, keys["alice"])
	b := waitBatch(t, alice, createBatch(t, alice, batchInput(a.preload.ID, 1, 4)).ID, "alice's batch", batchEnded)
	if b.RequestCounts.Failed != 1 || b.ErrorFileID == "" {
		t.Fatalf("alice's batch past her quota: %+v, want its one line failed", b.RequestCounts)
	}
	if raw, _ := outputLines(t, alice, b.ErrorFileID); !strings.Contains(string(raw), "quota_exceeded") {
		t.Errorf("alice's batch error file: %s, want quota_exceeded", raw)
	}
	a.quota.Settled()
	status, v, body := do("alice", "GET", "/v1/usage", "")
	q, _ := v["quota"].(map[string]any)
	if status != 200 || q == nil || q["daily_remaining"] != 0.0 || q["daily_used"] != float64(acc.Usage.TotalTokens) {
		t.Errorf("alice's usage: %d %s", status, body)
	}
	code, out, errOut = cli("usage", "--by", "person", "--data-dir", cfg.DataDir)
	if code != 0 || !strings.Contains(out, "QUOTA") || !strings.Contains(out, strconv.FormatInt(acc.Usage.TotalTokens, 10)+" / 10") {
		t.Errorf("superfluid usage: %d %q %s", code, out, errOut)
	}
}
