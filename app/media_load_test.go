package app

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/models"
)

// TestLoadWithProjectorOfAnotherModel: a catalog model whose projector file was made for
// another text model (here replaced after it was registered, so no registration check saw it)
// is refused at load (by the manager's check before the worker starts; the worker's own
// refusal is runtime/llamacpp's and runtime/worker's to test), and POST /v1/models/load
// answers 400 naming both files and the width, not 500; the server stays up and loads the
// model once its projector fits.
func TestLoadWithProjectorOfAnotherModel(t *testing.T) {
	dir := t.TempDir()
	model, proj := filepath.Join(dir, "tiny.gguf"), filepath.Join(dir, "mmproj-tiny.gguf")
	if err := gguftest.WriteTinyLlama(model, gguftest.TinyLlamaOptions{Embd: 64}); err != nil {
		t.Fatal(err)
	}
	if err := gguftest.WriteVisionProjector(proj, gguftest.VisionProjectorOptions{TextEmbd: 64}); err != nil {
		t.Fatal(err)
	}
	a, srv := startServer(t, testConfig(t, ""), false)
	e, err := a.Manager().Catalog().Register(context.Background(), models.Record{ID: "tiny-vision", Path: model, Source: models.SourceLocal, Projector: proj})
	if err != nil {
		t.Fatal(err)
	}
	load := func() (int, string) {
		resp, err := http.Post(srv.URL+"/v1/models/load", "application/json", strings.NewReader(`{"model":"`+e.ID+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			Error struct{ Message string }
		}
		json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body.Error.Message
	}
	if err := gguftest.WriteVisionProjector(proj, gguftest.VisionProjectorOptions{TextEmbd: 128}); err != nil {
		t.Fatal(err)
	}
	status, msg := load()
	if status != http.StatusBadRequest {
		t.Fatalf("load with a 128-wide projector beside a 64-wide model: %d %q; want 400", status, msg)
	}
	// The server shows files by name, not by path.
	for _, s := range []string{filepath.Base(proj), filepath.Base(model), "128"} {
		if !strings.Contains(msg, s) {
			t.Errorf("message %q does not say %q", msg, s)
		}
	}
	if strings.Contains(msg, dir) {
		t.Errorf("message %q names the folder %s", msg, dir)
	}
	if err := os.Remove(proj); err != nil {
		t.Fatal(err)
	}
	if err := gguftest.WriteVisionProjector(proj, gguftest.VisionProjectorOptions{TextEmbd: 64}); err != nil {
		t.Fatal(err)
	}
	if status, msg := load(); status != http.StatusOK {
		t.Fatalf("load once the projector fits: %d %q", status, msg)
	}
}
