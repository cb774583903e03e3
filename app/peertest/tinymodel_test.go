//go:build linux

package peertest

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
)

// TestStartWithOwnModel: a test without ../shared/models hands Start a GGUF it wrote itself
// (the tiny llama of gguftest), and the real server creates and runs it.
func TestStartWithOwnModel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := gguftest.WriteTinyLlama(path, gguftest.TinyLlamaOptions{}); err != nil {
		t.Fatal(err)
	}
	o := Start(t, Model{Name: "tiny:v1", Path: path, Modelfile: StoriesModelfile})
	if o.Model != "tiny:v1" {
		t.Fatalf("model %q", o.Model)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", o.OpenAI()+"/chat/completions", strings.NewReader(
		`{"model":"tiny:v1","messages":[{"role":"user","content":"hello"}],"max_tokens":4}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("chat on the tiny model: %s\n%s", resp.Status, o.LogTail(30))
	}
}
