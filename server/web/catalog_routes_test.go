package web_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/runtime/models/hf"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/lanes"
	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/servertest"
	"github.com/superfluid/superfluid/server/web"
	"github.com/superfluid/superfluid/server/web/sessions"
)

// catalogTeam is a team server over a real catalog (servertest.Catalog: SQLite, the model
// manager with fake workers, a fake Hugging Face Hub) with the web API mounted: the admin
// "root" (key RootKey), the member "bob" (key BobKey), a local lane "main" serving "alpha".
type catalogTeam struct {
	*testTeam
	Cat     *servertest.Catalog
	Core    *core.Service
	Cache   string
	MainID  string
	AlphaID string
}

func newCatalogTeam(t *testing.T) *catalogTeam {
	t.Helper()
	ctx := context.Background()
	cat := servertest.NewCatalog(t, models.Config{})
	// A core of its own over the same catalog, pulling with a short stall timeout (a stalled
	// download resumes after it: the progress test stalls the fake Hub on purpose).
	hub := hf.NewSource(hf.Config{Endpoint: cat.Hub.URL(), Backoff: 1, StallTimeout: 300 * time.Millisecond})
	svc := core.NewCatalog(core.Config{}, cat.Store, cat.Mgr, hub)
	alpha := cat.AddModel(t, "alpha", gguftest.TinyLlamaOptions{})
	ct := &catalogTeam{testTeam: &testTeam{Store: cat.Store, Clock: &clock{now: time.Now().UTC()}}, Cat: cat, Core: svc,
		Cache: t.TempDir(), AlphaID: alpha.ID}
	st := cat.Store
	var err error
	if ct.Keys, err = auth.New(ctx, auth.Config{Store: st, Required: true}); err != nil {
		t.Fatal(err)
	}
	ct.People = people.New(people.Config{Store: st, Keys: ct.Keys, Hash: people.HashParams{Memory: 64, Time: 1, Threads: 1}})
	for _, np := range []people.NewPerson{{Name: "root", Password: "password0", Role: people.RoleAdmin}, {Name: "bob", Password: "password1"}} {
		if _, err := ct.People.Create(ctx, people.CLI, np); err != nil {
			t.Fatal(err)
		}
	}
	if ct.RootKey, _, err = ct.Keys.Create(ctx, auth.NewKey{Name: "roots", Person: "root"}); err != nil {
		t.Fatal(err)
	}
	if ct.BobKey, _, err = ct.Keys.Create(ctx, auth.NewKey{Name: "bobs", Person: "bob"}); err != nil {
		t.Fatal(err)
	}
	echo := &servertest.Echo{}
	devices := []lanes.Device{{Name: "cpu"}}
	ct.Lanes = lanes.NewManager(lanes.Config{Store: st, Devices: devices, Catalog: svc,
		Factory: func(ctx context.Context, spec lanes.Spec) (*core.Model, func(), error) {
			return servertest.EchoModel(spec.Lane.Model, echo), func() {}, nil
		}})
	t.Cleanup(func() { ct.Lanes.Close(ctx) })
	main, err := ct.Lanes.Add(ctx, lanes.NewLane{Name: "main", Device: "cpu", Engine: lanes.Local, Model: "alpha"})
	if err != nil {
		t.Fatal(err)
	}
	ct.MainID = main.ID
	for _, l := range ct.Lanes.Lanes() {
		select {
		case <-l.Settled():
		case <-time.After(5 * time.Second):
			t.Fatalf("lane %s did not settle", l.Name())
		}
	}
	ct.Sessions = sessions.New(sessions.Config{Store: st})
	ct.API = web.New(web.Config{People: ct.People, Keys: ct.Keys, Lanes: ct.Lanes, Devices: devices, Core: svc, Store: st,
		Sessions: ct.Sessions, StorageCache: ct.Cache})
	srv := httptest.NewServer(server.New(server.Config{Keys: ct.Keys, People: ct.People, Lanes: ct.Lanes, Devices: devices, Web: ct.API}, svc))
	t.Cleanup(srv.Close)
	ct.URL = srv.URL
	return ct
}

