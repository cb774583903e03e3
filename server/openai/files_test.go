package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/batches"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
	"github.com/superfluid/superfluid/server/store"
)

// filesConfig describes a test server that keeps files and runs batches.
type filesConfig struct {
	maxBytes  int64               // --files-max-bytes
	maxTokens int                 // --max-tokens
	batches   batches.BatchConfig // the runner's bounds
	stopped   bool                // the runner is not started (batches wait)
	delay     time.Duration       // the fake's delay per token
	reply     string              // what the fake says
	dir       string              // the files folder; "" a fresh one
	st        *store.Store        // the store; nil a fresh one
	engine    *enginetest.Engine  // the fake; nil a fresh one
	model     func(*core.Model)   // adjusts the model (its projector facts) before serving
}

// filesFixture is a running server with a files folder and the batch runner.
type filesFixture struct {
	srv    *httptest.Server
	svc    *batches.Service
	st     *store.Store
	eng    *enginetest.Engine
	dir    string
	client openai.Client
}

func setupFiles(t *testing.T, cfg filesConfig) *filesFixture {
	t.Helper()
	if cfg.st == nil {
		cfg.st = servertest.Store(t)
	}
	if cfg.dir == "" {
		cfg.dir = filepath.Join(t.TempDir(), "files")
	}
	if cfg.reply == "" {
		cfg.reply = defaultReply
	}
	tmpl, err := chat.Parse("")
	if err != nil {
		t.Fatal(err)
	}
	eng := cfg.engine
	if eng == nil {
		eng = enginetest.New(4096, cfg.reply)
		eng.TokenDelay = cfg.delay
	}
	m := &core.Model{ID: "fake", Path: "/models/fake.gguf", Engine: eng, Template: tmpl, ContextLength: 4096}
	if cfg.model != nil {
		cfg.model(m)
	}
	cs := core.New(core.Config{MaxTokens: cfg.maxTokens}, cfg.st, m)
	svc := batches.New(batches.Config{Files: batches.FilesConfig{Dir: cfg.dir, MaxBytes: cfg.maxBytes}, Batches: cfg.batches}, cs, cfg.st)
	srv := httptest.NewServer(server.New(server.Config{Batches: svc}, cs))
	if !cfg.stopped {
		if err := svc.StartBackground(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		srv.Close()
		if err := svc.StopBackground(context.Background()); err != nil {
			t.Error(err)
		}
	})
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	return &filesFixture{srv: srv, svc: svc, st: cfg.st, eng: eng, dir: cfg.dir, client: client}
}

func (f *filesFixture) do(t *testing.T, method, path, body string) (*http.Response, []byte) {
	t.Helper()
	return servertest.Do(t, method, f.srv.URL+path, body)
}

