package app

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestTeamBookingSwitchE2E: serve --team with an openai lane on a fake vLLM serving two
// models. alice books the lane with the other model starting in two seconds: the lane switches
// at the booking's start (audited as lane.switch), and a POST to a route superfluid has no
// handler for (/v1/score) reaches the upstream under the booked model's name.
func TestTeamBookingSwitchE2E(t *testing.T) {
	var mu sync.Mutex
	var scored map[string]any
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/v1/models":
			fmt.Fprint(w, `{"object":"list","data":[{"id":"ua","max_model_len":4096},{"id":"ub","max_model_len":4096}]}`)
		case "/v1/score":
			mu.Lock()
			_ = json.Unmarshal(body, &scored)
			mu.Unlock()
			fmt.Fprint(w, `{"data": [{"score": 0.25}]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(up.Close)

	cfg := testConfig(t, testModel)
	cfg.Team = true
	keys := teamPeople(t, cfg, "root", "alice")
	_, srv := startServer(t, cfg, false)
	do := teamCaller(t, srv.URL, keys)
	lane := func() map[string]any {
		_, v, _ := do("root", "GET", "/v1/admin/lanes", "")
		if data, _ := v["data"].([]any); len(data) == 1 {
			return data[0].(map[string]any)
		}
		return nil
	}
	if code, _, body := do("root", "POST", "/v1/admin/lanes", `{"name": "up", "engine": "openai", "model": "ua", "url": "`+up.URL+`/v1"}`); code != 201 {
		t.Fatalf("add lane: %d %s", code, body)
	}
	waitLane := func(model string, deadline time.Time) {
		t.Helper()
		for l := lane(); l == nil || l["model"] != model || l["state"] != "serving"; l = lane() {
			if time.Now().After(deadline) {
				t.Fatalf("the lane does not serve %s: %v", model, l)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitLane("ua", time.Now().Add(time.Minute))

	start := time.Now().Add(2 * time.Second)
	code, _, body := do("alice", "POST", "/v1/bookings", `{"lane": "up", "model": "ub", "start": "`+start.UTC().Format(time.RFC3339Nano)+`", "end": "+1h"}`)
	if code != 201 {
		t.Fatalf("alice books up with ub: %d %s", code, body)
	}
	if l := lane(); l["model"] != "ua" {
		t.Fatalf("switched before the booking's start: %v", l)
	}
	waitLane("ub", start.Add(3*time.Second))
	if time.Now().Before(start) {
		t.Fatal("switched before the booking's start")
	}

	if code, v, body := do("alice", "POST", "/v1/score", `{"model": "ub", "text_1": "a", "text_2": "b"}`); code != 200 || v["data"] == nil {
		t.Fatalf("score on the booked lane: %d %s", code, body)
	}
	mu.Lock()
	if scored["model"] != "ub" || scored["text_1"] != "a" {
		t.Errorf("the upstream got %v", scored)
	}
	mu.Unlock()

	switched := func() (bool, string) { // the audit entry follows the switch's start
		_, v, body := do("root", "GET", "/v1/admin/audit", "")
		data, _ := v["data"].([]any)
		for _, e := range data {
			if e := e.(map[string]any); e["action"] == "lane.switch" && e["target"] == "up" &&
				e["detail"].(map[string]any)["model"] == "ub" && e["detail"].(map[string]any)["person"] == "alice" {
				return true, body
			}
		}
		return false, body
	}
	deadline := time.Now().Add(5 * time.Second)
	for ok, body := switched(); !ok; ok, body = switched() {
		if time.Now().After(deadline) {
			t.Fatalf("no lane.switch of up to ub for alice in the audit log:\n%s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
