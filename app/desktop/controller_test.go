package desktop_test

import (
	"context"
	"errors"
	"image/color"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/app/desktop"
	"github.com/superfluid/superfluid/runtime/backends"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server/servertest"
	"github.com/superfluid/superfluid/tray"
)

// newController is a controller over a catalog-backed core with fake workers and one model, m.
func newController(t *testing.T) (*desktop.Controller, *servertest.Catalog, *models.Entry) {
	t.Helper()
	cat := servertest.NewCatalog(t, models.Config{})
	e := cat.AddModel(t, "m", gguftest.TinyLlamaOptions{})
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := free.Addr().(*net.TCPAddr).Port
	free.Close()
	c := desktop.New(desktop.Deps{Service: cat.Svc, Store: cat.Store, Handler: http.NotFoundHandler(),
		Host: "127.0.0.1", Port: port, Expose: func(string) error { return nil },
		StopBackground: func(context.Context) error { return nil }, StartBackground: func() error { return nil },
		Runtimes: func() []backends.Backend {
			return []backends.Backend{{Name: backends.CPU, Usable: true}, {Name: "vulkan"}}
		}})
	t.Cleanup(c.Close)
	return c, cat, e
}

func state(c *desktop.Controller, id string) tray.Model {
	for _, m := range c.Models() {
		if m.ID == id {
			return m
		}
	}
	return tray.Model{}
}

// TestLoadGoesThroughTheCore: the window's Load, Unload and Stop reach the worker through the
// core (an unknown model is the core's error), and the model list follows.
func TestLoadGoesThroughTheCore(t *testing.T) {
	c, cat, e := newController(t)
	if err := c.Load("nope"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("loading an unknown model: %v", err)
	}
	if err := c.Load("m"); err != nil {
		t.Fatal(err)
	}
	if r := cat.Runner(e.Path); r == nil || r.Starts.Load() != 1 || !state(c, "m").Loaded() {
		t.Fatalf("after Load: %+v", state(c, "m"))
	}
	if err := c.Unload("m"); err != nil || state(c, "m").Loaded() {
		t.Fatalf("after Unload (%v): %+v", err, state(c, "m"))
	}
	if err := c.StartServer(); err != nil || !c.Server().Running {
		t.Fatalf("start: %v %+v", err, c.Server())
	}
	if err := c.Load("m"); err != nil {
		t.Fatal(err)
	}
	if err := c.StopServer(); err != nil || c.Server().Running || state(c, "m").Loaded() {
		t.Fatalf("after Stop (%v): server %+v, model %+v", err, c.Server(), state(c, "m"))
	}
	if got := c.Runtimes(); len(got) != 1 || got[0] != backends.CPU {
		t.Fatalf("usable runtimes %v", got)
	}
}