// upload sends a multipart upload with the given fields (the file first when present).
func (f *filesFixture) upload(t *testing.T, fields map[string]string, content []byte) (*http.Response, []byte) {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	if content != nil {
		part, err := w.CreateFormFile("file", "input.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		part.Write(content)
	}
	for k, v := range fields {
		w.WriteField(k, v)
	}
	w.Close()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, f.srv.URL+"/v1/files", &body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	return servertest.Send(t, req)
}

// leftovers lists what the files folder holds besides the given ids.
func (f *filesFixture) leftovers(t *testing.T, keep ...string) []string {
	t.Helper()
	entries, err := os.ReadDir(f.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if !contains(keep, e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestFilesThroughTheSDK: openai-go uploads, gets, lists, reads and deletes a file.
func TestFilesThroughTheSDK(t *testing.T) {
	ctx := context.Background()
	f := setupFiles(t, filesConfig{})
	content := `{"custom_id":"a"}` + "\n"
	up, err := f.client.Files.New(ctx, openai.FileNewParams{File: openai.File(strings.NewReader(content), "in.jsonl", "application/jsonl"),
		Purpose: openai.FilePurposeBatch})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(up.ID, "file-") || up.Bytes != int64(len(content)) || up.Filename != "in.jsonl" || up.Purpose != "batch" ||
		up.Object != "file" || up.Status != "processed" || up.CreatedAt == 0 {
		t.Fatalf("upload: %s", up.RawJSON())
	}
	// The wire shape: expires_at and status_details are null, not absent.
	var raw map[string]json.RawMessage
	json.Unmarshal([]byte(up.RawJSON()), &raw)
	for _, key := range []string{"expires_at", "status_details"} {
		if v, ok := raw[key]; !ok || string(v) != "null" {
			t.Errorf("%s = %s, want null", key, v)
		}
	}
	second, err := f.client.Files.New(ctx, openai.FileNewParams{File: openai.File(strings.NewReader("notes"), "notes.txt", "text/plain"),
		Purpose: openai.FilePurposeUserData, ExpiresAfter: openai.FileNewParamsExpiresAfter{Seconds: 7200}})
	if err != nil {
		t.Fatal(err)
	}
	if second.ExpiresAt != second.CreatedAt+7200 {
		t.Fatalf("expires_after 7200: %s", second.RawJSON())
	}

	got, err := f.client.Files.Get(ctx, up.ID)
	if err != nil || got.ID != up.ID || got.Bytes != up.Bytes {
		t.Fatalf("get: %v, %v", got, err)
	}
	var ids []string
	iter := f.client.Files.ListAutoPaging(ctx, openai.FileListParams{Limit: openai.Int(1)})
	for iter.Next() {
		ids = append(ids, iter.Current().ID)
	}
	if err := iter.Err(); err != nil || len(ids) != 2 || ids[0] != second.ID || ids[1] != up.ID {
		t.Fatalf("list pages: %v, %v", ids, err)
	}
	page, err := f.client.Files.List(ctx, openai.FileListParams{Purpose: openai.String("batch")})
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != up.ID || page.HasMore {
		t.Fatalf("list by purpose: %+v, %v", page, err)
	}
	resp, err := f.client.Files.Content(ctx, up.ID)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != content {
		t.Fatalf("content %q, want %q", b, content)
	}
	del, err := f.client.Files.Delete(ctx, up.ID)
	if err != nil || !del.Deleted || del.ID != up.ID {
		t.Fatalf("delete: %+v, %v", del, err)
	}
	if _, err := f.client.Files.Get(ctx, up.ID); !hasStatus(err, http.StatusNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	if left := f.leftovers(t, second.ID); len(left) != 0 {
		t.Fatalf("the deleted file's content is still on disk: %v", left)
	}
}

func hasStatus(err error, status int) bool {
	var apiErr *openai.Error
	return errors.As(err, &apiErr) && apiErr.StatusCode == status
}

// TestFileIDsGetTheSame404: ids that try to climb out of the files folder, malformed ids and
// unknown ids all get the same 404, naming the id and nothing of the disk.
func TestFileIDsGetTheSame404(t *testing.T) {
	f := setupFiles(t, filesConfig{})
	// Something a traversal could reach.
	if err := os.WriteFile(filepath.Join(filepath.Dir(f.dir), "secret"), []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ path, id string }{
		{"../secret", "../secret"},
		{"..%2Fsecret", "../secret"},
		{"..%2F..%2F..%2Fetc%2Fpasswd", "../../../etc/passwd"},
		{"file-..%2F..%2Fsecret", "file-../../secret"},
		{"file-unknown", "file-unknown"},
		{"file-" + strings.Repeat("0", 24), "file-" + strings.Repeat("0", 24)},
		{"%2Fetc%2Fpasswd", "/etc/passwd"},
	}
	for _, tt := range tests {
		for _, r := range []struct{ method, suffix string }{{"GET", ""}, {"GET", "/content"}, {"DELETE", ""}} {
			resp, body := f.do(t, r.method, "/v1/files/"+tt.path+r.suffix, "")
			checkError(t, resp, body, wantError{status: 404, typ: "invalid_request_error", param: "id", msg: "No such File object: "})
			e := parseError(t, body)
			if e.Message != "No such File object: "+tt.id {
				t.Errorf("%s %s: message %q, want the id %q and nothing else", r.method, tt.path+r.suffix, e.Message, tt.id)
			}
			for _, leak := range []string{"no such file or directory", f.dir, "open ", "stat "} {
				if strings.Contains(string(body), leak) {
					t.Errorf("%s %s: the error tells of the disk (%q): %s", r.method, tt.path, leak, body)
				}
			}
		}
	}
	// The SDK escapes the id; it gets the same 404.
	if _, err := f.client.Files.Get(context.Background(), "../secret"); !hasStatus(err, http.StatusNotFound) {
		t.Fatalf("SDK get of ../secret: %v", err)
	}
}

// TestUploadOverQuota: an upload that does not fit in --files-max-bytes is refused with 413
// files_quota_exceeded and leaves nothing behind.
func TestUploadOverQuota(t *testing.T) {
	f := setupFiles(t, filesConfig{maxBytes: 100})
	resp, body := f.upload(t, map[string]string{"purpose": "batch"}, bytes.Repeat([]byte("a"), 60))
	if resp.StatusCode != 200 {
		t.Fatalf("first upload: %d %s", resp.StatusCode, body)
	}
	var kept struct{ ID string }
	json.Unmarshal(body, &kept)
	for _, size := range []int{41, 1 << 20} {
		resp, body = f.upload(t, map[string]string{"purpose": "batch"}, bytes.Repeat([]byte("b"), size))
		checkError(t, resp, body, wantError{status: 413, typ: "invalid_request_error", param: "file", code: "files_quota_exceeded", msg: "--files-max-bytes"})
	}
	page, err := f.client.Files.List(context.Background(), openai.FileListParams{})
	if err != nil || len(page.Data) != 1 {
		t.Fatalf("files after the refusals: %+v, %v", page, err)
	}
	if left := f.leftovers(t, kept.ID); len(left) != 0 {
		t.Fatalf("stray files: %v", left)
	}
}

// TestUploadCutOffHalfway: a client that dies halfway through an upload leaves no row and no
// stray file, and a restart (a new service on the same store and folder) finds none either.
func TestUploadCutOffHalfway(t *testing.T) {
	f := setupFiles(t, filesConfig{})
	var head bytes.Buffer
	w := multipart.NewWriter(&head)
	w.WriteField("purpose", "batch")
	part, _ := w.CreateFormFile("file", "big.jsonl")
	part.Write(bytes.Repeat([]byte("x"), 64<<10))
	// No closing boundary: the body is cut here.
	conn, err := net.Dial("tcp", strings.TrimPrefix(f.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST /v1/files HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", w.FormDataContentType(), head.Len()*4)
	conn.Write(head.Bytes())
	waitFor(t, "the upload to reach the disk", func() bool { return len(f.leftovers(t)) > 0 })
	conn.Close()
	waitFor(t, "the cut upload to be removed", func() bool { return len(f.leftovers(t)) == 0 })
	page, err := f.client.Files.List(context.Background(), openai.FileListParams{})
	if err != nil || len(page.Data) != 0 {
		t.Fatalf("files after the cut: %+v, %v", page, err)
	}

	// A crash at the same point leaves the temporary file; the next start removes it.
	if err := os.WriteFile(filepath.Join(f.dir, ".upload-crashed"), []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	again := setupFiles(t, filesConfig{st: f.st, dir: f.dir})
	if left := again.leftovers(t); len(left) != 0 {
		t.Fatalf("after a restart the folder holds %v", left)
	}
}

// TestUploadBadInput: what POST /v1/files refuses, with the parameter at fault.
func TestUploadBadInput(t *testing.T) {
	f := setupFiles(t, filesConfig{})
	tests := []struct {
		name    string
		fields  map[string]string
		content []byte
		param   string
	}{
		{"no file", map[string]string{"purpose": "batch"}, nil, "file"},
		{"no purpose", map[string]string{}, []byte("x"), "purpose"},
		{"unknown purpose", map[string]string{"purpose": "photos"}, []byte("x"), "purpose"},
		{"expiry too short", map[string]string{"purpose": "batch", "expires_after[seconds]": "60"}, []byte("x"), "expires_after[seconds]"},
		{"expiry anchor", map[string]string{"purpose": "batch", "expires_after[anchor]": "last_used", "expires_after[seconds]": "3600"}, []byte("x"), "expires_after[anchor]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := f.upload(t, tt.fields, tt.content)
			checkError(t, resp, body, wantError{status: 400, typ: "invalid_request_error", param: tt.param})
		})
	}
	resp, body := f.do(t, "POST", "/v1/files", `{"purpose":"batch"}`)
	checkError(t, resp, body, wantError{status: 400, typ: "invalid_request_error", param: "file", msg: "multipart/form-data"})
	resp, body = f.do(t, "GET", "/v1/files?limit=0", "")
	checkError(t, resp, body, wantError{status: 400, typ: "invalid_request_error", param: "limit"})
	resp, body = f.do(t, "GET", "/v1/files?order=sideways", "")
	checkError(t, resp, body, wantError{status: 400, typ: "invalid_request_error", param: "order"})
	if left := f.leftovers(t); len(left) != 0 {
		t.Fatalf("refused uploads left %v", left)
	}
}
