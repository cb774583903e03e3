package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	ollama "github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/servertest"
)

// keyed is a server with keys over a catalog of two fake models, m1 and m2.
type keyed struct {
	srv    *httptest.Server
	keys   *auth.Keyring
	cat    *servertest.Catalog
	limits *server.Limits
	// admin is --api-key's key; user a non-admin policy key; scoped a stored key limited to m1;
	// revoked a stored key that was revoked.
	admin, user, scoped, revoked string
}

const adminKey = "sk-sf-admin-for-tests"

func setupKeyed(t *testing.T, bind string) *keyed {
	t.Helper()
	ctx := context.Background()
	cat := servertest.NewCatalog(t, models.Config{})
	cat.AddModel(t, "m1", gguftest.TinyLlamaOptions{})
	cat.AddModel(t, "m2", gguftest.TinyLlamaOptions{})
	admin, err := auth.APIKey(adminKey)
	if err != nil {
		t.Fatal(err)
	}
	policy, err := auth.ParsePolicy([]byte(`{"keys": [{"name": "user", "key": "sk-sf-user-for-tests", "origins": ["https://user.example"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := auth.New(ctx, auth.Config{Keys: append([]auth.Key{admin}, policy...), Store: cat.Store})
	if err != nil {
		t.Fatal(err)
	}
	k := &keyed{keys: keys, cat: cat, admin: adminKey, user: "sk-sf-user-for-tests"}
	if k.scoped, _, err = keys.Create(ctx, auth.NewKey{Name: "scoped", Models: []string{"m1"}}); err != nil {
		t.Fatal(err)
	}
	if k.revoked, _, err = keys.Create(ctx, auth.NewKey{Name: "gone", Admin: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := keys.Revoke(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	k.limits = server.NewLimits(server.LimitsConfig{})
	k.srv = httptest.NewServer(server.New(server.Config{Keys: keys, Bind: server.NewBind(bind), Limits: k.limits}, cat.Svc))
	t.Cleanup(k.srv.Close)
	return k
}

func (k *keyed) openai(key string) *openai.Client {
	c := openai.NewClient(option.WithBaseURL(k.srv.URL+"/v1"), option.WithAPIKey(key), option.WithMaxRetries(0))
	return &c
}

func (k *keyed) anthropic(key string) *anthropic.Client {
	c := anthropic.NewClient(aoption.WithBaseURL(k.srv.URL), aoption.WithAPIKey(key), aoption.WithMaxRetries(0))
	return &c
}

// ollama is the official Ollama client with a transport that adds Authorization: Bearer key.
func (k *keyed) ollama(key string) *ollama.Client {
	base, _ := url.Parse(k.srv.URL)
	return ollama.NewClient(base, &http.Client{Transport: bearer{key}})
}

type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.key != "" {
		r.Header.Set("Authorization", "Bearer "+b.key)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestKeysOnEachDialect: through each official SDK, a missing, wrong or revoked key is a 401
// invalid_api_key in the dialect's shape, and a good key is served.
func TestKeysOnEachDialect(t *testing.T) {
	k := setupKeyed(t, "127.0.0.1")
	ctx := context.Background()
	bad := map[string]string{"missing": "", "wrong": auth.Generate(), "revoked": k.revoked}
	for name, key := range bad {
		t.Run("openai/"+name, func(t *testing.T) {
			_, err := k.openai(key).Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "m1",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
			var e *openai.Error
			if !errors.As(err, &e) || e.StatusCode != 401 || e.Code != "invalid_api_key" || e.Type != "invalid_request_error" {
				t.Fatalf("%v", err)
			}
		})
		t.Run("anthropic/"+name, func(t *testing.T) {
			_, err := k.anthropic(key).Messages.New(ctx, anthropic.MessageNewParams{Model: "m1", MaxTokens: 8,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
			var e *anthropic.Error
			if !errors.As(err, &e) || e.StatusCode != 401 || !strings.Contains(e.RawJSON(), `"authentication_error"`) ||
				!strings.Contains(e.RawJSON(), `"type":"error"`) {
				t.Fatalf("%v", err)
			}
		})
		t.Run("ollama/"+name, func(t *testing.T) {
			stream := false
			err := k.ollama(key).Chat(ctx, &ollama.ChatRequest{Model: "m1", Stream: &stream,
				Messages: []ollama.Message{{Role: "user", Content: "hi"}}}, func(ollama.ChatResponse) error { return nil })
			var e ollama.AuthorizationError
			if !errors.As(err, &e) || e.StatusCode != 401 {
				t.Fatalf("%v", err)
			}
			_, err = k.ollama(key).List(ctx)
			if !errors.As(err, &e) || e.StatusCode != 401 {
				t.Fatalf("list: %v", err)
			}
		})
	}

	// The same routes with good keys: Bearer for OpenAI and Ollama, x-api-key for Anthropic.
	for _, key := range []string{k.admin, k.user, k.scoped} {
		reply, err := k.openai(key).Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "m1",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
		if err != nil || reply.Choices[0].Message.Content == "" {
			t.Fatalf("openai with a good key: %v", err)
		}
		msg, err := k.anthropic(key).Messages.New(ctx, anthropic.MessageNewParams{Model: "m1", MaxTokens: 8,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
		if err != nil || len(msg.Content) == 0 {
			t.Fatalf("anthropic with a good key: %v", err)
		}
		stream := false
		var got ollama.ChatResponse
		err = k.ollama(key).Chat(ctx, &ollama.ChatRequest{Model: "m1", Stream: &stream,
			Messages: []ollama.Message{{Role: "user", Content: "hi"}}}, func(r ollama.ChatResponse) error { got = r; return nil })
		if err != nil || got.Message.Content == "" {
			t.Fatalf("ollama with a good key: %v %+v", err, got)
		}
	}

	// /health never needs a key; x-api-key works on OpenAI routes too.
	if res, body := servertest.Do(t, "GET", k.srv.URL+"/health", ""); res.StatusCode != 200 {
		t.Fatalf("health: %d %s", res.StatusCode, body)
	}
	if res, body := servertest.Do(t, "GET", k.srv.URL+"/v1/models", "", "x-api-key", k.user); res.StatusCode != 200 {
		t.Fatalf("x-api-key on /v1/models: %d %s", res.StatusCode, body)
	}
	// A 401 asks for a bearer token, as RFC 6750 has it.
	if res, _ := servertest.Do(t, "GET", k.srv.URL+"/v1/models", ""); !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Fatalf("401 without WWW-Authenticate: %v", res.Header)
	}
}

// TestAdminRoutesNeedAnAdminKey: a key that is not an admin key gets 403 admin_required on
// every admin route, through the SDKs where they have the call; the admin key passes.
func TestAdminRoutesNeedAnAdminKey(t *testing.T) {
	k := setupKeyed(t, "127.0.0.1")
	ctx := context.Background()
	for _, key := range []string{k.user, k.scoped} {
		oa := k.openai(key)
		var e *openai.Error
		for _, route := range []struct {
			name string
			call func() error
		}{
			{"POST /v1/models/load", func() error { return oa.Post(ctx, "models/load", map[string]any{"model": "m1"}, nil) }},
			{"POST /v1/models/unload", func() error { return oa.Post(ctx, "models/unload", map[string]any{"model": "m1"}, nil) }},
			{"DELETE /v1/models/m1", func() error { _, err := oa.Models.Delete(ctx, "m1"); return err }},
			{"GET /v1/keys", func() error { return oa.Get(ctx, "keys", nil, nil) }},
			{"POST /v1/keys", func() error { return oa.Post(ctx, "keys", map[string]any{"name": "x"}, nil) }},
			{"DELETE /v1/keys/scoped", func() error { return oa.Delete(ctx, "keys/scoped", nil, nil) }},
		} {
			err := route.call()
			if !errors.As(err, &e) || e.StatusCode != 403 || e.Code != "admin_required" || !strings.Contains(e.Message, "not an admin key") {
				t.Errorf("%s: %v", route.name, err)
			}
		}
		ol := k.ollama(key)
		var se ollama.StatusError
		for _, route := range []struct {
			name string
			call func() error
		}{
			{"POST /api/pull", func() error {
				return ol.Pull(ctx, &ollama.PullRequest{Model: "hf.co/o/r:Q8_0"}, func(ollama.ProgressResponse) error { return nil })
			}},
			{"POST /api/copy", func() error { return ol.Copy(ctx, &ollama.CopyRequest{Source: "m1", Destination: "m3"}) }},
			{"DELETE /api/delete", func() error { return ol.Delete(ctx, &ollama.DeleteRequest{Model: "m1"}) }},
		} {
			err := route.call()
			if !errors.As(err, &se) || se.StatusCode != 403 || !strings.Contains(se.ErrorMessage, "not an admin key") {
				t.Errorf("ollama %s: %v", route.name, err)
			}
		}
	}
	// Nothing was done, and the admin key does it.
	if _, err := k.cat.Mgr.Catalog().Lookup("m3"); err == nil {
		t.Fatal("a refused copy happened")
	}
	oa := k.openai(k.admin)
	if err := oa.Post(ctx, "models/load", map[string]any{"model": "m1"}, nil); err != nil {
		t.Fatalf("admin load: %v", err)
	}
	if err := k.ollama(k.admin).Copy(ctx, &ollama.CopyRequest{Source: "m1", Destination: "m3"}); err != nil {
		t.Fatalf("admin copy: %v", err)
	}
	if err := k.ollama(k.admin).Delete(ctx, &ollama.DeleteRequest{Model: "m3"}); err != nil {
		t.Fatalf("admin delete: %v", err)
	}
}

// TestKeyRoutes: an admin creates a key over HTTP (shown once), lists it (never the key) and
// revokes it; the key works in between and not after.
func TestKeyRoutes(t *testing.T) {
	k := setupKeyed(t, "127.0.0.1")
	ctx := context.Background()
	admin := k.openai(k.admin)
	var created struct {
		ID, Name, Key, Prefix string
		Admin                 bool
		Models                []string
		QoS                   *string `json:"qos"`
		RPM                   int
		CreatedAt             int64 `json:"created_at"`
	}
	err := admin.Post(ctx, "keys", map[string]any{"name": "ci", "models": []string{"m2"}, "qos": "background", "rpm": 30}, &created)
	if err != nil || !strings.HasPrefix(created.Key, auth.KeyPrefix) || !strings.HasPrefix(created.Key, created.Prefix) ||
		created.QoS == nil || *created.QoS != "background" || created.RPM != 30 || created.CreatedAt == 0 || created.Admin {
		t.Fatalf("create: %+v %v", created, err)
	}
	var list struct{ Data []map[string]any }
	if err := admin.Get(ctx, "keys", nil, &list); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(list)
	if len(list.Data) != 4 || strings.Contains(string(raw), created.Key) || !strings.Contains(string(raw), `"name":"ci"`) {
		t.Fatalf("list: %s", raw)
	}
	ci := k.openai(created.Key)
	if _, err := ci.Models.List(ctx); err != nil {
		t.Fatalf("the new key: %v", err)
	}
	var e *openai.Error
	bad := []struct {
		name   string
		body   map[string]any
		status int
	}{
		{"name taken", map[string]any{"name": "ci"}, 409},
		{"configured name", map[string]any{"name": "user"}, 409},
		{"bad name", map[string]any{"name": "a b"}, 400},
		{"bad qos", map[string]any{"name": "q", "qos": "urgent"}, 400},
		{"unknown field", map[string]any{"name": "q", "rmp": 3}, 400},
	}
	for _, c := range bad {
		if err := admin.Post(ctx, "keys", c.body, nil); !errors.As(err, &e) || e.StatusCode != c.status {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if err := admin.Delete(ctx, "keys/user", nil, nil); !errors.As(err, &e) || e.StatusCode != 409 {
		t.Fatalf("revoke a policy key: %v", err)
	}
	if err := admin.Delete(ctx, "keys/nobody", nil, nil); !errors.As(err, &e) || e.StatusCode != 404 {
		t.Fatalf("revoke unknown: %v", err)
	}
	if err := admin.Delete(ctx, "keys/"+created.ID, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ci.Models.List(ctx); !errors.As(err, &e) || e.StatusCode != 401 {
		t.Fatalf("a revoked key: %v", err)
	}
}

// TestModelScopedKey: a key limited to m1 sees only m1, and m2 is answered exactly like a
// model that does not exist.
func TestModelScopedKey(t *testing.T) {
	k := setupKeyed(t, "127.0.0.1")
	ctx := context.Background()
	oa := k.openai(k.scoped)
	page, err := oa.Models.List(ctx)
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != "m1" {
		t.Fatalf("models: %+v %v", page, err)
	}
	if all, _ := k.openai(k.user).Models.List(ctx); len(all.Data) != 2 {
		t.Fatalf("an unscoped key sees %d models", len(all.Data))
	}
	var denied, missing *openai.Error
	_, err = oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "m2",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	if !errors.As(err, &denied) || denied.StatusCode != 404 || denied.Code != "model_not_found" {
		t.Fatalf("m2: %v", err)
	}
	_, err = oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "nope",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	if !errors.As(err, &missing) || missing.StatusCode != 404 || strings.ReplaceAll(missing.Message, "nope", "m2") != denied.Message {
		t.Fatalf("unknown model %q vs refused %q", missing.Message, denied.Message)
	}
	if _, err := oa.Models.Get(ctx, "m2"); !errors.As(err, &denied) || denied.StatusCode != 404 {
		t.Fatalf("GET /v1/models/m2: %v", err)
	}
	// Embeddings too (m1 generates, so it is a 400 there; m2 is not there at all).
	for model, status := range map[string]int{"m2": 404, "m1": 400} {
		_, err := oa.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: model,
			Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hi")}})
		if !errors.As(err, &denied) || denied.StatusCode != status {
			t.Fatalf("embeddings on %s: %v", model, err)
		}
	}
	_, err = k.anthropic(k.scoped).Messages.New(ctx, anthropic.MessageNewParams{Model: "m2", MaxTokens: 8,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 404 {
		t.Fatalf("anthropic m2: %v", err)
	}
	tags, err := k.ollama(k.scoped).List(ctx)
	if err != nil || len(tags.Models) != 1 || !strings.HasPrefix(tags.Models[0].Name, "m1") {
		t.Fatalf("ollama tags: %+v %v", tags, err)
	}
	stream := false
	err = k.ollama(k.scoped).Chat(ctx, &ollama.ChatRequest{Model: "m2", Stream: &stream,
		Messages: []ollama.Message{{Role: "user", Content: "hi"}}}, func(ollama.ChatResponse) error { return nil })
	var se ollama.StatusError
	if !errors.As(err, &se) || se.StatusCode != 404 {
		t.Fatalf("ollama m2: %v", err)
	}
	// Refused before anything loads it: the status alone would not show a load that happened
	// before the 404.
	if st := k.state(t, "m2"); st != models.StateUnloaded || k.starts(t, "m2") != 0 {
		t.Fatalf("after the refused chat m2 is %s, its worker started %d times", st, k.starts(t, "m2"))
	}
	// Nor does keep_alive 0 unload it once the admin has loaded it.
	k.load(t, "m2")
	err = k.ollama(k.scoped).Chat(ctx, &ollama.ChatRequest{Model: "m2", KeepAlive: &ollama.Duration{}}, func(ollama.ChatResponse) error { return nil })
	if !errors.As(err, &se) || se.StatusCode != 404 || k.state(t, "m2") != models.StateLoaded {
		t.Fatalf("ollama unload of m2: %v; m2 is %s", err, k.state(t, "m2"))
	}
	// Describing a model is using it: /api/show and /props?model= answer as for a missing one.
	if _, err := k.ollama(k.scoped).Show(ctx, &ollama.ShowRequest{Model: "m2"}); !errors.As(err, &se) || se.StatusCode != 404 {
		t.Fatalf("ollama show m2: %v", err)
	}
	if _, err := k.ollama(k.scoped).Show(ctx, &ollama.ShowRequest{Model: "m1"}); err != nil {
		t.Fatalf("ollama show m1: %v", err)
	}
	res, body := servertest.Do(t, "GET", k.srv.URL+"/props?model=m2", "", "Authorization", "Bearer "+k.scoped)
	if res.StatusCode != 404 {
		t.Fatalf("/props?model=m2: %d %s", res.StatusCode, body)
	}
}

// TestRandomKeysLeaveNothing: a thousand requests with random keys are all 401, and nothing
// the server keeps grew: the stored keys and request records are what they were (refused keys
// are answered before anything is recorded), no rate limiter was made for a key, and the
// keyring, in memory and reread from the database, holds what it held before.
func TestRandomKeysLeaveNothing(t *testing.T) {
	k := setupKeyed(t, "127.0.0.1")
	ctx := context.Background()
	st := k.cat.Store
	state := func() (keys []string, records int) {
		t.Helper()
		if err := st.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		stored, err := st.Keys(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range stored {
			keys = append(keys, s.ID+"/"+s.Name)
		}
		recs, err := st.RecentRequests(ctx, 100_000)
		if err != nil {
			t.Fatal(err)
		}
		return keys, len(recs)
	}
	keysBefore, recordsBefore := state()
	before := k.keys.Size()
	paths := []string{"/v1/chat/completions", "/v1/messages", "/api/chat"}
	for i := range 1000 {
		path := paths[i%len(paths)]
		res, body := servertest.Do(t, "POST", k.srv.URL+path, `{"model":"m1"}`, "Authorization", "Bearer "+auth.Generate())
		if res.StatusCode != 401 {
			t.Fatalf("request %d to %s: %d %s", i, path, res.StatusCode, body)
		}
	}
	keysAfter, recordsAfter := state()
	if strings.Join(keysAfter, ",") != strings.Join(keysBefore, ",") || recordsAfter != recordsBefore {
		t.Fatalf("after 1000 unknown keys the database holds keys %v (before %v) and %d request records (before %d)",
			keysAfter, keysBefore, recordsAfter, recordsBefore)
	}
	if n := k.limits.Keys(); n != 0 {
		t.Fatalf("%d rate limiters were made for keys that do not exist", n)
	}
	if after := k.keys.Size(); after != before {
		t.Fatalf("the keyring holds %d identities after 1000 unknown keys, %d before", after, before)
	}
	if err := k.keys.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if after := k.keys.Size(); after != before {
		t.Fatalf("reread from the database, the keyring holds %d identities, %d before", after, before)
	}
	// The known keys still work: the refusals were about the keys, not a lockout.
	if res, body := servertest.Do(t, "GET", k.srv.URL+"/v1/models", "", "Authorization", "Bearer "+k.scoped); res.StatusCode != 200 {
		t.Fatalf("a good key after the flood: %d %s", res.StatusCode, body)
	}
}

// rawRequest writes a request's head by hand, promising a body it never sends, and returns
// the status line and the body: an answer proves the server decided without reading the body.
func rawRequest(t *testing.T, srv *httptest.Server, head string) (status int, body string) {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "%s\r\nContent-Length: 1000000\r\nContent-Type: application/json\r\n\r\n", head); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := res.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return res.StatusCode, b.String()
}

// TestHostHeader: on a loopback server, a Host that is not this machine's is refused with 403
// before the body is read (DNS rebinding), in each dialect's shape; this machine's names pass.
func TestHostHeader(t *testing.T) {
	k := setupKeyed(t, "127.0.0.1")
	port := k.srv.Listener.Addr().(*net.TCPAddr).Port
	cases := []struct {
		path, host string
		want       int
		shape      string
	}{
		{"/v1/chat/completions", "attacker.example", 403, `"code":"host_not_allowed"`},
		{"/v1/messages", fmt.Sprintf("attacker.example:%d", port), 403, `"type":"permission_error"`},
		{"/api/chat", "evil.example", 403, `{"error":"the Host header`},
		{"/v1/chat/completions", "localhost.attacker.example", 403, "DNS rebinding"},
		{"/v1/chat/completions", "127.0.0.2", 403, "DNS rebinding"},
		// Allowed names get as far as the key check (no key sent here: 401).
		{"/v1/chat/completions", fmt.Sprintf("localhost:%d", port), 401, "invalid_api_key"},
		{"/v1/chat/completions", "LOCALHOST", 401, "invalid_api_key"},
		{"/v1/chat/completions", fmt.Sprintf("127.0.0.1:%d", port), 401, "invalid_api_key"},
		{"/v1/chat/completions", fmt.Sprintf("[::1]:%d", port), 401, "invalid_api_key"},
		{"/api/chat", "[::1]", 401, "no API key"},
	}
	for _, c := range cases {
		status, body := rawRequest(t, k.srv, fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s", c.path, c.host))
		if status != c.want || !strings.Contains(body, c.shape) {
			t.Errorf("%s Host %s: %d %s", c.path, c.host, status, body)
		}
	}
	// /health is checked too: a rebinding page learns nothing.
	if status, _ := rawRequest(t, k.srv, "GET /health HTTP/1.1\r\nHost: attacker.example"); status != 403 {
		t.Errorf("health with a foreign Host: %d", status)
	}

	// Bound to every interface, names are not checked (the keys are what protects it).
	open := setupKeyed(t, "0.0.0.0")
	if status, body := rawRequest(t, open.srv, "POST /v1/chat/completions HTTP/1.1\r\nHost: myserver.lan"); status != 401 {
		t.Errorf("non-loopback bind with a LAN name: %d %s", status, body)
	}
}

// TestCORS: preflights and requests from the localhost origins and a key's own origins get
// CORS headers naming the origin (never "*", never credentials); any other origin gets 403
// and no CORS headers, preflight or not.
func TestCORS(t *testing.T) {
	k := setupKeyed(t, "127.0.0.1")
	preflight := func(origin, path string) *http.Response {
		res, _ := servertest.Do(t, "OPTIONS", k.srv.URL+path, "", "Origin", origin,
			"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization, content-type")
		return res
	}
	for _, origin := range []string{"http://localhost:3000", "http://127.0.0.1:8080", "https://[::1]", "https://user.example"} {
		res := preflight(origin, "/v1/chat/completions")
		h := res.Header
		if res.StatusCode != 204 || h.Get("Access-Control-Allow-Origin") != origin || !strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") ||
			h.Get("Access-Control-Allow-Credentials") != "" || !strings.Contains(h.Get("Vary"), "Origin") {
			t.Errorf("preflight from %s: %d %v", origin, res.StatusCode, h)
		}
	}
	for _, origin := range []string{"https://evil.example", "null", "http://localhost.evil.example"} {
		for _, path := range []string{"/v1/chat/completions", "/v1/messages", "/api/chat"} {
			res := preflight(origin, path)
			if res.StatusCode != 403 || res.Header.Get("Access-Control-Allow-Origin") != "" {
				t.Errorf("preflight from %s to %s: %d %v", origin, path, res.StatusCode, res.Header)
			}
		}
		// A "simple" request (no preflight) from that origin does not run either.
		res, body := servertest.Do(t, "POST", k.srv.URL+"/api/pull", `{"model":"hf.co/o/r:Q8_0"}`, "Origin", origin, "Authorization", "Bearer "+k.admin)
		if res.StatusCode != 403 || res.Header.Get("Access-Control-Allow-Origin") != "" || !strings.Contains(string(body), "--cors-origins") {
			t.Errorf("simple request from %s: %d %s", origin, res.StatusCode, body)
		}
	}
	// An allowed origin's request carries the header, and the key still decides.
	res, _ := servertest.Do(t, "GET", k.srv.URL+"/v1/models", "", "Origin", "http://localhost:5173", "Authorization", "Bearer "+k.admin)
	if res.StatusCode != 200 || res.Header.Get("Access-Control-Allow-Origin") != "http://localhost:5173" {
		t.Fatalf("GET from localhost: %d %v", res.StatusCode, res.Header)
	}
	// The user key names its origins: it is refused from another allowed origin.
	res, body := servertest.Do(t, "GET", k.srv.URL+"/v1/models", "", "Origin", "http://localhost:5173", "Authorization", "Bearer "+k.user)
	if res.StatusCode != 403 || !strings.Contains(string(body), "origin_not_allowed") {
		t.Fatalf("user key from localhost: %d %s", res.StatusCode, body)
	}
	res, _ = servertest.Do(t, "GET", k.srv.URL+"/v1/models", "", "Origin", "https://user.example", "Authorization", "Bearer "+k.user)
	if res.StatusCode != 200 {
		t.Fatalf("user key from its origin: %d", res.StatusCode)
	}
}
