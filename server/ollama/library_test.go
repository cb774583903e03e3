package ollama_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/runtime/models/hf"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
)

// library is a server over a catalog-backed core with fake workers and a fake Hugging Face Hub.
type library struct {
	*servertest.Catalog
	handler http.Handler
	srv     *httptest.Server
	client  *api.Client
}

func setupLibrary(t *testing.T, cfg models.Config) *library {
	t.Helper()
	l := &library{Catalog: servertest.NewCatalog(t, cfg)}
	l.serve(t, l.Svc)
	return l
}

// serve (re)starts the server over svc.
func (l *library) serve(t *testing.T, svc *core.Service) {
	t.Helper()
	l.handler = server.New(server.Config{}, svc)
	l.srv = httptest.NewServer(l.handler)
	t.Cleanup(l.srv.Close) // before the catalog's cleanups: requests in flight end first
	u, err := url.Parse(l.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	l.client = api.NewClient(u, http.DefaultClient)
}

// slowHub makes the fake Hub's file downloads take a while, so that a pull reports progress
// between its first and last byte (the Hugging Face client reports at most every 100 ms).
type slowHub struct{ cdn string }

func (s slowHub) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && strings.HasPrefix(r.URL.String(), s.cdn) {
		resp.Body = slowBody{resp.Body}
	}
	return resp, err
}

type slowBody struct{ io.ReadCloser }

func (b slowBody) Read(p []byte) (int, error) {
	time.Sleep(20 * time.Millisecond)
	return b.ReadCloser.Read(p[:min(len(p), 64<<10)])
}

func (l *library) do(t *testing.T, method, path, body string) (*http.Response, []byte) {
	t.Helper()
	return servertest.Do(t, method, l.srv.URL+path, body)
}

// hubModel is a tiny model big enough (about 1.5 MB) that its download is not one read.
func hubModel(t *testing.T) []byte {
	t.Helper()
	return servertest.TinyModel(t, gguftest.TinyLlamaOptions{Vocab: 512, Embd: 256, FF: 512, Q8: true, ChatTemplate: chatML})
}

// names lists what /api/tags shows.
func (l *library) names(t *testing.T) []string {
	t.Helper()
	list, err := l.client.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range list.Models {
		out = append(out, m.Name)
	}
	return out
}

