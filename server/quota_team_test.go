package server

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/quota"
	"github.com/superfluid/superfluid/server/servertest"
	"github.com/superfluid/superfluid/server/store"
)

// quotaReply is what the fake model answers: 50 tokens, one per byte.
var quotaReply = strings.Repeat("abcdefghij", 5)

// quotaTeam is a team-mode server over a real SQLite store: root (an admin), alice (two
// keys) and bob, token quotas under policy and a person's concurrency cap.
type quotaTeam struct {
	url    string
	st     *store.Store
	quotas *quota.Service
	engine *enginetest.Engine
	keys   map[string]string // by key name: root, alice, alice2, bob
}

func newQuotaTeam(t *testing.T, policy quota.Policy, personConcurrency int) *quotaTeam {
	t.Helper()
	ctx := context.Background()
	st := servertest.Store(t)
	keys, err := auth.New(ctx, auth.Config{Store: st, Required: true})
	if err != nil {
		t.Fatal(err)
	}
	ppl := people.New(people.Config{Store: st, Keys: keys, Hash: people.HashParams{Memory: 64, Time: 1, Threads: 1}})
	for _, np := range []people.NewPerson{{Name: "root", Password: "password0", Role: people.RoleAdmin},
		{Name: "alice", Password: "password1"}, {Name: "bob", Password: "password2"}} {
		if _, err := ppl.Create(ctx, people.CLI, np); err != nil {
			t.Fatal(err)
		}
	}
	qt := &quotaTeam{st: st, keys: map[string]string{}, engine: enginetest.New(512, quotaReply)}
	for name, person := range map[string]string{"root": "root", "alice": "alice", "alice2": "alice", "bob": "bob"} {
		k, _, err := keys.Create(ctx, auth.NewKey{Name: name, Person: person})
		if err != nil {
			t.Fatal(err)
		}
		qt.keys[name] = k
	}
	qt.quotas = quota.New(quota.Config{Store: st, Policy: policy})
	tmpl, _ := chat.Parse("")
	svc := core.New(core.Config{}, st, &core.Model{ID: "fake", Path: "/m/fake.gguf", Engine: qt.engine, Template: tmpl})
	limits := NewLimits(LimitsConfig{Quota: qt.quotas, PersonConcurrency: personConcurrency})
	srv := httptest.NewServer(New(Config{Keys: keys, People: ppl, Quota: qt.quotas, Limits: limits}, svc))
	t.Cleanup(srv.Close)
	qt.url = srv.URL
	return qt
}

// do sends a request with key's key and decodes the JSON answer.
func (qt *quotaTeam) do(t *testing.T, key, method, path, body string) (*http.Response, map[string]any) {
	t.Helper()
	resp, b := servertest.Do(t, method, qt.url+path, body, "Authorization", "Bearer "+qt.keys[key], "Content-Type", "application/json")
	var v map[string]any
	_ = json.Unmarshal(b, &v)
	return resp, v
}

func (qt *quotaTeam) chat(t *testing.T, key string, maxTokens int) (*http.Response, map[string]any) {
	t.Helper()
	return qt.do(t, key, "POST", "/v1/chat/completions", `{"model": "fake", "max_tokens": `+strconv.Itoa(maxTokens)+`, "messages": [{"role": "user", "content": "hi"}]}`)
}

// openStream starts a streamed chat with key's key and returns its reader once the first
// event has arrived (the request is admitted and running).
func (qt *quotaTeam) openStream(t *testing.T, key string) (*http.Response, *bufio.Reader) {
	t.Helper()
	req, _ := http.NewRequest("POST", qt.url+"/v1/chat/completions", strings.NewReader(
		`{"model": "fake", "stream": true, "stream_options": {"include_usage": true}, "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+qt.keys[key])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	r := bufio.NewReader(resp.Body)
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "data: ") {
		t.Fatalf("first event: %q %v", line, err)
	}
	return resp, r
}

// readStream reads the rest of a stream: its content and its usage chunk's total.
func readStream(t *testing.T, r *bufio.Reader) (content string, total int64, done bool) {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return content, total, done
		}
		data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
			Usage *struct {
				Total int64 `json:"total_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		for _, c := range chunk.Choices {
			content += c.Delta.Content
		}
		if chunk.Usage != nil {
			total = chunk.Usage.Total
		}
	}
}

func errorOf(v map[string]any) (code, message string) {
	e, _ := v["error"].(map[string]any)
	code, _ = e["code"].(string)
	message, _ = e["message"].(string)
	return code, message
}

