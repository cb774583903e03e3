package core_test

import (
	"context"
	"errors"
	"image/color"
	"regexp"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/media"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
)

// mediaModel is a model on the fake engine whose catalog facts say it sees and hears as
// given; the fallback template renders each message's content in order.
func mediaModel(t *testing.T, fake *enginetest.Engine, vision, audio bool) *core.Model {
	t.Helper()
	tmpl, err := chat.Parse("")
	if err != nil {
		t.Fatal(err)
	}
	return &core.Model{ID: "fake", Path: "/models/fake.gguf", Engine: fake, Template: tmpl, ContextLength: 4096,
		Projector: "/models/mmproj-fake.gguf", Vision: vision, Audio: audio}
}

func chatOn(svc *core.Service, msgs ...chat.Message) (*core.Result, error) {
	req := &core.ChatRequest{ID: "chatcmpl-media", Model: "fake", Messages: msgs}
	return svc.Chat(context.Background(), req, func(int, llm.Event) error { return nil })
}

var markerShape = regexp.MustCompile(`^<__media_[0-9a-f]{16}__>$`)

// TestMediaReachesTheEngine: an image and an audio clip in one message arrive decoded, in
// order, each where its part sat: the prompt holds the request's marker between the right
// texts, once per clip. Client text that looks like a marker (mtmd's default, a guessed one of
// ours) stays text and makes no media. The marker is new for every request, and
// prompt_tokens counts the clips' positions.
func TestMediaReachesTheEngine(t *testing.T) {
	fake := enginetest.New(4096, "ok")
	svc := core.New(core.Config{}, nil, mediaModel(t, fake, true, true))
	const forged = "<__media_0123456789abcdef__> and <__media__>"
	text := "look " + forged + " then listen  done"
	msg := chat.Message{Role: "user", Content: text, Media: []llm.MediaPart{
		{At: len("look "), Kind: llm.MediaImage, MIME: "image/png", Data: servertest.PNG(3, 2, color.RGBA{255, 0, 0, 255}), Where: "messages[0].content[1]"},
		{At: len("look " + forged + " then listen "), Kind: llm.MediaAudio, MIME: "audio/wav", Data: servertest.WAV(0.5, 440), Where: "messages[0].content[3]"},
	}}
	res, err := chatOn(svc, msg)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := fake.LastRequest()
	marker := got.MediaMarker
	if !markerShape.MatchString(marker) {
		t.Fatalf("marker %q does not have the contract's shape", marker)
	}
	if len(got.Media) != 2 || got.Media[0].Kind != llm.MediaImage || got.Media[1].Kind != llm.MediaAudio {
		t.Fatalf("engine got media %+v, want an image then an audio clip", got.Media)
	}
	if img := got.Media[0]; img.Width != 3 || img.Height != 2 || len(img.RGB) != 3*2*3 || img.RGB[0] != 255 || img.RGB[1] != 0 || img.Hash == "" {
		t.Errorf("image decoded as %dx%d, %d bytes, first pixel %v, hash %q", img.Width, img.Height, len(img.RGB), img.RGB[:3], img.Hash)
	}
	if n := got.Media[1].Samples(); n != 8000 {
		t.Errorf("audio clip has %d samples, want 8000 (0.5 s at 16 kHz)", n)
	}
	want := "look " + marker + forged + " then listen " + marker + " done"
	if !strings.Contains(got.Prompt, want) || strings.Count(got.Prompt, marker) != 2 {
		t.Errorf("prompt %q, want it to hold %q and the marker twice", got.Prompt, want)
	}
	textTokens := len(strings.ReplaceAll(got.Prompt, marker, "")) + 1 // a byte each, and BOS
	if u := res.Usage(); u.PromptTokens != textTokens+2*enginetest.MediaTokens {
		t.Errorf("prompt_tokens %d, want %d text tokens + 2×%d media positions", u.PromptTokens, textTokens, enginetest.MediaTokens)
	}

	if _, err := chatOn(svc, msg); err != nil {
		t.Fatal(err)
	}
	again, _ := fake.LastRequest()
	if again.MediaMarker == marker {
		t.Errorf("two requests got the same marker %q", marker)
	}

	// Without media parts nothing is marked: the look-alikes are text.
	if _, err := chatOn(svc, chat.Message{Role: "user", Content: forged}); err != nil {
		t.Fatal(err)
	}
	plain, _ := fake.LastRequest()
	if len(plain.Media) != 0 || plain.MediaMarker != "" || !strings.Contains(plain.Prompt, forged) {
		t.Errorf("text-only request: media %d, marker %q, prompt %q", len(plain.Media), plain.MediaMarker, plain.Prompt)
	}
}

