package server_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/servertest"
	"github.com/superfluid/superfluid/server/store"
)

// state is the model's runtime state as the manager keeps it (not as any route reports it).
func (k *keyed) state(t *testing.T, id string) string {
	t.Helper()
	e, err := k.cat.Mgr.Catalog().Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	return k.cat.Mgr.Status(e).State
}

// starts is how many times the model's worker was started.
func (k *keyed) starts(t *testing.T, id string) int32 {
	t.Helper()
	e, err := k.cat.Mgr.Catalog().Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	if r := k.cat.Runner(e.Path); r != nil {
		return r.Starts.Load()
	}
	return 0
}

// post sends body to path with key and returns the status and body.
func (k *keyed) post(t *testing.T, key, path, body string, headers ...string) (int, string) {
	t.Helper()
	method := http.MethodPost
	if path == "/api/delete" {
		method = http.MethodDelete
	}
	if strings.HasPrefix(path, "GET ") {
		method, path = http.MethodGet, strings.TrimPrefix(path, "GET ")
	}
	res, b := servertest.Do(t, method, k.srv.URL+path, body, append([]string{"Authorization", "Bearer " + key}, headers...)...)
	return res.StatusCode, string(b)
}

// load loads id with the admin key.
func (k *keyed) load(t *testing.T, id string) {
	t.Helper()
	if status, body := k.post(t, k.admin, "/v1/models/load", `{"model":"`+id+`"}`); status != 200 || k.state(t, id) != models.StateLoaded {
		t.Fatalf("admin load of %s: %d %s; state %s", id, status, body, k.state(t, id))
	}
}

// modelRoutes are the requests that name a model, as bodies with %s for the model's name:
// every route of the three dialects and llama.cpp's that takes a model.
var modelRoutes = []struct{ path, body string }{
	{"/api/chat", `{"model":%q,"stream":false,"messages":[{"role":"user","content":"hi"}]}`},
	{"/api/chat", `{"model":%q}`}, // Ollama's load call
	{"/api/generate", `{"model":%q,"stream":false,"prompt":"hi"}`},
	{"/api/generate", `{"model":%q}`}, // Ollama's load call
	{"/api/generate", `{"model":%q,"stream":false,"prompt":"def f(","suffix":")"}`},
	{"/api/generate", `{"model":%q,"stream":false,"prompt":"hi","raw":true}`},
	{"/api/embed", `{"model":%q,"input":"hi"}`},
	{"/api/embed", `{"model":%q}`},
	{"/api/embeddings", `{"model":%q,"prompt":"hi"}`},
	{"/api/show", `{"model":%q}`},
	{"/api/tokenize", `{"model":%q,"content":"hi"}`},
	{"/v1/chat/completions", `{"model":%q,"messages":[{"role":"user","content":"hi"}]}`},
	{"/v1/chat/completions", `{"model":%q,"stream":true,"messages":[{"role":"user","content":"hi"}]}`},
	{"/v1/completions", `{"model":%q,"prompt":"hi"}`},
	{"/v1/completions", `{"model":%q,"prompt":"def f(","suffix":")"}`},
	{"/v1/responses", `{"model":%q,"input":"hi"}`},
	{"/v1/responses", `{"model":%q,"input":"hi","stream":true}`},
	{"/v1/embeddings", `{"model":%q,"input":"hi"}`},
	{"/v1/tokenize", `{"model":%q,"input":"hi"}`},
	{"/v1/messages", `{"model":%q,"max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`},
	{"/v1/messages", `{"model":%q,"max_tokens":8,"stream":true,"messages":[{"role":"user","content":"hi"}]}`},
	{"/v1/messages/count_tokens", `{"model":%q,"messages":[{"role":"user","content":"hi"}]}`},
	{"GET /v1/models/%s", ``},
	{"GET /props?model=%s", ``},
	{"GET /slots?model=%s", ``},
}