// TestQuotaRunsOutMidStream: a stream admitted under alice's daily quota runs to its end
// although its tokens pass the quota; the next request of hers is 429 quota_exceeded with
// Retry-After until midnight UTC and the reset in the message; bob is not affected; her usage
// says nothing is left.
func TestQuotaRunsOutMidStream(t *testing.T) {
	qt := newQuotaTeam(t, quota.Policy{DailyTokens: 30}, 0)
	qt.engine.TokenDelay = time.Millisecond
	_, r := qt.openStream(t, "alice")
	content, total, done := readStream(t, r)
	if !done || !strings.HasSuffix(quotaReply, content) || len(content) < len(quotaReply)-1 || total < 50 {
		t.Fatalf("the stream was cut: %d bytes of content, total %d, [DONE] %v", len(content), total, done)
	}
	resp, v := qt.chat(t, "alice2", 4)
	code, msg := errorOf(v)
	if resp.StatusCode != 429 || code != "quota_exceeded" {
		t.Fatalf("after the stream: %d %v, want 429 quota_exceeded", resp.StatusCode, v)
	}
	now := time.Now().UTC()
	midnight := quota.DayStart(now).AddDate(0, 0, 1)
	retry, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if want := int(midnight.Sub(now).Seconds()); retry < want-5 || retry > want+5 {
		t.Errorf("Retry-After %q, want about %d (midnight UTC)", resp.Header.Get("Retry-After"), want)
	}
	if !strings.Contains(msg, midnight.Format("2006-01-02 15:04 MST")) || !strings.Contains(msg, "alice may use 30 tokens a day") {
		t.Errorf("message %q does not name the quota and its reset", msg)
	}
	if resp, v := qt.chat(t, "bob", 2); resp.StatusCode != 200 {
		t.Errorf("bob: %d %v", resp.StatusCode, v)
	}
	qt.quotas.Settled()
	resp, v = qt.do(t, "alice", "GET", "/v1/usage", "")
	q, _ := v["quota"].(map[string]any)
	if resp.StatusCode != 200 || q == nil || q["daily_tokens"] != 30.0 || q["daily_remaining"] != 0.0 ||
		q["daily_used"] != float64(total) || q["daily_resets_at"] != float64(midnight.Unix()) || q["monthly_tokens"] != nil {
		t.Errorf("alice's usage: %d quota %v, want 30 a day, %d used, none left", resp.StatusCode, v["quota"], total)
	}
	// An admin grouping by person sees each person's quota on their rows.
	_, v = qt.do(t, "root", "GET", "/v1/usage?group_by=person", "")
	rows, _ := v["data"].([]any)
	seen := map[string]any{}
	for _, row := range rows {
		row := row.(map[string]any)
		if q, ok := row["quota"].(map[string]any); ok {
			seen[row["person_name"].(string)] = q["daily_remaining"]
		}
	}
	if len(seen) != 2 || seen["alice"] != 0.0 || seen["bob"] == nil {
		t.Errorf("admin by person: quotas %v, want alice's and bob's", seen)
	}
}