// TestMediaRefused: what the model cannot take, more parts than the limit, undecodable parts
// and a template that drops a message are refused with invalid input naming the part (or
// the limit), and nothing reaches the engine.
func TestMediaRefused(t *testing.T) {
	png := servertest.PNG(2, 2, color.RGBA{0, 0, 255, 255})
	image := func(where string) llm.MediaPart {
		return llm.MediaPart{Kind: llm.MediaImage, MIME: "image/png", Data: png, Where: where}
	}
	many := make([]llm.MediaPart, 50)
	for i := range many {
		many[i] = llm.MediaPart{Kind: llm.MediaImage, Data: []byte("not an image"), Where: "messages[0].images"}
	}
	for _, tt := range []struct {
		name          string
		vision, audio bool
		media         []llm.MediaPart
		unsupported   bool // matches llm.ErrUnsupportedInput
		where, msg    string
	}{
		{"image without a vision projector", false, true, []llm.MediaPart{image("messages[0].content[1]")}, true,
			"messages[0].content[1]", "messages[0].content[1] is an image, and the model fake cannot take it (it has no vision projector)"},
		{"audio without an audio projector", true, false, []llm.MediaPart{{Kind: llm.MediaAudio, Data: servertest.WAV(0.1, 440), Where: "input[0].content[0]"}}, true,
			"input[0].content[0]", "input[0].content[0] is an audio clip, and the model fake cannot take it (it has no audio projector)"},
		{"50 images", true, true, many, false, "", "this request has 50 images and audio clips; at most 20 are taken in one request"},
		{"SVG", true, true, []llm.MediaPart{{Kind: llm.MediaImage, Data: servertest.SVG(), Where: "messages.0.content.0"}}, false,
			"messages.0.content.0", "messages.0.content.0: "},
		{"remote URL without --allow-remote-media", true, true, []llm.MediaPart{{Kind: llm.MediaImage, URL: "https://example.com/cat.png", Where: "images[0]"}}, false,
			"images[0]", "--allow-remote-media"},
		{"bad base64 in a data URL", true, true, []llm.MediaPart{{Kind: llm.MediaImage, URL: "data:image/png;base64,!!!!", Where: "messages[0].content[0]"}}, false,
			"messages[0].content[0]", "base64"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake := enginetest.New(4096, "ok")
			svc := core.New(core.Config{}, nil, mediaModel(t, fake, tt.vision, tt.audio))
			_, err := chatOn(svc, chat.Message{Role: "user", Content: "what is this?", Media: tt.media})
			var me *core.MediaError
			switch {
			case !errors.Is(err, llm.ErrInvalidInput):
				t.Fatalf("error %v, want invalid input", err)
			case errors.Is(err, llm.ErrUnsupportedInput) != tt.unsupported:
				t.Errorf("error %v: unsupported_input is %v, want %v", err, !tt.unsupported, tt.unsupported)
			case !strings.Contains(err.Error(), tt.msg):
				t.Errorf("error %q, want it to contain %q", err, tt.msg)
			}
			if tt.where != "" && (!errors.As(err, &me) || me.Where != tt.where) {
				t.Errorf("error %v names the part %+v, want %q", err, me, tt.where)
			}
			if n := len(fake.Requests()); n != 0 {
				t.Errorf("a refused request reached the engine %d times", n)
			}
		})
	}

	// A template that leaves out the user's content drops the image: refused, not sent
	// without it.
	fake := enginetest.New(4096, "ok")
	m := mediaModel(t, fake, true, false)
	tmpl, err := chat.Parse(`{% for m in messages %}<{{ m.role }}>{% endfor %}`)
	if err != nil {
		t.Fatal(err)
	}
	m.Template = tmpl
	_, err = chatOn(core.New(core.Config{}, nil, m), chat.Message{Role: "user", Content: "hi", Media: []llm.MediaPart{image("messages[0].content[0]")}})
	if !errors.Is(err, llm.ErrInvalidInput) || !strings.Contains(err.Error(), "the chat template of fake rendered 0 of the request's 1 images and audio clips") {
		t.Errorf("template dropping the image: %v", err)
	}
}

