package app

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestWebAdminServeProcess: in `superfluid serve --team` as its own process, the admin's web
// routes run over what app wires: a backup downloads and restores, the restore's log line
// reaches a follower of the runtime log stream (the default logger tees into it) and the log
// download, and the runtime details list this machine's backends.
func TestWebAdminServeProcess(t *testing.T) {
	p := startServe(t, "--team")
	m := regexp.MustCompile(`created the first admin "admin" with the one-time password (\S+) `).FindStringSubmatch(p.output())
	if m == nil {
		t.Fatalf("no one-time password in the serve output:\n%s", p.output())
	}
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, Timeout: time.Minute}
	do := func(method, path, ctype string, body []byte, csrf string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, p.url+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		if csrf != "" {
			req.Header.Set("X-CSRF-Token", csrf)
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		data, _ := io.ReadAll(res.Body)
		return res, data
	}
	res, body := do("POST", "/api/auth/login", "application/json", []byte(`{"name": "admin", "password": "`+m[1]+`"}`), "")
	var login struct {
		CSRF string `json:"csrf_token"`
	}
	if json.Unmarshal(body, &login); res.StatusCode != 200 || login.CSRF == "" {
		t.Fatalf("login: %d %s", res.StatusCode, body)
	}

	// Follow the log before the restore: its line must come live.
	req, _ := http.NewRequest("GET", p.url+"/api/admin/runtime/log/stream?backlog=0", nil)
	stream, err := client.Do(req)
	if err != nil || stream.StatusCode != 200 {
		t.Fatalf("log stream: %v %v", err, stream)
	}
	defer stream.Body.Close()
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stream.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				lines <- data
			}
		}
	}()

	res, backup := do("GET", "/api/admin/backups/download", "", nil, "")
	if res.StatusCode != 200 || !bytes.HasPrefix(backup, []byte("SQLite format 3")) {
		t.Fatalf("download: %d %q", res.StatusCode, backup[:min(len(backup), 40)])
	}
	if res, body := do("POST", "/api/admin/backups/restore", "application/octet-stream", backup, login.CSRF); res.StatusCode != 200 || !strings.Contains(string(body), `"restored":true`) {
		t.Fatalf("restore: %d %s", res.StatusCode, body)
	}
	// A restore brings back no session: sign in again (the backup has the same password).
	if res, body := do("POST", "/api/auth/login", "application/json", []byte(`{"name": "admin", "password": "`+m[1]+`"}`), ""); res.StatusCode != 200 {
		t.Fatalf("sign-in after the restore: %d %s", res.StatusCode, body)
	}
	deadline := time.After(30 * time.Second)
	for seen := false; !seen; {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatal("the log stream ended")
			}
			seen = strings.Contains(line, "restored from a backup")
		case <-deadline:
			t.Fatal("the restore's log line never reached the stream")
		}
	}
	if res, body := do("GET", "/api/admin/runtime/log", "", nil, ""); res.StatusCode != 200 || !strings.Contains(string(body), "INFO web: the database was restored from a backup") {
		t.Errorf("log download: %d %s", res.StatusCode, body)
	}
	if !strings.Contains(p.output(), "INFO web: the database was restored from a backup") {
		t.Errorf("the line did not reach stderr as well:\n%s", p.output())
	}
	if res, body := do("GET", "/api/admin/runtime", "", nil, ""); res.StatusCode != 200 || !strings.Contains(string(body), `"backends":[{"name":"cpu"`) {
		t.Errorf("runtime: %d %s", res.StatusCode, body)
	}
	if res, body := do("GET", "/api/admin/runtime/history", "", nil, ""); res.StatusCode != 200 || !strings.Contains(string(body), `"object":"list"`) {
		t.Errorf("history: %d %s", res.StatusCode, body)
	}
}
