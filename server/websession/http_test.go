package websession

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const testToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func startFake(t *testing.T, cfg Config) (*fakeSession, *httptest.Server, *Handler) {
	t.Helper()
	f := newFake()
	if cfg.Token == "" {
		cfg.Token = testToken
	}
	h := New(f, cfg)
	srv := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); srv.Close() })
	return f, srv, h
}

// post sends body to path with the given headers (a nil map: the token).
func post(t *testing.T, srv *httptest.Server, path, body string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
	if hdr == nil {
		hdr = map[string]string{"Authorization": "Bearer " + testToken}
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func errorCode(t *testing.T, b []byte) string {
	t.Helper()
	var e struct {
		Error struct{ Code, Type, Message string } `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Error.Type == "" || e.Error.Message == "" {
		t.Fatalf("not an OpenAI error: %s (%v)", b, err)
	}
	return e.Error.Code
}

// rpc calls method over POST /web/rpc and returns the reply.
func rpc(t *testing.T, srv *httptest.Server, method string, params any) Reply {
	t.Helper()
	p, _ := json.Marshal(params)
	resp, b := post(t, srv, "/web/rpc", `{"id":1,"method":"`+method+`","params":`+string(p)+`}`, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %d %s", method, resp.StatusCode, b)
	}
	var r Reply
	if err := json.Unmarshal(b, &r); err != nil || string(r.ID) != "1" {
		t.Fatalf("%s: reply %s (%v)", method, b, err)
	}
	if r.Error == nil {
		raw, _ := json.Marshal(r.Result)
		r.Result = json.RawMessage(raw)
	}
	return r
}

func TestHealthNeedsNoToken(t *testing.T) {
	_, srv, _ := startFake(t, Config{})
	resp, err := http.Get(srv.URL + "/web/health")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.TrimSpace(string(b)) != `{"status":"ok"}` {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}

func TestTokenRequired(t *testing.T) {
	_, srv, _ := startFake(t, Config{AdminKey: func(k string) bool { return k == "sk-admin" }})
	body := `{"id":1,"method":"models.list"}`
	for name, hdr := range map[string]map[string]string{
		"missing":   {},
		"wrong":     {"Authorization": "Bearer " + strings.Repeat("f", 64)},
		"prefix":    {"Authorization": "Bearer " + testToken[:32]},
		"not admin": {"Authorization": "Bearer sk-member"},
	} {
		for _, path := range []string{"/web/rpc", "/web/stream"} {
			resp, b := post(t, srv, path, body, hdr)
			if resp.StatusCode != 401 || errorCode(t, b) != "invalid_token" {
				t.Fatalf("%s token on %s: %d %s", name, path, resp.StatusCode, b)
			}
		}
	}
	for _, hdr := range []map[string]string{
		{"Authorization": "Bearer " + testToken}, {"Authorization": "Bearer sk-admin"}, {"X-Api-Key": "sk-admin"},
	} {
		if resp, b := post(t, srv, "/web/rpc", body, hdr); resp.StatusCode != 200 {
			t.Fatalf("%v: %d %s", hdr, resp.StatusCode, b)
		}
	}
}

func TestOriginAndHost(t *testing.T) {
	_, srv, _ := startFake(t, Config{})
	u, _ := url.Parse(srv.URL)
	port := u.Port()
	auth := "Bearer " + testToken
	body := `{"id":1,"method":"models.list"}`
	refused := map[string]map[string]string{
		"other site":        {"Origin": "http://evil.example"},
		"other local port":  {"Origin": "http://127.0.0.1:1"},
		"https origin":      {"Origin": "https://127.0.0.1:" + port},
		"null origin":       {"Origin": "null"},
		"userinfo trick":    {"Origin": "http://127.0.0.1:" + port + "@evil.example"},
		"cross-site fetch":  {"Sec-Fetch-Site": "cross-site"},
		"same-site fetch":   {"Sec-Fetch-Site": "same-site"},
		"rebound host":      {"Host": "evil.example:" + port},
		"rebound host bare": {"Host": "evil.example"},
		"other host port":   {"Host": "127.0.0.1:1"},
	}
	for name, hdr := range refused {
		hdr["Authorization"] = auth
		resp, b := post(t, srv, "/web/rpc", body, hdr)
		want := "cross_origin"
		if _, ok := hdr["Host"]; ok {
			want = "invalid_host"
		}
		if resp.StatusCode != 403 || errorCode(t, b) != want {
			t.Fatalf("%s: %d %s", name, resp.StatusCode, b)
		}
		if resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Fatalf("%s: CORS header sent", name)
		}
	}
	// The page itself (GET /) is refused under a rebound Host too: no page for another site.
	req, _ := http.NewRequest("GET", srv.URL+"/", nil)
	req.Host = "evil.example:" + port
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 403 {
		t.Fatalf("page under a rebound host: %v %v", resp.StatusCode, err)
	}
	for _, hdr := range []map[string]string{
		{"Origin": "http://127.0.0.1:" + port}, {"Origin": "http://localhost:" + port},
		{"Host": "localhost:" + port}, {"Sec-Fetch-Site": "same-origin"}, {"Sec-Fetch-Site": "none"},
	} {
		hdr["Authorization"] = auth
		if resp, b := post(t, srv, "/web/rpc", body, hdr); resp.StatusCode != 200 {
			t.Fatalf("%v: %d %s", hdr, resp.StatusCode, b)
		}
	}
}

func TestRPCMethods(t *testing.T) {
	f, srv, _ := startFake(t, Config{})
	if r := rpc(t, srv, "models.list", nil); r.Error != nil || !strings.Contains(string(r.Result.(json.RawMessage)), `"id":"tiny","quantization":"Q8_0"`) {
		t.Fatalf("models.list: %+v %s", r.Error, r.Result)
	}
	if r := rpc(t, srv, "models.load", map[string]string{"model": "tiny"}); r.Error != nil || !strings.Contains(string(r.Result.(json.RawMessage)), `"state":"loaded"`) {
		t.Fatalf("models.load: %+v %s", r.Error, r.Result)
	}
	if r := rpc(t, srv, "models.load", map[string]string{"model": "nope"}); r.Error == nil || r.Error.Code != CodeNotFound {
		t.Fatalf("load of a missing model: %+v", r)
	}
	if r := rpc(t, srv, "models.load", map[string]string{}); r.Error == nil || r.Error.Code != CodeInvalidParams {
		t.Fatalf("load without a model: %+v", r)
	}
	if r := rpc(t, srv, "models.frobnicate", nil); r.Error == nil || r.Error.Code != CodeUnknownMethod {
		t.Fatalf("unknown method: %+v", r)
	}
	if r := rpc(t, srv, "models.load", map[string]any{"model": "tiny", "extra": 1}); r.Error == nil || r.Error.Code != CodeInvalidParams {
		t.Fatalf("unknown param: %+v", r)
	}
	// A whole chat over rpc: the system prompt leads, sampling reaches the session.
	r := rpc(t, srv, "chat", map[string]any{"model": "tiny", "system": "Be brief.", "temperature": 0, "top_p": 0.5, "seed": 9, "max_tokens": 12,
		"messages": []Message{{Role: "user", Content: "hi"}}})
	if r.Error != nil || !strings.Contains(string(r.Result.(json.RawMessage)), `"text":"Hello, world."`) {
		t.Fatalf("chat: %+v %s", r.Error, r.Result)
	}
	if f.lastChat != (ChatSettings{Model: "tiny", Temperature: 0, TopP: 0.5, MaxTokens: 12, Seed: 9}) ||
		len(f.lastMsgs) != 2 || !reflect.DeepEqual(f.lastMsgs[0], Message{Role: "system", Content: "Be brief."}) {
		t.Fatalf("chat reached the session as %+v %+v", f.lastChat, f.lastMsgs)
	}
	for _, bad := range []map[string]any{
		{"model": "tiny"}, {"messages": []Message{{Role: "user", Content: "x"}}},
		{"model": "tiny", "temperature": 3, "messages": []Message{{Role: "user", Content: "x"}}},
		{"model": "tiny", "messages": []Message{{Role: "tool", Content: "x"}}},
	} {
		if r := rpc(t, srv, "chat", bad); r.Error == nil || r.Error.Code != CodeInvalidParams {
			t.Fatalf("chat %v: %+v", bad, r)
		}
	}
	// Conversations: save makes an id, get returns the messages, delete removes it.
	r = rpc(t, srv, "conversations.save", Conversation{Title: "t", Model: "tiny", Messages: []Message{{Role: "user", Content: "hi"}}})
	var saved struct{ ID string }
	if r.Error != nil || json.Unmarshal(r.Result.(json.RawMessage), &saved) != nil || !strings.HasPrefix(saved.ID, "conv-") {
		t.Fatalf("save: %+v %s", r.Error, r.Result)
	}
	if r := rpc(t, srv, "conversations.get", map[string]string{"id": saved.ID}); r.Error != nil || !strings.Contains(string(r.Result.(json.RawMessage)), `"content":"hi"`) {
		t.Fatalf("get: %+v %s", r.Error, r.Result)
	}
	if r := rpc(t, srv, "conversations.list", nil); r.Error != nil || !strings.Contains(string(r.Result.(json.RawMessage)), saved.ID) {
		t.Fatalf("list: %+v %s", r.Error, r.Result)
	}
	if r := rpc(t, srv, "conversations.delete", map[string]string{"id": saved.ID}); r.Error != nil {
		t.Fatalf("delete: %+v", r.Error)
	}
	if r := rpc(t, srv, "conversations.get", map[string]string{"id": saved.ID}); r.Error == nil || r.Error.Code != CodeNotFound {
		t.Fatalf("get after delete: %+v", r)
	}
	if r := rpc(t, srv, "settings.set", map[string]any{"model": "tiny", "settings": map[string]any{"lanes": 3}}); r.Error != nil || !strings.Contains(string(r.Result.(json.RawMessage)), `"lanes":3`) {
		t.Fatalf("settings.set: %+v %s", r.Error, r.Result)
	}
	if r := rpc(t, srv, "settings.get", map[string]string{"model": "nope"}); r.Error == nil || r.Error.Code != CodeNotFound {
		t.Fatalf("settings of a missing model: %+v", r)
	}
}

func TestRPCBadBodies(t *testing.T) {
	_, srv, _ := startFake(t, Config{})
	for _, body := range []string{`{`, `[1]`, `{"id":1}`, `{"id":1,"method":"models.list"} {}`, `{"id":1,"method":"x","bogus":1}`} {
		resp, b := post(t, srv, "/web/rpc", body, nil)
		var r Reply
		if resp.StatusCode != 400 || json.Unmarshal(b, &r) != nil || r.Error == nil || r.Error.Code != CodeInvalidFrame {
			t.Fatalf("%s: %d %s", body, resp.StatusCode, b)
		}
	}
	big := `{"id":1,"method":"chat","params":{"model":"tiny","messages":[{"role":"user","content":"` + strings.Repeat("a", MaxFrame) + `"}]}}`
	if resp, b := post(t, srv, "/web/rpc", big, nil); resp.StatusCode != 413 || errorCode(t, b) != "body_too_large" {
		t.Fatalf("a body over 1 MiB: %d %s", resp.StatusCode, b)
	}
}

// sseEvents reads a /web/stream reply into (event, data) pairs.
func sseEvents(t *testing.T, r io.Reader) [][2]string {
	t.Helper()
	var out [][2]string
	var event string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			event = v
		} else if v, ok := strings.CutPrefix(line, "data: "); ok {
			out = append(out, [2]string{event, v})
		}
	}
	return out
}

func TestStream(t *testing.T) {
	f, srv, _ := startFake(t, Config{})
	f.reply = []string{"think:hmm", "A", "B"}
	resp, b := post(t, srv, "/web/stream", `{"method":"chat","params":{"model":"tiny","messages":[{"role":"user","content":"hi"}]}}`, nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	evs := sseEvents(t, bytes.NewReader(b))
	want := [][2]string{{"piece", `{"reasoning":"hmm"}`}, {"piece", `{"text":"A"}`}, {"piece", `{"text":"B"}`},
		{"done", `{"prompt_tokens":7,"cached_tokens":3,"tokens":3,"tokens_per_second":42.5,"finish_reason":"stop"}`}}
	if len(evs) != len(want) {
		t.Fatalf("events %v", evs)
	}
	for i := range want {
		if evs[i] != want[i] {
			t.Fatalf("event %d: %v, want %v", i, evs[i], want[i])
		}
	}
	// Errors: a missing model ends in an error event; a method other than chat is refused.
	_, b = post(t, srv, "/web/stream", `{"method":"chat","params":{"model":"nope","messages":[{"role":"user","content":"hi"}]}}`, nil)
	if evs := sseEvents(t, bytes.NewReader(b)); len(evs) != 1 || evs[0][0] != "error" || !strings.Contains(evs[0][1], `"code":"not_found"`) {
		t.Fatalf("missing model: %s", b)
	}
	if resp, b := post(t, srv, "/web/stream", `{"method":"models.list"}`, nil); resp.StatusCode != 400 || !strings.Contains(string(b), CodeUnknownMethod) {
		t.Fatalf("stream of models.list: %d %s", resp.StatusCode, b)
	}
}

// TestStreamClosedStopsChat: closing the stream mid-reply cancels the generation.
func TestStreamClosedStopsChat(t *testing.T) {
	f, srv, _ := startFake(t, Config{})
	f.reply = make([]string, 1000)
	for i := range f.reply {
		f.reply[i] = "x"
	}
	f.pieceEvery = 5 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/web/stream",
		strings.NewReader(`{"method":"chat","params":{"model":"tiny","messages":[{"role":"user","content":"hi"}]}}`))
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(resp.Body)
	if line, err := rd.ReadString('\n'); err != nil || line != "event: piece\n" {
		t.Fatalf("first line %q %v", line, err)
	}
	cancel()
	resp.Body.Close()
	select {
	case <-f.stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the chat went on after the stream closed")
	}
}

func TestCheckAddress(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:8454", "localhost:0", "[::1]:9000", "127.0.0.2:1"} {
		if err := CheckAddress(ok); err != nil {
			t.Fatalf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"0.0.0.0:8454", ":8454", "192.168.1.5:8454", "[::]:1", "example.com:80", "127.0.0.1"} {
		if err := CheckAddress(bad); err == nil {
			t.Fatalf("%s accepted", bad)
		}
	}
	if l, err := Listen("0.0.0.0:0"); err == nil || !strings.Contains(err.Error(), "loopback only") {
		if l != nil {
			l.Close()
		}
		t.Fatalf("Listen on 0.0.0.0: %v", err)
	}
}

func TestLoadToken(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	tok, err := LoadToken(dir)
	if err != nil || len(tok) != 64 || strings.Trim(tok, "0123456789abcdef") != "" {
		t.Fatalf("token %q %v", tok, err)
	}
	st, err := os.Stat(filepath.Join(dir, TokenFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v %v", st.Mode(), err)
	}
	again, err := LoadToken(dir)
	if err != nil || again != tok {
		t.Fatalf("second load %q %v, want the same token", again, err)
	}
	// A file others could read holds a spent token: a new one replaces it.
	os.Chmod(filepath.Join(dir, TokenFile), 0o644)
	if again, err := LoadToken(dir); err != nil || again == tok || len(again) != 64 {
		t.Fatalf("after the file was readable by others: %q %v, want a new token", again, err)
	}
	if st, _ := os.Stat(filepath.Join(dir, TokenFile)); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode left at %v", st.Mode())
	}
	other, _ := LoadToken(t.TempDir())
	if other == tok {
		t.Fatal("two installs share a token")
	}
}
