package web_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/server/core/qos"
	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/web"
)

// upload posts a backup file as the browser b (raw body, or multipart when multi).
func upload(t *testing.T, b *browser, data []byte, multi bool) reply {
	t.Helper()
	body, ctype := bytes.NewReader(data), "application/octet-stream"
	if multi {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		fw, _ := mw.CreateFormFile("file", "backup.db")
		fw.Write(data)
		mw.Close()
		body, ctype = bytes.NewReader(buf.Bytes()), mw.FormDataContentType()
	}
	h := http.Header{"Content-Type": {ctype}, "Cookie": {web.CookieName + "=" + b.cookie}, web.CSRFHeader: {b.csrf}}
	req, err := http.NewRequest("POST", b.tt.URL+"/api/admin/backups/restore", body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	return sendRequest(t, req)
}

func sendRequest(t *testing.T, req *http.Request) reply {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(res.Body)
	r := reply{status: res.StatusCode, header: res.Header, body: buf.Bytes()}
	_ = json.Unmarshal(buf.Bytes(), &r.obj)
	return r
}

func names(t *testing.T, tt *adminTeam) string {
	t.Helper()
	all, err := tt.People.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range all {
		out = append(out, p.Name)
	}
	return strings.Join(out, ",")
}

// TestAdminBackupAndRestore: a backup downloads while serving; a corrupt, foreign or truncated
// upload is 400 invalid_backup with the live rows intact; a real backup restores (raw body
// and multipart); both are audited.
func TestAdminBackupAndRestore(t *testing.T) {
	tt := newAdminTeam(t)
	root := tt.signIn(t, "root", "password0")
	r := root.do("GET", "/api/admin/backups/download", "")
	if r.status != 200 || r.header.Get("Content-Type") != "application/octet-stream" || !strings.HasPrefix(r.header.Get("Content-Disposition"), "attachment; filename=superfluid-") ||
		!bytes.HasPrefix(r.body, []byte("SQLite format 3\x00")) {
		t.Fatalf("download: %d %v %q", r.status, r.header, r.body[:min(len(r.body), 64)])
	}
	backup := r.body
	// A setting changed after the backup: the restore brings the backup's back, in force.
	if r := root.do("PUT", "/api/admin/settings", `{"default_qos": "background"}`); r.status != 200 || tt.API.DefaultQoS() != qos.Background {
		t.Fatalf("set the default QoS: %d %s", r.status, r.body)
	}

	// A person added after the backup: a restore takes them away, a refused one keeps them.
	if _, err := tt.People.Create(context.Background(), people.CLI, people.NewPerson{Name: "carol", Password: "password2"}); err != nil {
		t.Fatal(err)
	}
	live := names(t, tt)

	noise := make([]byte, 32<<10)
	rand.Read(noise)
	foreign := filepath.Join(t.TempDir(), "foreign.db")
	db, err := sql.Open("sqlite", foreign)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('hi')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	foreignBytes, err := os.ReadFile(foreign)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		data   []byte
		reason string
	}{
		{"random bytes", noise, "not a readable SQLite database"},
		{"foreign SQLite", foreignBytes, "not a superfluid database"},
		{"truncated backup", backup[:len(backup)/3], ""},
		{"empty", nil, "empty"},
	} {
		r := upload(t, root, tc.data, false)
		if msg, _ := r.obj["error"].(map[string]any)["message"].(string); r.status != 400 || r.code() != "invalid_backup" || !strings.Contains(msg, tc.reason) {
			t.Errorf("%s: %d %s, want 400 invalid_backup (%s)", tc.name, r.status, r.body, tc.reason)
		}
		if got := names(t, tt); got != live {
			t.Errorf("%s: live people %s, want %s untouched", tc.name, got, live)
		}
	}

	r = root.do("GET", "/api/admin/audit?limit=20", "")
	if body := string(r.body); !strings.Contains(body, `"backup.download"`) || !strings.Contains(body, `"restored":false`) {
		t.Errorf("audit of the download and the refusals: %s", body)
	}

	for _, multi := range []bool{false, true} {
		r := upload(t, root, backup, multi)
		if r.status != 200 || r.obj["restored"] != true || r.obj["tables"].(float64) < 10 {
			t.Fatalf("restore (multipart %v): %d %s", multi, r.status, r.body)
		}
		if got := names(t, tt); got != "root,bob" {
			t.Errorf("after restore: %s, want root,bob", got)
		}
		if got := tt.API.DefaultQoS(); got != qos.Unset {
			t.Errorf("default QoS after restore = %v, want the backup's (none)", got)
		}
		// A restore brings back no session (one signed out since the backup must stay out):
		// the admin signs in again, under the backup's password.
		if r := root.do("GET", "/api/auth/me", ""); r.status != 401 {
			t.Errorf("the session that restored, after the restore: %d %s, want 401", r.status, r.body)
		}
		root = tt.signIn(t, "root", "password0")
	}
	// The audit log is the backup's plus the restores themselves.
	r = root.do("GET", "/api/admin/audit?action=backup.restore", "")
	if r.status != 200 || len(r.list()) != 1 || !strings.Contains(string(r.body), `"restored":true`) {
		t.Errorf("audit after restore: %d %s", r.status, r.body)
	}
}
