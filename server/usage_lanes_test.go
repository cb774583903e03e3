package server

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
	"github.com/superfluid/superfluid/server/store"
)

// TestUsageByLane: /v1/usage?group_by=lane names each row's lane and engine kind (the records'
// lane_name and engine), and rows of requests no lane served have an empty lane; without the
// grouping the fields are absent.
func TestUsageByLane(t *testing.T) {
	ctx := context.Background()
	st := servertest.Store(t)
	for i, r := range []store.RequestRecord{
		{LaneName: "big", Engine: "local", PromptTokens: 5, CompletionTokens: 2},
		{LaneName: "big", Engine: "local", PromptTokens: 5, CompletionTokens: 3},
		{LaneName: "vllm", Engine: "openai", PromptTokens: 7, CompletionTokens: 1},
		{},
	} {
		r.ID, r.Model, r.Endpoint, r.Status = "chatcmpl-"+string(rune('a'+i)), "m", "/v1/chat/completions", 200
		if err := st.RecordRequest(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(Config{}, core.New(core.Config{}, st)))
	t.Cleanup(srv.Close)
	get := func(query string) (out []map[string]any) {
		resp, body := servertest.Do(t, "GET", srv.URL+"/v1/usage"+query, "")
		var v struct{ Data []map[string]any }
		if resp.StatusCode != 200 || json.Unmarshal(body, &v) != nil {
			t.Fatalf("usage%s: %d %s", query, resp.StatusCode, body)
		}
		return v.Data
	}
	got := map[string]string{}
	var big float64
	for _, r := range get("?group_by=lane") {
		lane, ok := r["lane"].(string)
		if !ok {
			t.Fatalf("a row without its lane: %v", r)
		}
		got[lane], _ = r["engine"].(string)
		if lane == "big" {
			big, _ = r["completion_tokens"].(float64)
		}
	}
	if len(got) != 3 || got["big"] != "local" || got["vllm"] != "openai" || got[""] != "" || big != 5 {
		t.Errorf("by lane: %v (big's completion tokens %v), want big/local (5), vllm/openai and one row outside lanes", got, big)
	}
	for _, r := range get("") {
		if _, ok := r["lane"]; ok {
			t.Errorf("a row not grouped by lane names one: %v", r)
		}
	}
}