// route fills the model's name into a route.
func route(path, body, model string) (string, string) {
	if strings.Contains(path, "%s") {
		return fmt.Sprintf(path, model), body
	}
	return path, fmt.Sprintf(body, model)
}

// TestScopedKeyNeverReachesOtherModels: a key limited to m1, on every route that names a model
// and in every dialect, gets for m2 exactly the answer it gets for a model that does not exist
// (status and words), and m2 is not loaded by it.
func TestScopedKeyNeverReachesOtherModels(t *testing.T) {
	k := setupKeyed(t, "127.0.0.1")
	for _, r := range modelRoutes {
		path, body := route(r.path, r.body, "m2")
		t.Run(path+" "+body, func(t *testing.T) {
			before := k.starts(t, "m2")
			status, got := k.post(t, k.scoped, path, body)
			mpath, mbody := route(r.path, r.body, "nope-model")
			wantStatus, want := k.post(t, k.scoped, mpath, mbody)
			if status != 404 || status != wantStatus || scrub(got, "m2") != scrub(want, "nope-model") {
				t.Errorf("m2: %d %s\nunknown model: %d %s", status, got, wantStatus, want)
			}
			if st, n := k.state(t, "m2"), k.starts(t, "m2")-before; st != models.StateUnloaded || n != 0 {
				t.Errorf("m2 is %s after the request, which started its worker %d times", st, n)
				k.post(t, k.admin, "/v1/models/unload", `{"model":"m2"}`) // so the next route is judged alone
			}
		})
	}
	// Once loaded (by the admin), m2 stays out of the key's listings and is not unloaded by it.
	k.load(t, "m2")
	for _, r := range []struct{ path, body string }{
		{"/api/chat", `{"model":"m2","keep_alive":0}`},
		{"/api/chat", `{"model":"m2:latest","keep_alive":0}`},
		{"/api/generate", `{"model":"m2","keep_alive":0}`},
		{"/api/embed", `{"model":"m2","keep_alive":0}`},
		{"/api/embeddings", `{"model":"m2","keep_alive":"0s"}`},
		{"/api/chat", `{"model":"m2","stream":false,"keep_alive":0,"messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/chat/completions", `{"model":"m2","keep_alive":0,"messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/messages", `{"model":"m2","keep_alive":0,"max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		if status, body := k.post(t, k.scoped, r.path, r.body); status != 403 && status != 404 {
			t.Errorf("%s %s: %d %s", r.path, r.body, status, body)
		}
		if st := k.state(t, "m2"); st != models.StateLoaded {
			t.Fatalf("%s %s unloaded m2 (now %s)", r.path, r.body, st)
		}
	}
	// /v1/tokenize may leave out the model when the caller has one: the key's one, not the catalog's.
	if status, body := k.post(t, k.scoped, "/v1/tokenize", `{"input":"hi"}`); status != 200 || !strings.Contains(body, `"model":"m1"`) {
		t.Errorf("/v1/tokenize without a model: %d %s", status, body)
	}
	for _, path := range []string{"/api/ps", "/api/tags", "/v1/models", "/props", "/slots"} {
		status, body := k.post(t, k.scoped, "GET "+path, "")
		if status != 200 || strings.Contains(body, "m2") {
			t.Errorf("%s shows the key a model it may not use: %d %s", path, status, body)
		}
		if path == "/props" || path == "/slots" {
			if !strings.Contains(body, `"model":"m1"`) {
				t.Errorf("%s describes another model than the key's: %s", path, body)
			}
		}
	}
}

// scrub makes two answers comparable: the model's name, and the ids every reply carries.
func scrub(body, model string) string {
	body = strings.ReplaceAll(body, model, "MODEL")
	var v any
	if json.Unmarshal([]byte(body), &v) == nil {
		if m, ok := v.(map[string]any); ok {
			delete(m, "request_id")
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	return body
}

// TestKeepAliveZeroNeedsAnAdminKey: keep_alive 0 unloads the model, so once keys exist it is
// an admin key's call in every dialect (403 in the dialect's shape, the model stays loaded);
// the admin key unloads.
func TestKeepAliveZeroNeedsAnAdminKey(t *testing.T) {
	k := setupKeyed(t, "127.0.0.1")
	k.load(t, "m1")
	cases := []struct {
		key, path, body, shape string
	}{
		{k.scoped, "/api/chat", `{"model":"m1","keep_alive":0}`, `{"error":"`},
		{k.user, "/api/generate", `{"model":"m1","keep_alive":"0"}`, `{"error":"`},
		{k.user, "/api/chat", `{"model":"m1","stream":false,"keep_alive":0,"messages":[{"role":"user","content":"hi"}]}`, `{"error":"`},
		{k.user, "/api/generate", `{"model":"m1","stream":false,"keep_alive":"0s","prompt":"hi"}`, `{"error":"`},
		{k.user, "/v1/chat/completions", `{"model":"m1","keep_alive":0,"messages":[{"role":"user","content":"hi"}]}`, `"code":"admin_required"`},
		{k.user, "/v1/chat/completions", `{"model":"m1","stream":true,"keep_alive":"0","messages":[{"role":"user","content":"hi"}]}`, `"code":"admin_required"`},
		{k.user, "/v1/completions", `{"model":"m1","keep_alive":0,"prompt":"hi"}`, `"code":"admin_required"`},
		{k.user, "/v1/messages", `{"model":"m1","keep_alive":0,"max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`, `"type":"permission_error"`},
	}
	for _, c := range cases {
		status, body := k.post(t, c.key, c.path, c.body)
		if status != 403 || !strings.Contains(body, c.shape) || !strings.Contains(body, "admin key") {
			t.Errorf("%s %s: %d %s", c.path, c.body, status, body)
		}
		if st := k.state(t, "m1"); st != models.StateLoaded {
			t.Fatalf("%s %s: m1 is %s", c.path, c.body, st)
		}
	}
	// Other keep-alives are anyone's: they only say how long the model stays after the request.
	if status, body := k.post(t, k.scoped, "/api/chat", `{"model":"m1","keep_alive":"10m"}`); status != 200 || !strings.Contains(body, `"done_reason":"load"`) {
		t.Fatalf("keep_alive 10m: %d %s", status, body)
	}
	// A shorter one is raised to the server's default: "1ns" would otherwise unload the model
	// as soon as it is idle, keep_alive 0 by another name.
	for _, c := range []struct{ path, body string }{
		{"/api/chat", `{"model":"m1","stream":false,"keep_alive":"1ns","messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/chat/completions", `{"model":"m1","keep_alive":"1ms","messages":[{"role":"user","content":"hi"}]}`},
	} {
		before := time.Now()
		if status, body := k.post(t, k.user, c.path, c.body); status != 200 {
			t.Fatalf("%s %s: %d %s", c.path, c.body, status, body)
		}
		e, err := k.cat.Mgr.Catalog().Lookup("m1")
		if err != nil {
			t.Fatal(err)
		}
		st := k.cat.Mgr.Status(e)
		if def := k.cat.Mgr.Config().KeepAlive; st.State != models.StateLoaded || st.ExpiresAt.Before(before.Add(def)) {
			t.Fatalf("after %s from a key that is not an admin key, m1 is %s and expires at %s, want loaded until %s from the request on",
				c.body, st.State, st.ExpiresAt.Format(time.StampMilli), def)
		}
	}
	status, body := k.post(t, k.admin, "/api/chat", `{"model":"m1","keep_alive":0}`)
	if status != 200 || !strings.Contains(body, `"done_reason":"unload"`) || k.state(t, "m1") != models.StateUnloaded {
		t.Fatalf("admin keep_alive 0: %d %s; m1 is %s", status, body, k.state(t, "m1"))
	}
}

// open is a server without keys over a catalog of one fake model, m1, bound to loopback.
func open(t *testing.T) (*httptest.Server, *servertest.Catalog) {
	t.Helper()
	cat := servertest.NewCatalog(t, models.Config{})
	cat.AddModel(t, "m1", gguftest.TinyLlamaOptions{})
	srv := httptest.NewServer(server.New(server.Config{Bind: server.NewBind("127.0.0.1")}, cat.Svc))
	t.Cleanup(srv.Close)
	return srv, cat
}

func stateOf(t *testing.T, cat *servertest.Catalog, id string) string {
	t.Helper()
	e, err := cat.Mgr.Catalog().Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	return cat.Mgr.Status(e).State
}

// TestPropsAutoloadIsModelManagement: /props?autoload=1 loads a model, so it needs an admin key
// once keys exist and is refused to web pages of other origins (with no keys, any page could
// otherwise make a visitor's server load models with a plain GET); the refused model stays
// unloaded.
func TestPropsAutoloadIsModelManagement(t *testing.T) {
	k := setupKeyed(t, "127.0.0.1")
	for _, key := range []string{k.user, k.scoped} {
		status, body := k.post(t, key, "GET /props?model=m1&autoload=1", "")
		if status != 403 || !strings.Contains(body, `"code":"admin_required"`) || k.state(t, "m1") != models.StateUnloaded {
			t.Fatalf("autoload with a key that is not an admin key: %d %s; m1 is %s", status, body, k.state(t, "m1"))
		}
	}
	if status, body := k.post(t, k.admin, "GET /props?model=m1&autoload=1", ""); status != 200 || k.state(t, "m1") != models.StateLoaded {
		t.Fatalf("autoload with the admin key: %d %s; m1 is %s", status, body, k.state(t, "m1"))
	}

	srv, cat := open(t)
	self := srv.URL // the page's origin is this server's own: http://127.0.0.1:PORT
	for _, h := range [][]string{
		{"Origin", "http://localhost:3000"}, // another local page (allowed by CORS, so the request runs)
		{"Sec-Fetch-Site", "cross-site"},    // an <img> or a link on any site: no Origin on a GET
		// An <img> on a page of another port of this host (http://localhost:3000 asking
		// http://localhost:8453): same site, since ports do not count, but another origin.
		{"Sec-Fetch-Site", "same-site"},
	} {
		res, body := servertest.Do(t, "GET", srv.URL+"/props?autoload=1", "", h...)
		if res.StatusCode != 403 || !strings.Contains(string(body), `"code":"admin_required"`) || stateOf(t, cat, "m1") != models.StateUnloaded {
			t.Fatalf("autoload with %v: %d %s; m1 is %s", h, res.StatusCode, body, stateOf(t, cat, "m1"))
		}
	}
	// Without keys no web page manages models, not even one claiming this server's own origin
	// (the server serves no pages); the same request from a program on this machine may.
	res, body := servertest.Do(t, "GET", srv.URL+"/props?autoload=1", "", "Origin", self, "Sec-Fetch-Site", "same-origin")
	if res.StatusCode != 403 || stateOf(t, cat, "m1") != models.StateUnloaded {
		t.Fatalf("autoload from a page of this server's origin: %d %s; m1 is %s", res.StatusCode, body, stateOf(t, cat, "m1"))
	}
	res, body = servertest.Do(t, "GET", srv.URL+"/props?autoload=1", "")
	if res.StatusCode != 200 || stateOf(t, cat, "m1") != models.StateLoaded {
		t.Fatalf("autoload from a program on this machine: %d %s; m1 is %s", res.StatusCode, body, stateOf(t, cat, "m1"))
	}
}

// TestPathsOnlyForTrustedCallers: a model's absolute path (/v1/models meta.path, /props
// model_path, the Modelfile's FROM line of /api/show) is shown to an admin key, or without
// keys to this machine when it is not a web page; everyone else gets the file's base name.
func TestPathsOnlyForTrustedCallers(t *testing.T) {
	k := setupKeyed(t, "127.0.0.1")
	e, err := k.cat.Mgr.Catalog().Lookup("m1")
	if err != nil {
		t.Fatal(err)
	}
	srv, cat := open(t)
	e2, err := cat.Mgr.Catalog().Lookup("m1")
	if err != nil {
		t.Fatal(err)
	}
	type view struct {
		name     string
		get      func(path, body string) string
		abs      string // the absolute path, "" when it must not be shown
		baseName string
	}
	keyed := func(key string) func(path, body string) string {
		return func(path, body string) string {
			status, b := k.post(t, key, path, body)
			if status != 200 {
				t.Fatalf("%s: %d %s", path, status, b)
			}
			return b
		}
	}
	plain := func(headers ...string) func(path, body string) string {
		return func(path, body string) string {
			method := http.MethodPost
			if p, ok := strings.CutPrefix(path, "GET "); ok {
				method, path = http.MethodGet, p
			}
			res, b := servertest.Do(t, method, srv.URL+path, body, headers...)
			if res.StatusCode != 200 {
				t.Fatalf("%s: %d %s", path, res.StatusCode, b)
			}
			return string(b)
		}
	}
	views := []view{
		{"admin key", keyed(k.admin), e.Path, ""},
		{"key that is not an admin key", keyed(k.user), "", "m1.gguf"},
		{"key limited to m1", keyed(k.scoped), "", "m1.gguf"},
		{"no keys, this machine", plain(), e2.Path, ""},
		{"no keys, a local web page", plain("Origin", "http://localhost:3000"), "", "m1.gguf"},
		{"no keys, a page of another site", plain("Sec-Fetch-Site", "cross-site"), "", "m1.gguf"},
	}
	// A failed load's error quotes its file: m2's, truncated behind the catalog's back, which the
	// fake worker refuses as the real one would.
	e2k, err := k.cat.Mgr.Catalog().Lookup("m2")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(e2k.Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e2k.Path, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	k.cat.SetStartCheck(func(e *models.Entry) error {
		_, err := gguf.ReadFile(e.Path)
		return err
	})
	if status, body := k.post(t, k.admin, "/v1/chat/completions", `{"model":"m2","messages":[{"role":"user","content":"hi"}]}`); status != 500 || k.state(t, "m2") != models.StateFailed {
		t.Fatalf("a chat on the truncated m2: %d %s; m2 is %s", status, body, k.state(t, "m2"))
	}
	// The failed model's errors reach every key that may use it, so they name its file, not
	// where the server keeps it, in each dialect (the log has the full error).
	for _, r := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"m2","messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/messages", `{"model":"m2","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`},
		{"/api/chat", `{"model":"m2","stream":false,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		status, body := k.post(t, k.user, r.path, r.body)
		if status != 500 || !strings.Contains(body, "m2.gguf") || strings.Contains(body, filepath.Dir(e2k.Path)) {
			t.Errorf("%s on the failed m2 for a key that is not an admin key: %d %s; want a 500 naming m2.gguf without its folder %s",
				r.path, status, body, filepath.Dir(e2k.Path))
		}
	}
	for _, v := range views {
		dir := filepath.Dir(e.Path)
		if strings.HasPrefix(v.name, "no keys") {
			dir = filepath.Dir(e2.Path)
		}
		var list struct {
			Data []struct {
				Meta struct{ Path string } `json:"meta"`
			} `json:"data"`
		}
		b := v.get("GET /v1/models", "")
		if err := json.Unmarshal([]byte(b), &list); err != nil || len(list.Data) == 0 {
			t.Fatalf("%s: /v1/models %s (%v)", v.name, b, err)
		}
		var props struct {
			ModelPath string `json:"model_path"`
		}
		pb := v.get("GET /props?model=m1", "")
		if err := json.Unmarshal([]byte(pb), &props); err != nil {
			t.Fatal(err)
		}
		var show struct{ Modelfile string }
		sb := v.get("/api/show", `{"model":"m1"}`)
		if err := json.Unmarshal([]byte(sb), &show); err != nil {
			t.Fatal(err)
		}
		want := cmp.Or(v.abs, v.baseName)
		got := []string{list.Data[0].Meta.Path, props.ModelPath, fromLine(show.Modelfile)}
		for i, where := range []string{"/v1/models meta.path", "/props model_path", "/api/show FROM"} {
			if got[i] != want {
				t.Errorf("%s: %s is %q, want %q", v.name, where, got[i], want)
			}
		}
		for _, body := range []string{b, pb, sb, v.get("GET /v1/models/m1", ""), v.get("GET /props", "")} {
			if v.abs == "" && strings.Contains(body, dir) {
				t.Errorf("%s: the models' folder %s shows in %s", v.name, dir, body)
			}
		}
	}
}

// fromLine is the argument of a Modelfile's FROM line.
func fromLine(modelfile string) string {
	for _, l := range strings.Split(modelfile, "\n") {
		if p, ok := strings.CutPrefix(l, "FROM "); ok {
			return p
		}
	}
	return ""
}

// TestScopedKeyAndABareRepositoryName: a repository named without its quantization (the spec's
// first example) means, to a key limited to some models, one of the quantizations that key
// may use, whichever another key has loaded; the key never reaches, loads or learns of the
// others (a key with none of them gets the unknown model's 404, without the list).
func TestScopedKeyAndABareRepositoryName(t *testing.T) {
	ctx := t.Context()
	k := setupKeyed(t, "127.0.0.1")
	const repo = "o/r-GGUF"
	var ids []string
	for i, quant := range []string{"Q4_K_M", "Q8_0"} {
		path := filepath.Join(k.cat.Dir, fmt.Sprintf("r-%s.gguf", quant))
		if err := gguftest.WriteTinyLlama(path, gguftest.TinyLlamaOptions{Seed: int64(i + 1)}); err != nil {
			t.Fatal(err)
		}
		e, err := k.cat.Mgr.Catalog().Register(ctx, store.ModelRecord{ID: "hf.co/" + repo + ":" + quant, Path: path, Source: store.SourceHuggingFace, Repo: repo})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	q4, q8 := ids[0], ids[1]
	q8Key, _, err := k.keys.Create(ctx, auth.NewKey{Name: "q8", Models: []string{q8}})
	if err != nil {
		t.Fatal(err)
	}
	chat := fmt.Sprintf(`{"model":%q,"stream":false,"messages":[{"role":"user","content":"hi"}]}`, repo)
	for _, loaded := range []string{"", q4} { // none loaded (two in the catalog), then the other one
		if loaded != "" {
			k.load(t, loaded)
		}
		status, body := k.post(t, q8Key, "/api/chat", chat)
		if status != 200 || !strings.Contains(body, `"done":true`) {
			t.Errorf("with %q loaded, the q8 key's chat on %s: %d %s; want its one quantization", loaded, repo, status, body)
		}
		want := models.StateUnloaded
		if loaded == q4 {
			want = models.StateLoaded
		}
		if st := k.state(t, q4); st != want {
			t.Errorf("with %q loaded, %s is %s after the q8 key's chat", loaded, q4, st)
		}
		for _, r := range modelRoutes {
			path, body := route(r.path, r.body, repo)
			status, got := k.post(t, k.scoped, path, body) // limited to m1: nothing of the repository
			mpath, mbody := route(r.path, r.body, "nope/nope-GGUF")
			wantStatus, want := k.post(t, k.scoped, mpath, mbody)
			if status != 404 || wantStatus != 404 || scrub(got, repo) != scrub(want, "nope/nope-GGUF") || strings.Contains(got, "Q8_0") {
				t.Errorf("the m1 key on %s %s: %d %s\nunknown repository: %d %s", path, body, status, got, wantStatus, want)
			}
		}
	}
	if n := k.starts(t, q4); n != 1 {
		t.Errorf("%s started %d times; want once (the admin's load)", q4, n)
	}
}
