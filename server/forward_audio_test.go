package server_test

import (
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/superfluid/superfluid/server/servertest"
)

// audioUpstream is a fake vLLM serving a Whisper model as "served": its transcription and
// translation routes answer with what their multipart body held.
type audioUpstream struct {
	*httptest.Server
	mu  sync.Mutex
	got []string // path, model, file bytes and language of each POST
}

func newAudioUpstream(t *testing.T) *audioUpstream {
	u := &audioUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"served","max_model_len":4096}]}`)
			return
		}
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			http.Error(w, "not multipart: "+err.Error(), http.StatusBadRequest)
			return
		}
		f, _, err := r.FormFile("file")
		if err != nil {
			http.Error(w, "no file", http.StatusBadRequest)
			return
		}
		file, _ := io.ReadAll(f)
		u.mu.Lock()
		u.got = append(u.got, fmt.Sprintf("%s model=%s file=%s lang=%s", r.URL.Path, r.FormValue("model"), file, r.FormValue("language")))
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"text":"from the upstream","usage":{"type":"tokens","input_tokens":5,"output_tokens":3,"total_tokens":8}}`)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *audioUpstream) posts() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.got...)
}

// audioForm is a transcription body: a file "RIFFfake" and the fields, in order.
func audioForm(t *testing.T, fields ...string) (string, *bytes.Buffer) {
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	for i := 0; i+1 < len(fields); i += 2 {
		if err := w.WriteField(fields[i], fields[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	fw, err := w.CreateFormFile("file", "clip.wav")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(fw, "RIFFfake")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w.FormDataContentType(), &body
}

// TestTranscriptionsForwarded: in team mode, /v1/audio/transcriptions and /v1/audio/translations
// for a model on a lane forwarding to another server (vLLM serving Whisper) reach that server
// with the served model's name in the multipart body and the rest as sent, and its reply comes
// back as is, as every POST /v1/* did before the routes had handlers of their own (SlotServe's
// "any other route of the model server is forwarded"); a local lane's model is answered here
// (the echo model hears nothing: 400 unsupported_model), and nothing of it reaches the upstream.
func TestTranscriptionsForwarded(t *testing.T) {
	up := newAudioUpstream(t)
	srv, _, _ := teamRouter(t, up.URL, servertest.Store(t))
	for _, path := range []string{"/v1/audio/transcriptions", "/v1/audio/translations"} {
		ct, body := audioForm(t, "model", "qwen", "language", "de")
		req, _ := http.NewRequestWithContext(t.Context(), "POST", srv.URL+path, body)
		req.Header.Set("Content-Type", ct)
		resp, got := servertest.Send(t, req)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(got), `"text":"from the upstream"`) {
			t.Fatalf("%s on the forwarded lane: %d %s", path, resp.StatusCode, got)
		}
	}
	want := "[/v1/audio/transcriptions model=served file=RIFFfake lang=de /v1/audio/translations model=served file=RIFFfake lang=de]"
	if got := fmt.Sprint(up.posts()); got != want {
		t.Fatalf("the upstream got\n%s\nwant\n%s", got, want)
	}

	ct, body := audioForm(t, "model", "alpha")
	req, _ := http.NewRequestWithContext(t.Context(), "POST", srv.URL+"/v1/audio/transcriptions", body)
	req.Header.Set("Content-Type", ct)
	resp, got := servertest.Send(t, req)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(got), "unsupported_model") {
		t.Fatalf("transcription on the local lane: %d %s", resp.StatusCode, got)
	}
	if n := len(up.posts()); n != 2 {
		t.Fatalf("a local lane's transcription reached the upstream (%d requests)", n)
	}
}

// TestLoRARoutesNotRelayed: in team mode /v1/lora/load and /v1/lora/unload are this server's
// admin routes: for a model on a forwarded lane they are refused here (its adapters are its
// server's), never relayed with the lane's key, which would make any member that server's
// admin (as vLLM's /v1/load_lora_adapter is not relayed).
func TestLoRARoutesNotRelayed(t *testing.T) {
	up := newUsageUpstream(t)
	srv, _, _ := teamRouter(t, up.URL, servertest.Store(t))
	for _, tc := range [][2]string{
		{"/v1/lora/load", `{"model": "qwen", "adapter": "/models/tone.gguf"}`},
		{"/v1/lora/unload", `{"model": "qwen", "id": "tone"}`},
	} {
		resp, body := servertest.Do(t, "POST", srv.URL+tc[0], tc[1])
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s for the forwarded lane's model: %d %s, want 400", tc[0], resp.StatusCode, body)
		}
	}
	if resp, body := servertest.Do(t, "POST", srv.URL+"/v1/lora/load", `{"model": "qwen", "adapter": "/models/tone.gguf"}`); !strings.Contains(string(body), "served by another server") {
		t.Errorf("load for the forwarded lane's model: %d %s, want it to say the model is another server's", resp.StatusCode, body)
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	if len(up.paths) != 0 {
		t.Fatalf("the upstream was sent %v", up.paths)
	}
}
