package web_test

import (
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/server/servertest"
)

// TestRev20bPullIntoStorageOfAModelAlreadyPulled (rev20b): a model already in the models
// folder, pulled again into a local storage, reports "done" with that storage, yet nothing
// lands there (PullInto returns the existing entry "wherever it is"): the admin is told the
// model is in the storage when it is not.
func TestRev20bPullIntoStorageOfAModelAlreadyPulled(t *testing.T) {
	ct := newCatalogTeam(t)
	ct.Cat.Hub.AddFile("owner/twice-GGUF", "twice-Q8_0.gguf", servertest.TinyModel(t, gguftest.TinyLlamaOptions{Seed: 5}))
	first := ct.withKey(t, ct.RootKey, "POST", "/api/catalog/pulls", `{"model":"hf.co/owner/twice-GGUF:Q8_0"}`)
	if first.status != 202 {
		t.Fatalf("first pull: %d %s", first.status, first.body)
	}
	if f := ct.waitPull(t, first.obj["id"].(string), nil); f.obj["status"] != "done" {
		t.Fatalf("first pull: %s", f.body)
	}
	st := ct.withKey(t, ct.RootKey, "POST", "/api/admin/storage", fmt.Sprintf(`{"name":"disk","kind":"local","path":%q}`, t.TempDir()))
	if st.status != 201 {
		t.Fatal(st.status, string(st.body))
	}
	stID := st.obj["id"].(string)
	r := ct.withKey(t, ct.RootKey, "POST", "/api/catalog/pulls", fmt.Sprintf(`{"model":"hf.co/owner/twice-GGUF:Q8_0","storage":%q}`, stID))
	if r.status != 202 {
		t.Fatalf("pull into the storage: %d %s", r.status, r.body)
	}
	// A pull into the storage either puts the model there or fails saying where it is.
	final := ct.waitPull(t, r.obj["id"].(string), nil)
	if final.obj["status"] == "done" {
		u := ct.withKey(t, ct.RootKey, "GET", "/api/admin/storage/"+stID+"/usage", "")
		if u.obj["objects"] != 1.0 {
			t.Errorf("the pull into %s says done, but the storage holds %s", stID, u.body)
		}
	} else if msg, _ := final.obj["error"].(string); final.obj["status"] != "failed" || !strings.Contains(msg, "already in the catalog") {
		t.Errorf("the pull into %s: %s, want done or failed saying where the model is", stID, final.body)
	}
}

// TestRev20bDocsViewerHeaders (rev20b): /ui/ carries PagesCSP, nosniff and DENY framing, but
// the other HTML page the binary serves, the swagger-ui viewer at /api/docs/ (which runs
// "Try it out" requests with the admin's cookie and CSRF token), carries none of them.
func TestRev20bDocsViewerHeaders(t *testing.T) {
	tt := newTestTeam(t)
	for _, p := range []string{"/api/docs/index.html", "/api/docs/swagger-initializer.js"} {
		r := send(t, "GET", tt.URL+p, "", http.Header{})
		if r.status != 200 {
			t.Fatalf("%s: %d", p, r.status)
		}
		if r.header.Get("X-Content-Type-Options") != "nosniff" || r.header.Get("Content-Security-Policy") == "" {
			t.Errorf("%s: no nosniff or CSP: %v", p, r.header)
		}
	}
}

// TestRev20bPullIntoFolderFollowsALinkOut (rev20b): a pull into a local (or smb/nfs) storage
// downloads under the folder by a lexical check only, so a symbolic link inside the folder
// (on a share, anyone who can write it can make one) sends the download elsewhere on this
// machine. The storage's own Objects refuse that (os.Root); the pull must too.
func TestRev20bPullIntoFolderFollowsALinkOut(t *testing.T) {
	ct := newCatalogTeam(t)
	ct.Cat.Hub.AddFile("owner/link-GGUF", "link-Q8_0.gguf", servertest.TinyModel(t, gguftest.TinyLlamaOptions{Seed: 6}))
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "hf")); err != nil {
		t.Fatal(err)
	}
	st := ct.withKey(t, ct.RootKey, "POST", "/api/admin/storage", fmt.Sprintf(`{"name":"share","kind":"nfs","path":%q}`, dir))
	if st.status != 201 {
		t.Fatal(st.status, string(st.body))
	}
	r := ct.withKey(t, ct.RootKey, "POST", "/api/catalog/pulls", fmt.Sprintf(`{"model":"hf.co/owner/link-GGUF:Q8_0","storage":%q}`, st.obj["id"]))
	if r.status != 202 {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	final := ct.waitPull(t, r.obj["id"].(string), nil)
	var escaped []string
	filepath.WalkDir(outside, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			escaped = append(escaped, p)
		}
		return nil
	})
	if len(escaped) > 0 {
		t.Errorf("the pull (%s) wrote outside the storage through its link: %v", final.obj["status"], escaped)
	}
}
