package web_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/server/servertest"
)

// TestCatalogPullDuringModelsMove: while the models folder is being moved, POST
// /api/catalog/pulls is a 409 models_moving that says so, at once, and starts no pull; after
// the move it is accepted.
func TestCatalogPullDuringModelsMove(t *testing.T) {
	ct := newCatalogTeam(t)
	end, err := ct.Core.BeginModelsMove()
	if err != nil {
		t.Fatal(err)
	}
	r := ct.withKey(t, ct.RootKey, "POST", "/api/catalog/pulls", `{"model":"hf.co/owner/x-GGUF:Q8_0"}`)
	e, _ := r.obj["error"].(map[string]any)
	if r.status != 409 || r.code() != "models_moving" || e["message"] != "the models folder is being moved; pull again once the move is done" {
		t.Fatalf("pull during the move: %d %s", r.status, r.body)
	}
	if list := ct.withKey(t, ct.RootKey, "GET", "/api/catalog/pulls", ""); len(list.obj["data"].([]any)) != 0 {
		t.Fatalf("a pull started during the move: %s", list.body)
	}
	end()
	if r := ct.withKey(t, ct.RootKey, "POST", "/api/catalog/pulls", `{"model":"hf.co/owner/x-GGUF:Q8_0"}`); r.status != 202 {
		t.Fatalf("pull after the move: %d %s", r.status, r.body)
	}
}

// TestCatalogPullUploadHoldsTheMove: a pull into an s3 storage is a pull until its upload is
// done: a move of the models folder is refused while the upload reads the model's files (the
// models folder's, when the catalog had the file there), naming the download.
func TestCatalogPullUploadHoldsTheMove(t *testing.T) {
	ct := newCatalogTeam(t)
	ct.Cat.Hub.AddFile("owner/s3-GGUF", "s3-Q8_0.gguf", servertest.TinyModel(t, gguftest.TinyLlamaOptions{Seed: 4}))
	s3 := startS3(t)
	target, _ := url.Parse(s3.URL)
	forward := httputil.NewSingleHostReverseProxy(target)
	var hold atomic.Bool
	putting, release := make(chan struct{}, 1), make(chan struct{})
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && hold.Load() {
			select {
			case putting <- struct{}{}:
			default:
			}
			<-release
		}
		forward.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	st := ct.withKey(t, ct.RootKey, "POST", "/api/admin/storage", fmt.Sprintf(
		`{"name":"bucket","kind":"s3","endpoint":%q,"bucket":"models","region":"us-east-1","access_key":%q,"password":%q}`, proxy.URL, s3.AccessKey, s3.Secret))
	if st.status != 201 {
		t.Fatal(st.status, string(st.body))
	}
	hold.Store(true)
	r := ct.withKey(t, ct.RootKey, "POST", "/api/catalog/pulls", fmt.Sprintf(`{"model":"hf.co/owner/s3-GGUF:Q8_0","storage":%q}`, st.obj["id"]))
	if r.status != 202 {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	select {
	case <-putting:
	case <-time.After(20 * time.Second):
		t.Fatal("the upload did not start")
	}
	_, err := ct.Core.BeginModelsMove()
	close(release)
	if err == nil || !strings.Contains(err.Error(), "the download of hf.co/owner/s3-GGUF:Q8_0 is running") {
		t.Fatalf("a move during the upload: %v", err)
	}
	if final := ct.waitPull(t, r.obj["id"].(string), nil); final.obj["status"] != "done" {
		t.Fatalf("pull: %s", final.body)
	}
	end, err := ct.Core.BeginModelsMove()
	if err != nil {
		t.Fatalf("a move after the upload: %v", err)
	}
	end()
}
