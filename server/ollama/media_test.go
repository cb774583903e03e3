package ollama_test

import (
	"encoding/json"
	"image/color"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
)

func sees(m *core.Model) { m.Projector, m.Vision = "/models/mmproj-fake.gguf", true }

var bluePNG = servertest.PNG(2, 6, color.RGBA{0, 0, 255, 255})

// lastMedia is the engine's latest prompt with the request's marker as [M], and its media.
func (f *fixture) lastMedia(t *testing.T) (string, []llm.Media) {
	t.Helper()
	req, ok := f.eng.LastRequest()
	if !ok {
		t.Fatal("no request reached the engine")
	}
	if req.MediaMarker == "" {
		return req.Prompt, req.Media
	}
	return strings.ReplaceAll(req.Prompt, req.MediaMarker, "[M]"), req.Media
}

// TestImagesSDK: the ollama client's Images on a chat message and on /api/generate reach the
// engine decoded, before the message's text, as Ollama places them.
func TestImagesSDK(t *testing.T) {
	f := setup(t, config{model: sees})
	no := false
	err := f.client.Chat(t.Context(), &api.ChatRequest{Model: "fake", Stream: &no, Messages: []api.Message{
		{Role: "user", Content: "What is this?", Images: []api.ImageData{bluePNG, bluePNG}},
	}}, func(api.ChatResponse) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	prompt, media := f.lastMedia(t)
	if !strings.Contains(prompt, "<|im_start|>user\n[M][M]What is this?<|im_end|>") || len(media) != 2 || media[0].Width != 2 || media[0].Height != 6 {
		t.Errorf("chat: prompt %q, media %+v", prompt, media)
	}

	err = f.client.Generate(t.Context(), &api.GenerateRequest{Model: "fake", Stream: &no, Prompt: "Describe it.", System: "Be brief.",
		Images: []api.ImageData{bluePNG}}, func(api.GenerateResponse) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	prompt, media = f.lastMedia(t)
	if !strings.Contains(prompt, "<|im_start|>user\n[M]Describe it.<|im_end|>") || len(media) != 1 {
		t.Errorf("generate: prompt %q, %d media", prompt, len(media))
	}

	// A data URL is taken too.
	resp, b := f.do(t, http.MethodPost, "/api/chat", `{"model":"fake","stream":false,"messages":[{"role":"user","content":"x","images":["`+
		servertest.DataURL("image/png", bluePNG)+`"]}]}`)
	if _, media := f.lastMedia(t); resp.StatusCode != 200 || len(media) != 1 {
		t.Errorf("data URL: %d %s, %d media", resp.StatusCode, b, len(media))
	}
}

// TestImagesBadInput: bad images are Ollama 400s naming the image; nothing reaches the engine.
func TestImagesBadInput(t *testing.T) {
	f := setup(t, config{model: sees})
	chatWith := func(images string) string {
		return `{"model":"fake","messages":[{"role":"user","content":"x","images":` + images + `}]}`
	}
	genWith := func(extra string) string { return `{"model":"fake","prompt":"x",` + extra + `}` }
	b64 := servertest.Base64(bluePNG)
	for _, tt := range []struct{ name, path, body, msg string }{
		{"not a string", "/api/chat", chatWith(`[7]`), "messages[0].images[0] must be a string"},
		{"bad base64", "/api/chat", chatWith(`["` + b64 + `","***"]`), "messages[0].images[1] is not valid base64"},
		{"empty", "/api/chat", chatWith(`[""]`), "messages[0].images[0] is empty"},
		{"not an image", "/api/chat", chatWith(`["` + servertest.Base64([]byte("hello, world")) + `"]`), "messages[0].images[0]: "},
		{"an SVG", "/api/generate", genWith(`"images":["` + servertest.Base64(servertest.SVG()) + `"]`), "images[0]: "},
		{"raw with images", "/api/generate", genWith(`"raw":true,"images":["` + b64 + `"]`), "raw mode does not take images"},
		{"50 images", "/api/generate", genWith(`"images":[` + strings.TrimSuffix(strings.Repeat(`"`+b64+`",`, 50), ",") + `]`), "at most 20"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := f.do(t, http.MethodPost, tt.path, tt.body)
			checkError(t, resp, b, 400, tt.msg)
		})
	}
	if n := len(f.eng.Requests()); n != 0 {
		t.Errorf("refused requests reached the engine %d times", n)
	}
}

// TestCapabilitiesVision: /api/show lists "vision" (and "audio") for a model whose projector
// encodes them, and not for a text model; /api/tags keeps Ollama's shape (no capabilities, as
// the peer test checks against a real Ollama).
func TestCapabilitiesVision(t *testing.T) {
	for _, tt := range []struct {
		model func(*core.Model)
		want  []string
	}{
		{nil, nil},
		{sees, []string{"vision"}},
		{func(m *core.Model) { m.Vision, m.Audio = true, true }, []string{"vision", "audio"}},
	} {
		f := setup(t, config{model: tt.model})
		show, err := f.client.Show(t.Context(), &api.ShowRequest{Model: "fake"})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range show.Capabilities {
			if c == "vision" || c == "audio" {
				got = append(got, string(c))
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("/api/show capabilities %v, want %v among them", show.Capabilities, tt.want)
		}
		_, b := f.do(t, http.MethodGet, "/api/tags", "")
		var tags struct {
			Models []map[string]json.RawMessage `json:"models"`
		}
		if err := json.Unmarshal(b, &tags); err != nil || len(tags.Models) != 1 {
			t.Fatalf("tags: %v %s", err, b)
		}
		if c, ok := tags.Models[0]["capabilities"]; ok {
			t.Errorf("/api/tags has capabilities %s; Ollama's list has none", c)
		}
	}
}

// TestLoraParam: lora at the top level or in options reaches the engine's request as
// adapters, their files filled in by the core (the top level wins); a bad one is a 400 naming
// where it was.
func TestLoraParam(t *testing.T) {
	files := servertest.WriteLoRAFiles(t, "pirate", "poet")
	f := setup(t, config{model: func(m *core.Model) { m.Path = files.Model }})
	files.Load(t, f.srv.URL, "fake")
	pirate, poet := files.Adapters["pirate"], files.Adapters["poet"]
	for _, tt := range []struct {
		path, extra string
		want        []llm.AdapterRef
	}{
		{"/api/chat", `"lora":[{"id":"pirate"}]`, []llm.AdapterRef{{ID: "pirate", Path: pirate, Scale: 1}}},
		{"/api/chat", `"options":{"lora":[{"id":"poet","scale":0.25}]}`, []llm.AdapterRef{{ID: "poet", Path: poet, Scale: 0.25}}},
		{"/api/generate", `"lora":[],"options":{"lora":[{"id":"poet"}]}`, []llm.AdapterRef{}},
		{"/api/generate", `"options":{"temperature":0}`, nil},
	} {
		body := `{"model":"fake","stream":false,"prompt":"hi","messages":[{"role":"user","content":"hi"}],` + tt.extra + `}`
		if resp, b := f.do(t, http.MethodPost, tt.path, body); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d %s", tt.path, tt.extra, resp.StatusCode, b)
		}
		got, _ := f.eng.LastRequest()
		if !reflect.DeepEqual(got.Adapters, tt.want) || (got.Adapters == nil) != (tt.want == nil) {
			t.Errorf("%s %s: adapters %#v, want %#v", tt.path, tt.extra, got.Adapters, tt.want)
		}
	}
	resp, b := f.do(t, http.MethodPost, "/api/chat", `{"model":"fake","messages":[{"role":"user","content":"hi"}],"options":{"lora":[{"id":5}]}}`)
	checkError(t, resp, b, 400, `option "lora": lora[0].id must be a non-empty string`)
	resp, b = f.do(t, http.MethodPost, "/api/generate", `{"model":"fake","prompt":"hi","lora":"pirate"}`)
	checkError(t, resp, b, 400, `lora: lora must be an array`)
}