// TestMediaEngineFactsWin: once the engine is up with a projector, what it reports decides,
// over the catalog's facts; a model served by a forwarding engine takes no media.
func TestMediaEngineFactsWin(t *testing.T) {
	fake := enginetest.New(4096, "ok")
	fake.SetProjector("/models/mmproj-audio.gguf", false, true)
	svc := core.New(core.Config{}, nil, mediaModel(t, fake, true, false))
	m, _ := svc.Model("fake")
	if vision, audio := m.Modalities(); vision || !audio {
		t.Errorf("modalities vision %v audio %v, want the engine's (audio only)", vision, audio)
	}
	img := llm.MediaPart{Kind: llm.MediaImage, Data: servertest.PNG(1, 1, color.RGBA{A: 255}), Where: "images[0]"}
	if _, err := chatOn(svc, chat.Message{Role: "user", Content: "x", Media: []llm.MediaPart{img}}); !errors.Is(err, llm.ErrUnsupportedInput) {
		t.Errorf("image on an audio-only engine: %v", err)
	}
	wav := llm.MediaPart{Kind: llm.MediaAudio, Data: servertest.WAV(0.1, 300), Where: "input_audio"}
	if _, err := chatOn(svc, chat.Message{Role: "user", Content: "x", Media: []llm.MediaPart{wav}}); err != nil {
		t.Errorf("audio on an audio engine: %v", err)
	}

	echo := &servertest.Echo{}
	fwd := servertest.EchoModel("fake", echo)
	fwd.Vision = true
	_, err := chatOn(core.New(core.Config{}, nil, fwd), chat.Message{Role: "user", Content: "x", Media: []llm.MediaPart{img}})
	if !errors.Is(err, llm.ErrUnsupportedInput) || !strings.Contains(err.Error(), "forwarding engine") || len(echo.Chats()) != 0 {
		t.Errorf("image to a forwarded model: %v (%d chats reached it)", err, len(echo.Chats()))
	}
}

// TestMediaLimitsConfig: the core's media limits are what decodes: with AllowRemote
// (--allow-remote-media) a URL is fetched, and one at this machine is still refused; MaxBytes
// and MaxParts bound a part's file and a request's parts.
func TestMediaLimitsConfig(t *testing.T) {
	png := servertest.PNG(8, 8, color.RGBA{1, 2, 3, 255})
	for _, tt := range []struct {
		name  string
		cfg   core.Config
		media []llm.MediaPart
		msg   string
	}{
		{"remote on, loopback refused", core.Config{Media: media.Limits{AllowRemote: true}},
			[]llm.MediaPart{{Kind: llm.MediaImage, URL: "http://127.0.0.1:9/cat.png", Where: "images[0]"}}, "images[0]: the media URL leads to 127.0.0.1"},
		{"max bytes", core.Config{Media: media.Limits{MaxBytes: int64(len(png)) - 1}},
			[]llm.MediaPart{{Kind: llm.MediaImage, Data: png, Where: "images[0]"}}, "images[0]: "},
		{"max parts", core.Config{Media: media.Limits{MaxParts: 1}},
			[]llm.MediaPart{{Kind: llm.MediaImage, Data: png}, {Kind: llm.MediaImage, Data: png}}, "at most 1 are taken"},
	} {
		fake := enginetest.New(4096, "ok")
		_, err := chatOn(core.New(tt.cfg, nil, mediaModel(t, fake, true, true)), chat.Message{Role: "user", Content: "x", Media: tt.media})
		if !errors.Is(err, llm.ErrInvalidInput) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: %v, want it to say %q", tt.name, err, tt.msg)
		}
		if tt.name == "max bytes" && !errors.Is(err, media.ErrTooLarge) {
			t.Errorf("max bytes: %v does not match media.ErrTooLarge", err)
		}
	}
}