// TestPersonConcurrencyCap: with --person-concurrency 1, a second request of alice's through
// her other key, while her stream runs, is 429 concurrency_limit_exceeded; bob is not
// affected; once her stream ends she may send again. Listings are not model requests.
func TestPersonConcurrencyCap(t *testing.T) {
	qt := newQuotaTeam(t, quota.Policy{}, 1)
	qt.engine.TokenDelay = 20 * time.Millisecond
	_, r := qt.openStream(t, "alice")
	resp, v := qt.chat(t, "alice2", 2)
	if code, _ := errorOf(v); resp.StatusCode != 429 || code != "concurrency_limit_exceeded" || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("alice's second request: %d %v, want 429 concurrency_limit_exceeded", resp.StatusCode, v)
	}
	if resp, _ := qt.do(t, "alice2", "GET", "/v1/usage", ""); resp.StatusCode != 200 {
		t.Errorf("alice's usage while at her cap: %d", resp.StatusCode)
	}
	if resp, v := qt.chat(t, "bob", 2); resp.StatusCode != 200 {
		t.Errorf("bob while alice is at her cap: %d %v", resp.StatusCode, v)
	}
	if _, _, done := readStream(t, r); !done {
		t.Fatal("alice's stream did not finish")
	}
	deadline := time.Now().Add(5 * time.Second) // the stream's handler returns after its last byte
	for {
		resp, v := qt.chat(t, "alice2", 2)
		if resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after alice's stream: %d %v", resp.StatusCode, v)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestQuotaAdminAPI: an admin sets a person's and a key's quotas (audited); bad values are
// 400; a member may not (403); null goes back to the default; a key's quota refuses that key
// only.
func TestQuotaAdminAPI(t *testing.T) {
	qt := newQuotaTeam(t, quota.Policy{DailyTokens: 1000}, 0)
	resp, v := qt.do(t, "root", "PATCH", "/v1/admin/users/alice", `{"daily_tokens": 0, "monthly_tokens": 5000}`)
	if resp.StatusCode != 200 || v["daily_tokens"] != 0.0 || v["monthly_tokens"] != 5000.0 || v["name"] != "alice" {
		t.Fatalf("set alice's quotas: %d %v", resp.StatusCode, v)
	}
	for _, body := range []string{`{"daily_tokens": -1}`, `{"daily_tokens": "ten"}`, `{"daily_tokens": 1.5}`,
		`{"monthly_tokens": true}`, `{"monthly_tokens": -5}`, `{"daily": 5}`} {
		if resp, v := qt.do(t, "root", "PATCH", "/v1/admin/users/alice", body); resp.StatusCode != 400 {
			t.Errorf("users %s: %d %v, want 400", body, resp.StatusCode, v)
		}
		if resp, v := qt.do(t, "root", "PATCH", "/v1/admin/keys/bob", body); resp.StatusCode != 400 {
			t.Errorf("keys %s: %d %v, want 400", body, resp.StatusCode, v)
		}
	}
	for _, path := range []string{"/v1/admin/users/bob", "/v1/admin/keys/bob"} {
		resp, v := qt.do(t, "bob", "PATCH", path, `{"daily_tokens": 0}`)
		if code, _ := errorOf(v); resp.StatusCode != 403 || code != "admin_required" {
			t.Errorf("bob sets his own quota at %s: %d %v, want 403 admin_required", path, resp.StatusCode, v)
		}
	}
	if resp, v := qt.do(t, "root", "PATCH", "/v1/admin/keys/nobody", `{"daily_tokens": 1}`); resp.StatusCode != 404 {
		t.Errorf("unknown key: %d %v", resp.StatusCode, v)
	}
	resp, v = qt.do(t, "root", "PATCH", "/v1/admin/keys/alice2", `{"daily_tokens": 1}`)
	if resp.StatusCode != 200 || v["daily_tokens"] != 1.0 || v["monthly_tokens"] != nil || v["name"] != "alice2" {
		t.Fatalf("set alice2's quota: %d %v", resp.StatusCode, v)
	}
	if resp, v := qt.chat(t, "alice2", 2); resp.StatusCode != 200 {
		t.Fatalf("alice2, nothing spent: %d %v", resp.StatusCode, v)
	}
	qt.quotas.Settled()
	resp, v = qt.chat(t, "alice2", 2)
	if code, msg := errorOf(v); resp.StatusCode != 429 || code != "quota_exceeded" || !strings.Contains(msg, `the API key "alice2"`) {
		t.Errorf("alice2 past its own quota: %d %v", resp.StatusCode, v)
	}
	if resp, v := qt.chat(t, "alice", 2); resp.StatusCode != 200 {
		t.Errorf("alice's other key: %d %v", resp.StatusCode, v)
	}
	_, v = qt.do(t, "alice2", "GET", "/v1/usage", "")
	if kq, _ := v["key_quota"].(map[string]any); kq == nil || kq["daily_remaining"] != 0.0 {
		t.Errorf("alice2's usage: key_quota %v", v["key_quota"])
	}
	resp, v = qt.do(t, "root", "PATCH", "/v1/admin/users/alice", `{"daily_tokens": null}`)
	if resp.StatusCode != 200 || v["daily_tokens"] != nil || v["monthly_tokens"] != 5000.0 {
		t.Errorf("alice's daily quota back to the default: %d %v", resp.StatusCode, v)
	}
	_, v = qt.do(t, "root", "GET", "/v1/admin/audit?action=user.quota", "")
	entries, _ := v["data"].([]any)
	if len(entries) != 2 {
		t.Fatalf("user.quota audit entries: %v", v)
	}
	last := entries[0].(map[string]any)
	detail, _ := last["detail"].(map[string]any)
	if last["target"] != "alice" || detail["daily_tokens"] == nil || detail["monthly_tokens"] != nil {
		t.Errorf("the last user.quota entry: %v", last)
	}
	_, v = qt.do(t, "root", "GET", "/v1/admin/audit?action=key.quota", "")
	if entries, _ := v["data"].([]any); len(entries) != 1 {
		t.Errorf("key.quota audit entries: %v", v)
	}
}