func has(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// A Hugging Face model goes through its whole life with the official client: pull, list, show,
// copy, chat through the copy, delete.
func TestPullLifecycle(t *testing.T) {
	l := setupLibrary(t, models.Config{})
	l.serve(t, core.NewCatalog(core.Config{}, l.Store, l.Mgr, hf.NewSource(hf.Config{
		Endpoint: l.Hub.URL(), Backoff: 1, HTTPClient: &http.Client{Transport: slowHub{l.Hub.CDNURL()}}})))
	data := hubModel(t)
	const repo, file, id = "owner/repo", "repo-Q4_K_M.gguf", "hf.co/owner/repo:Q4_K_M"
	l.Hub.AddFile(repo, file, data)
	sum := l.Hub.SHA256(repo, file)

	var lines []api.ProgressResponse
	if err := l.client.Pull(t.Context(), &api.PullRequest{Model: "owner/repo:Q4_K_M"}, func(p api.ProgressResponse) error {
		lines = append(lines, p)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	checkPullLines(t, lines, "sha256:"+sum, int64(len(data)))

	list, err := l.client.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Models) != 1 {
		t.Fatalf("list after pull: %+v", list.Models)
	}
	m := list.Models[0]
	if m.Name != id || m.Model != id || m.Size != int64(len(data)) || m.Digest != sum || m.ModifiedAt.IsZero() {
		t.Errorf("listed %+v, want %s, %d bytes, digest %s", m, id, len(data), sum)
	}
	if d := m.Details; d.Format != "gguf" || d.Family != "llama" || d.QuantizationLevel != "Q8_0" || d.ParameterSize == "" {
		t.Errorf("details %+v", d)
	}
	show, err := l.client.Show(t.Context(), &api.ShowRequest{Model: id})
	if err != nil {
		t.Fatal(err)
	}
	if show.Template != chatML || show.Details.Family != "llama" || show.ModelInfo["general.architecture"] != "llama" || len(show.Tensors) == 0 {
		t.Errorf("show: template %q details %+v", show.Template, show.Details)
	}

	// Pulling it again finds it in the catalog: every closing line at once, or just "success".
	resp, b := l.do(t, http.MethodPost, "/api/pull", `{"model":"hf.co/owner/repo:Q4_K_M"}`)
	want := `{"status":"pulling manifest"}` + "\n" + `{"status":"verifying sha256 digest"}` + "\n" +
		`{"status":"writing manifest"}` + "\n" + `{"status":"success"}` + "\n"
	if resp.StatusCode != http.StatusOK || string(b) != want || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Errorf("pull again: %d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	resp, b = l.do(t, http.MethodPost, "/api/pull", `{"name":"owner/repo:Q4_K_M","stream":false}`)
	if resp.StatusCode != http.StatusOK || string(b) != `{"status":"success"}` {
		t.Errorf("pull, not streaming: %d %q", resp.StatusCode, b)
	}

	if err := l.client.Copy(t.Context(), &api.CopyRequest{Source: id, Destination: "mine:latest"}); err != nil {
		t.Fatal(err)
	}
	if names := l.names(t); len(names) != 2 || !has(names, "mine:latest") || !has(names, id) {
		t.Errorf("list after copy: %v", names)
	}
	var reply strings.Builder
	if err := l.client.Chat(t.Context(), &api.ChatRequest{Model: "mine", Messages: []api.Message{{Role: "user", Content: "hi"}}},
		func(r api.ChatResponse) error {
			reply.WriteString(r.Message.Content)
			return nil
		}); err != nil || reply.String() != servertest.Reply {
		t.Fatalf("chat through the copy: %q, %v", reply.String(), err)
	}
	// the copy shares its original's worker: one loaded model, under the original's name
	ps, err := l.client.ListRunning(t.Context())
	if err != nil || len(ps.Models) != 1 || ps.Models[0].Name != id || ps.Models[0].Size <= 0 || ps.Models[0].ContextLength <= 0 {
		t.Errorf("ps after chatting with the copy: %+v, %v", ps, err)
	}

	e, err := l.Mgr.Catalog().Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.client.Delete(t.Context(), &api.DeleteRequest{Model: "mine"}); err != nil {
		t.Fatal(err)
	}
	if names := l.names(t); len(names) != 1 || names[0] != id {
		t.Errorf("list after deleting the copy: %v", names)
	}
	if _, err := os.Stat(e.Path); err != nil {
		t.Errorf("deleting the copy removed the original's file: %v", err)
	}
	resp, b = l.do(t, http.MethodDelete, "/api/delete", `{"model":"hf.co/owner/repo:Q4_K_M"}`)
	if resp.StatusCode != http.StatusOK || len(b) != 0 {
		t.Errorf("delete: %d %q, want 200 and no body", resp.StatusCode, b)
	}
	if names := l.names(t); len(names) != 0 {
		t.Errorf("list after deleting everything: %v", names)
	}
	if _, err := os.Stat(e.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the pulled file is still there: %v", err)
	}
}

// checkPullLines asserts Ollama's order: "pulling manifest", the file's progress growing to its
// size, "verifying sha256 digest", "writing manifest", "success".
func checkPullLines(t *testing.T, lines []api.ProgressResponse, digest string, size int64) {
	t.Helper()
	n := len(lines)
	if n < 5 || lines[0].Status != "pulling manifest" || lines[n-3].Status != "verifying sha256 digest" ||
		lines[n-2].Status != "writing manifest" || lines[n-1].Status != "success" {
		t.Fatalf("pull lines %+v", lines)
	}
	progress := lines[1 : n-3]
	wantStatus := "pulling " + strings.TrimPrefix(digest, "sha256:")[:12]
	var last int64 = -1
	between := 0
	for _, p := range progress {
		if p.Status != wantStatus || p.Digest != digest || p.Total != size || p.Completed < last || p.Completed > size {
			t.Errorf("progress line %+v after completed %d; want %q, %s, total %d", p, last, wantStatus, digest, size)
		}
		if p.Completed > 0 && p.Completed < size {
			between++
		}
		last = p.Completed
	}
	if progress[0].Completed != 0 || last != size || between == 0 {
		t.Errorf("progress %+v: want it to start at 0, pass through the middle and end at %d", progress, size)
	}
}

func TestPullErrors(t *testing.T) {
	l := setupLibrary(t, models.Config{})
	l.Hub.AddFile("owner/multi", "multi-Q4_K_M.gguf", hubModel(t))
	l.Hub.AddFile("owner/multi", "multi-Q8_0.gguf", hubModel(t))
	tests := []struct {
		name, body string
		status     int
		msg        []string
	}{
		{"Ollama library name", `{"model":"llama3.2"}`, 400, []string{"only Hugging Face references are pulled", "hf.co/OWNER/REPO:QUANT"}},
		{"Ollama library name, not streaming", `{"model":"llama3.2:1b","stream":false}`, 400, []string{"only Hugging Face references are pulled"}},
		{"unknown repository", `{"model":"nobody/nothing:Q4_K_M"}`, 404, []string{"not found on Hugging Face"}},
		{"unknown repository, not streaming", `{"model":"hf.co/nobody/nothing","stream":false}`, 404, []string{"not found on Hugging Face"}},
		{"no such quant", `{"model":"owner/multi:Q5_K_M"}`, 400, []string{"has no Q5_K_M quant", "Q4_K_M, Q8_0"}},
		{"no such file", `{"model":"owner/multi/other.gguf"}`, 400, []string{"multi-Q4_K_M.gguf, multi-Q8_0.gguf"}},
		{"not a GGUF file", `{"model":"owner/multi/README.md"}`, 400, []string{"file must end in .gguf"}},
		{"missing model", `{"stream":true}`, 400, []string{"model is required"}},
		{"malformed JSON", `{"model":`, 400, []string{"malformed JSON"}},
		{"model a number", `{"model":5}`, 400, []string{`"model": expected a string`}},
		{"empty body", ``, 400, []string{"missing request body"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := l.do(t, http.MethodPost, "/api/pull", tt.body)
			for _, msg := range tt.msg {
				checkError(t, resp, b, tt.status, msg)
			}
		})
	}
	// the official client sees a status error, not a stream that fails
	err := l.client.Pull(t.Context(), &api.PullRequest{Model: "nobody/nothing"}, func(api.ProgressResponse) error { return nil })
	var se api.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusNotFound {
		t.Errorf("client pull of an unknown repository: %#v", err)
	}
	if names := l.names(t); len(names) != 0 {
		t.Errorf("failed pulls registered %v", names)
	}
}

// A pull that fails after its progress began ends the stream with an error line.
func TestPullFailsMidway(t *testing.T) {
	l := setupLibrary(t, models.Config{})
	l.Hub.AddFile("owner/repo", "repo-Q4_K_M.gguf", []byte(strings.Repeat("not a model ", 1000)))
	resp, b := l.do(t, http.MethodPost, "/api/pull", `{"model":"owner/repo"}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	got := lines(t, b)
	last := got[len(got)-1]
	if got[0]["status"] != "pulling manifest" || len(last) != 1 || !strings.Contains(last["error"].(string), "not a usable GGUF model") {
		t.Errorf("lines %v", got)
	}
	if names := l.names(t); len(names) != 0 {
		t.Errorf("a broken download was registered: %v", names)
	}
}

func TestCopyErrors(t *testing.T) {
	l := setupLibrary(t, models.Config{})
	l.AddModel(t, "tiny", gguftest.TinyLlamaOptions{})
	l.AddModel(t, "other", gguftest.TinyLlamaOptions{})
	tests := []struct {
		name, body string
		status     int
		msg        string
	}{
		{"unknown source", `{"source":"nope","destination":"x"}`, 404, `model "nope" not found`},
		{"source a path", `{"source":"/etc/passwd","destination":"x"}`, 400, "is a path"},
		{"destination a path", `{"source":"tiny","destination":"../x"}`, 400, `contains ".."`},
		{"destination with a space", `{"source":"tiny","destination":"a b"}`, 400, "may hold only letters"},
		{"destination taken", `{"source":"tiny","destination":"other"}`, 400, "already exists"},
		{"missing source", `{"destination":"x"}`, 400, "source is required"},
		{"missing destination", `{"source":"tiny"}`, 400, "destination is required"},
		{"malformed JSON", `{"source":"tiny",`, 400, "malformed JSON"},
		{"empty body", ``, 400, "missing request body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := l.do(t, http.MethodPost, "/api/copy", tt.body)
			checkError(t, resp, b, tt.status, tt.msg)
		})
	}
	if names := l.names(t); len(names) != 2 {
		t.Errorf("failed copies changed the list: %v", names)
	}
}

func TestDeleteErrors(t *testing.T) {
	l := setupLibrary(t, models.Config{})
	tests := []struct {
		name, body string
		status     int
		msg        string
	}{
		{"unknown model", `{"model":"nope"}`, 404, "model 'nope' not found"},
		{"unknown model, deprecated name", `{"name":"nope:latest"}`, 404, "model 'nope:latest' not found"},
		{"a path", `{"model":"/etc/passwd"}`, 400, "is a path"},
		{"missing model", `{}`, 400, "model is required"},
		{"malformed JSON", `{"model"`, 400, "malformed JSON"},
		{"empty body", ``, 400, "missing request body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := l.do(t, http.MethodDelete, "/api/delete", tt.body)
			checkError(t, resp, b, tt.status, tt.msg)
		})
	}
	err := l.client.Delete(t.Context(), &api.DeleteRequest{Model: "nope"})
	var se api.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusNotFound || se.ErrorMessage != "model 'nope' not found" {
		t.Errorf("client delete of an unknown model: %#v", err)
	}
}

// Deleting a model while it generates lets the generation finish; the model is gone after.
func TestDeleteWhileGenerating(t *testing.T) {
	l := setupLibrary(t, models.Config{})
	e := l.AddModel(t, "slow", gguftest.TinyLlamaOptions{ChatTemplate: chatML})
	if _, err := l.Svc.Model("slow"); err != nil { // makes the model's fake worker
		t.Fatal(err)
	}
	r := l.Runner(e.Path)
	r.TokenDelay = 20 * time.Millisecond
	r.Requests() // its lock publishes TokenDelay to the generation that takes it later

	first := make(chan struct{})
	type result struct {
		text string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		var text strings.Builder
		err := l.client.Chat(t.Context(), &api.ChatRequest{Model: "slow", Messages: []api.Message{{Role: "user", Content: "hi"}}},
			func(r api.ChatResponse) error {
				if text.Len() == 0 {
					close(first)
				}
				text.WriteString(r.Message.Content)
				return nil
			})
		done <- result{text.String(), err}
	}()
	select {
	case <-first:
	case res := <-done:
		t.Fatalf("the chat ended before its first token: %+v", res)
	}
	// busy: ps shows the default keep-alive (5m) from now
	before := time.Now()
	ps, err := l.client.ListRunning(t.Context())
	if err != nil || len(ps.Models) != 1 {
		t.Fatalf("ps while generating: %+v, %v", ps, err)
	}
	checkExpiry(t, ps.Models[0].ExpiresAt, before, 5*time.Minute)

	if err := l.client.Delete(t.Context(), &api.DeleteRequest{Model: "slow"}); err != nil {
		t.Fatalf("delete while generating: %v", err)
	}
	if res := <-done; res.err != nil || res.text != servertest.Reply {
		t.Errorf("the generation under the delete: %q, %v", res.text, res.err)
	}
	if names := l.names(t); len(names) != 0 {
		t.Errorf("list after delete: %v", names)
	}
	resp, b := l.do(t, http.MethodPost, "/api/chat", `{"model":"slow","messages":[{"role":"user","content":"hi"}]}`)
	checkError(t, resp, b, http.StatusNotFound, `model "slow" not found`)
}

// checkExpiry asserts that expires_at is ka after a moment between before and now.
func checkExpiry(t *testing.T, got, before time.Time, ka time.Duration) {
	t.Helper()
	if lo, hi := before.Add(ka), time.Now().Add(ka); got.Before(lo.Add(-time.Second)) || got.After(hi.Add(time.Second)) {
		t.Errorf("expires_at %v, want between %v and %v", got, lo, hi)
	}
}

// Pull, copy and delete answer only this machine; the check looks at the TCP peer alone.
func TestAdminOnlyLocal(t *testing.T) {
	l := setupLibrary(t, models.Config{})
	l.AddModel(t, "tiny", gguftest.TinyLlamaOptions{})
	routes := []struct{ method, path, body string }{
		{http.MethodPost, "/api/pull", `{"model":"owner/repo"}`},
		{http.MethodPost, "/api/copy", `{"source":"tiny","destination":"copy"}`},
		{http.MethodDelete, "/api/delete", `{"model":"tiny"}`},
	}
	for _, remote := range []string{"203.0.113.7:5000", "[2001:db8::1]:443", "192.168.1.20:80", "garbage"} {
		for _, rt := range routes {
			req := httptest.NewRequest(rt.method, rt.path, strings.NewReader(rt.body))
			req.RemoteAddr = remote
			req.Header.Set("X-Forwarded-For", "127.0.0.1") // proves nothing
			rec := httptest.NewRecorder()
			l.handler.ServeHTTP(rec, req)
			checkError(t, rec.Result(), rec.Body.Bytes(), http.StatusForbidden, "allowed only from this machine")
		}
	}
	if names := l.names(t); len(names) != 1 {
		t.Errorf("refused requests changed the catalog: %v", names)
	}
	// loopback peers, IPv4 and IPv6, get past the check (an unknown model: 404, not 403)
	for _, remote := range []string{"127.0.0.1:5000", "127.8.9.10:1", "[::1]:5000", "[::ffff:127.0.0.1]:5000"} {
		req := httptest.NewRequest(http.MethodDelete, "/api/delete", strings.NewReader(`{"model":"nope"}`))
		req.RemoteAddr = remote
		rec := httptest.NewRecorder()
		l.handler.ServeHTTP(rec, req)
		checkError(t, rec.Result(), rec.Body.Bytes(), http.StatusNotFound, "model 'nope' not found")
	}
}

// /api/tags lists every catalog model, a missing file included; /api/ps only the loaded ones.
func TestTagsAndPs(t *testing.T) {
	l := setupLibrary(t, models.Config{})
	l.AddModel(t, "loaded", gguftest.TinyLlamaOptions{ChatTemplate: chatML})
	l.AddModel(t, "idle", gguftest.TinyLlamaOptions{Q8: true})
	gone := l.AddModel(t, "gone", gguftest.TinyLlamaOptions{})
	if err := os.Remove(gone.Path); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Svc.LoadModel(t.Context(), "loaded"); err != nil {
		t.Fatal(err)
	}
	list, err := l.client.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int64{}
	for _, m := range list.Models {
		sizes[m.Name] = m.Size
		if len(m.Digest) != 64 || m.Details.Format != "gguf" || m.Details.Family != "llama" {
			t.Errorf("entry %+v", m)
		}
	}
	if len(sizes) != 3 || sizes["loaded:latest"] <= 0 || sizes["idle:latest"] <= 0 || sizes["gone:latest"] != 0 {
		t.Errorf("tags sizes %v, want three models, the missing one with size 0", sizes)
	}
	if show, err := l.client.Show(t.Context(), &api.ShowRequest{Model: "idle"}); err != nil || show.Details.QuantizationLevel != "Q8_0" {
		t.Errorf("show of a model never loaded: %+v, %v", show, err)
	}
	if show, err := l.client.Show(t.Context(), &api.ShowRequest{Model: "gone"}); err != nil || show.Details.Family != "llama" {
		t.Errorf("show of a model whose file is gone: %+v, %v", show, err)
	}
	before := time.Now()
	ps, err := l.client.ListRunning(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(ps.Models) != 1 || ps.Models[0].Name != "loaded:latest" || ps.Models[0].SizeVRAM != 0 || ps.Models[0].Size <= 0 ||
		ps.Models[0].ContextLength <= 0 || ps.Models[0].Digest == "" {
		t.Fatalf("ps %+v", ps.Models)
	}
	checkExpiry(t, ps.Models[0].ExpiresAt, before.Add(-time.Second), 5*time.Minute) // the default, from the load

	// the listed model whose file is gone can be deleted
	if err := l.client.Delete(t.Context(), &api.DeleteRequest{Model: "gone:latest"}); err != nil {
		t.Errorf("delete a model whose file is gone: %v", err)
	}
	if names := l.names(t); len(names) != 2 || has(names, "gone:latest") {
		t.Errorf("list after delete: %v", names)
	}
}