// waitPull polls the pull id until it finishes, returning every state seen.
func (ct *catalogTeam) waitPull(t *testing.T, id string, each func(reply)) reply {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		r := ct.withKey(t, ct.BobKey, "GET", "/api/catalog/pulls/"+id, "")
		if r.status != 200 {
			t.Fatalf("pull %s: %d %s", id, r.status, r.body)
		}
		if each != nil {
			each(r)
		}
		if r.obj["finished_at"] != nil {
			return r
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("pull %s did not finish", id)
	return reply{}
}

func (ct *catalogTeam) catalogEntry(t *testing.T, id string) map[string]any {
	t.Helper()
	r := ct.withKey(t, ct.BobKey, "GET", "/api/catalog", "")
	if r.status != 200 {
		t.Fatalf("catalog: %d %s", r.status, r.body)
	}
	for _, d := range r.obj["data"].([]any) {
		if m := d.(map[string]any); m["id"] == id {
			return m
		}
	}
	t.Fatalf("catalog has no %s: %s", id, r.body)
	return nil
}

func TestCatalogListsModelsAndLanes(t *testing.T) {
	ct := newCatalogTeam(t)
	m := ct.catalogEntry(t, ct.AlphaID)
	if m["family"] != "llama" || m["size_bytes"].(float64) <= 0 || m["parameters"].(float64) <= 0 || m["quantization"] == "" ||
		m["storage"] != "" || m["name"] != "alpha" {
		t.Errorf("alpha = %v", m)
	}
	if fmt.Sprint(m["lanes"]) != "["+ct.MainID+"]" || fmt.Sprint(m["loaded_on"]) != "["+ct.MainID+"]" {
		t.Errorf("alpha's lanes %v, loaded on %v; want the lane main (%s) for both", m["lanes"], m["loaded_on"], ct.MainID)
	}
	if r := send(t, "GET", ct.URL+"/api/catalog", "", http.Header{}); r.status != 401 {
		t.Errorf("the catalog without a caller: %d", r.status)
	}
}

// A pull's progress moves while it downloads, and the model joins the catalog, loadable by the
// local lane.
func TestCatalogPullProgress(t *testing.T) {
	ct := newCatalogTeam(t)
	data := servertest.TinyModel(t, gguftest.TinyLlamaOptions{Vocab: 4096, Embd: 256, Seed: 7})
	const repo, file = "owner/big-GGUF", "big-F32.gguf"
	ct.Cat.Hub.AddFile(repo, file, data)
	faults := ct.Cat.Hub.Faults(repo, file)
	size := int64(len(data))
	faults.StallAt.Store(size / 4) // the download stalls there, resumes after the stall timeout

	r := ct.withKey(t, ct.RootKey, "POST", "/api/catalog/pulls", `{"model":"hf.co/owner/big-GGUF:F32"}`)
	if r.status != 202 || r.obj["object"] != "catalog.pull" {
		t.Fatalf("start pull: %d %s", r.status, r.body)
	}
	id := r.obj["id"].(string)
	if again := ct.withKey(t, ct.RootKey, "POST", "/api/catalog/pulls", `{"model":"hf.co/owner/big-GGUF:F32"}`); again.obj["id"] != id {
		t.Errorf("a second POST of the running pull started %v, want %s", again.obj["id"], id)
	}
	seen := map[float64]bool{}
	rearmed := false
	final := ct.waitPull(t, id, func(r reply) {
		if r.obj["status"] != "downloading" {
			return
		}
		c := r.obj["completed_bytes"].(float64)
		if c > 0 && c < float64(size) {
			seen[c] = true // a value strictly between: the bar is moving
		}
		if c > 0 && !rearmed {
			rearmed = true
			faults.StallAt.Store(size / 2) // a second stall further on: a second value to see
		}
		if r.obj["total_bytes"].(float64) != float64(size) {
			t.Errorf("total_bytes = %v, want %d", r.obj["total_bytes"], size)
		}
	})
	if final.obj["status"] != "done" || final.obj["completed_bytes"].(float64) != float64(size) || final.obj["error"] != "" {
		t.Fatalf("finished pull: %s", final.body)
	}
	t.Logf("completed_bytes seen while downloading: %v (of %d)", seen, size)
	if len(seen) < 2 {
		t.Errorf("completed_bytes took %d distinct values strictly between 0 and the size while downloading (%v), want 2 or more", len(seen), seen)
	}
	list := ct.withKey(t, ct.BobKey, "GET", "/api/catalog/pulls", "")
	if d := list.obj["data"].([]any); len(d) != 1 || d[0].(map[string]any)["id"] != id {
		t.Errorf("pulls list: %s", list.body)
	}
	modelID := final.obj["catalog_id"].(string)
	m := ct.catalogEntry(t, modelID)
	if m["size_bytes"].(float64) != float64(size) || fmt.Sprint(m["lanes"]) != "["+ct.MainID+"]" || fmt.Sprint(m["loaded_on"]) != "[]" {
		t.Errorf("pulled model: %v", m)
	}
}

func TestCatalogPullRefusals(t *testing.T) {
	ct := newCatalogTeam(t)
	for _, c := range []struct {
		key, body   string
		status      int
		code, param string
	}{
		{ct.BobKey, `{"model":"hf.co/owner/x-GGUF:Q8_0"}`, 403, "admin_required", ""},
		{ct.RootKey, `{}`, 400, "invalid_body", "model"},
		{ct.RootKey, `{"model":"not a reference"}`, 400, "invalid_body", "model"},
		{ct.RootKey, `{"model":"hf.co/owner/x-GGUF:Q8_0","storage":"storage-nope"}`, 404, "storage_not_found", "storage"},
	} {
		r := ct.withKey(t, c.key, "POST", "/api/catalog/pulls", c.body)
		if r.status != c.status || r.code() != c.code || r.param() != c.param {
			t.Errorf("POST %s: %d %s, want %d %s param %q", c.body, r.status, r.body, c.status, c.code, c.param)
		}
	}
	if r := ct.withKey(t, ct.BobKey, "GET", "/api/catalog/pulls/pull-nope", ""); r.status != 404 || r.code() != "pull_not_found" {
		t.Errorf("unknown pull: %d %s", r.status, r.body)
	}
	// A repository the Hub does not have: the pull fails, with the reason.
	r := ct.withKey(t, ct.RootKey, "POST", "/api/catalog/pulls", `{"model":"hf.co/owner/missing-GGUF:Q8_0"}`)
	if r.status != 202 {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	final := ct.waitPull(t, r.obj["id"].(string), nil)
	if final.obj["status"] != "failed" || final.obj["error"] == "" {
		t.Errorf("a pull of a missing repository: %s", final.body)
	}
}

// A pull into a local storage lands in its folder; the catalog says so, and the model loads.
func TestCatalogPullIntoFolder(t *testing.T) {
	ct := newCatalogTeam(t)
	ct.Cat.Hub.AddFile("owner/tiny-GGUF", "tiny-Q8_0.gguf", servertest.TinyModel(t, gguftest.TinyLlamaOptions{Seed: 3}))
	dir := t.TempDir()
	st := ct.withKey(t, ct.RootKey, "POST", "/api/admin/storage", fmt.Sprintf(`{"name":"disk","kind":"local","path":%q}`, dir))
	if st.status != 201 {
		t.Fatal(st.status, string(st.body))
	}
	stID := st.obj["id"].(string)
	r := ct.withKey(t, ct.RootKey, "POST", "/api/catalog/pulls", fmt.Sprintf(`{"model":"hf.co/owner/tiny-GGUF:Q8_0","storage":%q}`, stID))
	if r.status != 202 || r.obj["storage"] != stID {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	final := ct.waitPull(t, r.obj["id"].(string), nil)
	if final.obj["status"] != "done" {
		t.Fatalf("pull: %s", final.body)
	}
	modelID := final.obj["catalog_id"].(string)
	if m := ct.catalogEntry(t, modelID); m["storage"] != stID {
		t.Errorf("the catalog places %s in %v, want %s", modelID, m["storage"], stID)
	}
	m, err := ct.Core.LoadModel(context.Background(), modelID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(m.Path, dir+string(filepath.Separator)) {
		t.Errorf("the model loads from %s, want a file under %s", m.Path, dir)
	}
	if u := ct.withKey(t, ct.RootKey, "GET", "/api/admin/storage/"+stID+"/usage", ""); u.obj["objects"] != 1.0 {
		t.Errorf("the storage's usage: %s", u.body)
	}
}

// A pull into an s3 storage is downloaded into the local copy (what loads) and uploaded to the
// bucket.
func TestCatalogPullIntoS3(t *testing.T) {
	ct := newCatalogTeam(t)
	data := servertest.TinyModel(t, gguftest.TinyLlamaOptions{Seed: 4})
	ct.Cat.Hub.AddFile("owner/s3-GGUF", "s3-Q8_0.gguf", data)
	s3 := startS3(t)
	st := ct.withKey(t, ct.RootKey, "POST", "/api/admin/storage", fmt.Sprintf(
		`{"name":"bucket","kind":"s3","endpoint":%q,"bucket":"models","region":"us-east-1","access_key":%q,"password":%q}`, s3.URL, s3.AccessKey, s3.Secret))
	if st.status != 201 {
		t.Fatal(st.status, string(st.body))
	}
	stID := st.obj["id"].(string)
	r := ct.withKey(t, ct.RootKey, "POST", "/api/catalog/pulls", fmt.Sprintf(`{"model":"hf.co/owner/s3-GGUF:Q8_0","storage":%q}`, stID))
	if r.status != 202 {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	final := ct.waitPull(t, r.obj["id"].(string), nil)
	if final.obj["status"] != "done" {
		t.Fatalf("pull: %s", final.body)
	}
	u := ct.withKey(t, ct.RootKey, "GET", "/api/admin/storage/"+stID+"/usage", "")
	if u.obj["objects"] != 1.0 || u.obj["bytes"] != float64(len(data)) {
		t.Errorf("the bucket holds %s, want the model's %d bytes", u.body, len(data))
	}
	modelID := final.obj["catalog_id"].(string)
	if m := ct.catalogEntry(t, modelID); m["storage"] != stID {
		t.Errorf("the catalog places %s in %v, want %s", modelID, m["storage"], stID)
	}
	m, err := ct.Core.LoadModel(context.Background(), modelID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(m.Path, filepath.Join(ct.Cache, stID)+string(filepath.Separator)) {
		t.Errorf("the model loads from %s, want its copy under %s", m.Path, ct.Cache)
	}
	if _, err := os.Stat(m.Path); err != nil {
		t.Error(err)
	}

	// The local copy gone, a load fetches it back from the bucket first (and fails without).
	ctx := context.Background()
	if _, err := ct.Core.UnloadModel(ctx, modelID); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(m.Path); err != nil {
		t.Fatal(err)
	}
	if _, err := ct.Core.LoadModel(ctx, modelID); err == nil {
		t.Fatal("a model without its file loaded with no fetcher set")
	}
	ct.Cat.Mgr.SetFetch(ct.API.FetchCopy)
	if _, err := ct.Core.LoadModel(ctx, modelID); err != nil {
		t.Fatalf("load with the fetcher: %v", err)
	}
	if got, err := os.ReadFile(m.Path); err != nil || !bytes.Equal(got, data) {
		t.Errorf("the fetched copy: %d bytes, %v; want the model's %d", len(got), err, len(data))
	}
	if err := ct.API.FetchCopy(ctx, filepath.Join(t.TempDir(), "elsewhere.gguf")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("fetching a path no storage keeps: %v, want fs.ErrNotExist", err)
	}
}