// TestSettingsDialog: the dialog's text is parsed, stored through the core, read back, and the
// model's next load uses the new window.
func TestSettingsDialog(t *testing.T) {
	c, cat, _ := newController(t)
	if err := c.SetSettings("m", tray.ModelSettings{ContextLength: 1024, Lanes: 1, KeepAlive: "-1", Temperature: "0.5", TopK: "4"}); err != nil {
		t.Fatal(err)
	}
	got, err := c.Settings("m")
	if err != nil || got.ContextLength != 1024 || got.Lanes != 1 || got.KeepAlive != "-1" || got.Temperature != "0.5" || got.TopK != "4" || got.TopP != "" {
		t.Fatalf("read back %+v %v", got, err)
	}
	if set := cat.Mgr.Settings("m"); set.ContextLength != 1024 || set.Lanes != 1 || set.KeepAlive == nil || *set.KeepAlive >= 0 {
		t.Fatalf("the manager holds %+v", set)
	}
	if m := state(c, "m"); m.Context != 1024 {
		t.Fatalf("the list shows %+v", m)
	}
	for _, bad := range []tray.ModelSettings{{TopP: "2"}, {TopK: "x"}, {KeepAlive: "later"}, {Runtime: "vulkan"}} {
		if err := c.SetSettings("m", bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestModelsSayWhatTheySeeAndHear: the list the window shows says what a model takes besides
// text, from its projector's metadata (the core's view, known before a load).
func TestModelsSayWhatTheySeeAndHear(t *testing.T) {
	c, cat, _ := newController(t)
	for _, m := range []struct {
		id            string
		write         func(path string) error
		vision, audio bool
	}{
		{"eyes", func(p string) error { return gguftest.WriteVisionProjector(p, gguftest.VisionProjectorOptions{}) }, true, false},
		{"ears", func(p string) error { return gguftest.WriteAudioProjector(p, gguftest.AudioProjectorOptions{}) }, false, true},
	} {
		model := filepath.Join(cat.Dir, m.id+".gguf")
		if err := gguftest.WriteTinyLlama(model, gguftest.TinyLlamaOptions{}); err != nil {
			t.Fatal(err)
		}
		proj := filepath.Join(cat.Dir, "mmproj-"+m.id+".gguf")
		if err := m.write(proj); err != nil {
			t.Fatal(err)
		}
		if _, err := cat.Mgr.Catalog().Add(context.Background(), models.AddRequest{Path: model, ID: m.id, Projector: proj}); err != nil {
			t.Fatal(err)
		}
		if got := state(c, m.id); got.Vision != m.vision || got.Audio != m.audio {
			t.Errorf("%s: vision %v audio %v, want %v %v", m.id, got.Vision, got.Audio, m.vision, m.audio)
		}
	}
	if m := state(c, "m"); m.ID != "m" || m.Vision || m.Audio {
		t.Fatalf("a model without a projector: %+v", m)
	}
}

// addSensing registers a tiny model with a vision (or, hearing, an audio) projector, as id.
func addSensing(t *testing.T, cat *servertest.Catalog, id string, hearing bool) *models.Entry {
	t.Helper()
	model, proj := filepath.Join(cat.Dir, id+".gguf"), filepath.Join(cat.Dir, "mmproj-"+id+".gguf")
	if err := gguftest.WriteTinyLlama(model, gguftest.TinyLlamaOptions{}); err != nil {
		t.Fatal(err)
	}
	write := func() error { return gguftest.WriteVisionProjector(proj, gguftest.VisionProjectorOptions{}) }
	if hearing {
		write = func() error { return gguftest.WriteAudioProjector(proj, gguftest.AudioProjectorOptions{}) }
	}
	if err := write(); err != nil {
		t.Fatal(err)
	}
	e, err := cat.Mgr.Catalog().Add(context.Background(), models.AddRequest{Path: model, ID: id, Projector: proj})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestPlaygroundImagesReachTheEngine: a playground turn's image goes through the core as an
// API's does: decoded, its marker before the turn's text in the prompt, the pixels handed to
// the engine; the reply counts its positions. A WAV reaches a model that hears as samples. A
// model that cannot take the kind gets the core's unsupported_input, naming the attachment,
// and a file that is no image the decoder's refusal.
func TestPlaygroundImagesReachTheEngine(t *testing.T) {
	c, cat, _ := newController(t)
	e := addSensing(t, cat, "eyes", false)
	red := servertest.PNG(8, 6, color.RGBA{255, 0, 0, 255})
	ask := func(model string, att tray.Attachment) (tray.ChatStats, error) {
		return c.Chat(context.Background(), tray.ChatSettings{Model: model, MaxTokens: 4}, []tray.Message{
			{Role: "user", Content: "What is it?", Attachments: []tray.Attachment{att}}}, func(tray.Piece) {})
	}
	stats, err := ask("eyes", tray.Attachment{Name: "red.png", MIME: "image/png", Data: red})
	if err != nil {
		t.Fatal(err)
	}
	req, ok := cat.Runner(e.Path).Engine.LastRequest()
	if !ok || len(req.Media) != 1 || req.MediaMarker == "" || strings.Count(req.Prompt, req.MediaMarker) != 1 {
		t.Fatalf("the engine got %d media, marker %q in %q", len(req.Media), req.MediaMarker, req.Prompt)
	}
	if m := req.Media[0]; m.Kind != llm.MediaImage || m.Width != 8 || m.Height != 6 || len(m.RGB) != 8*6*3 || m.RGB[0] != 255 || m.RGB[1] != 0 {
		t.Fatalf("the engine got %s %dx%d (%d bytes)", m.Kind, m.Width, m.Height, len(m.RGB))
	}
	if i, j := strings.Index(req.Prompt, req.MediaMarker), strings.Index(req.Prompt, "What is it?"); i < 0 || j < i {
		t.Fatalf("the image is not before the text: %q", req.Prompt)
	}
	if stats.PromptTokens < enginetest.MediaTokens {
		t.Fatalf("prompt tokens %d leave out the image's %d positions", stats.PromptTokens, enginetest.MediaTokens)
	}

	// A clip for a model that hears: 16 kHz mono samples for its encoder.
	ears := addSensing(t, cat, "ears", true)
	if _, err := ask("ears", tray.Attachment{Name: "tone.wav", MIME: "audio/wav", Data: servertest.WAV(0.5, 440)}); err != nil {
		t.Fatal(err)
	}
	if req, _ := cat.Runner(ears.Path).Engine.LastRequest(); len(req.Media) != 1 || req.Media[0].Kind != llm.MediaAudio || req.Media[0].Samples() != llm.AudioSampleRate/2 {
		t.Fatalf("the engine got %d media (%+v)", len(req.Media), req.Media)
	}
	if _, err := ask("ears", tray.Attachment{Name: "red.png", MIME: "image/png", Data: red}); !errors.Is(err, llm.ErrUnsupportedInput) {
		t.Fatalf("an image for a model that only hears: %v", err)
	}

	_, err = ask("m", tray.Attachment{Name: "red.png", MIME: "image/png", Data: red})
	if !errors.Is(err, llm.ErrUnsupportedInput) || !strings.Contains(err.Error(), "attachment red.png") {
		t.Fatalf("an image for a text-only model: %v", err)
	}
	_, err = ask("eyes", tray.Attachment{Name: "fake.png", MIME: "image/png", Data: []byte("not a png")})
	if !errors.Is(err, llm.ErrInvalidInput) || !strings.Contains(err.Error(), "fake.png") {
		t.Fatalf("a file that is no image: %v", err)
	}
}
