package anthropic_test

import (
	"encoding/json"
	"errors"
	"image/color"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
)

func sees(m *core.Model) { m.Projector, m.Vision = "/models/mmproj-fake.gguf", true }

var pngB64 = servertest.Base64(servertest.PNG(5, 2, color.RGBA{0, 200, 0, 255}))

// imageBlock is an image block with a base64 source.
func imageBlock(mediaType, data string) string {
	return `{"type":"image","source":{"type":"base64","media_type":"` + mediaType + `","data":"` + data + `"}}`
}

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

// TestMessagesImage: image blocks reach the engine decoded at their places; two user messages
// in a row are one turn, and the second's image moves with its text.
func TestMessagesImage(t *testing.T) {
	f := setup(t, config{model: sees})
	f.ok(t, msgs(`[{"role":"user","content":[{"type":"text","text":"first "},`+imageBlock("image/png", pngB64)+`,{"type":"text","text":" then"}]},`+
		`{"role":"user","content":[`+imageBlock("image/png", pngB64)+`,{"type":"text","text":"second"}]}]`))
	prompt, media := f.lastMedia(t)
	if want := "<|im_start|>user\nfirst [M] then\n\n[M]second<|im_end|>"; !strings.Contains(prompt, want) {
		t.Errorf("prompt %q, want it to hold %q", prompt, want)
	}
	if len(media) != 2 || media[0].Width != 5 || media[0].Height != 2 || media[0].Hash != media[1].Hash {
		t.Errorf("media %+v, want the same 5x2 image twice", media)
	}
}

// TestMessagesImageBadInput: bad image blocks are 400s in Anthropic's shape naming the block.
func TestMessagesImageBadInput(t *testing.T) {
	f := setup(t, config{model: sees})
	user := func(block string) string { return msgs(`[{"role":"user","content":[` + block + `]}]`) }
	for _, tt := range []struct{ name, body, msg string }{
		{"no source", user(`{"type":"image"}`), "messages.0.content.0.source: Field required"},
		{"bad base64", user(imageBlock("image/png", "%%%%")), "messages.0.content.0.source.data: the image data is not valid base64"},
		{"no data", user(`{"type":"image","source":{"type":"base64","media_type":"image/png"}}`), "messages.0.content.0.source.data: Field required"},
		{"a media type Anthropic does not take", user(imageBlock("image/svg+xml", servertest.Base64(servertest.SVG()))),
			"messages.0.content.0.source.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"},
		{"the wrong media type", user(imageBlock("image/gif", pngB64)), "messages.0.content.0: "},
		{"a URL without --allow-remote-media", user(`{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}`), "--allow-remote-media"},
		{"a URL that is not http", user(`{"type":"image","source":{"type":"url","url":"ftp://example.com/a.png"}}`), "source.url: Input should be an http(s) URL"},
		{"a file source", user(`{"type":"image","source":{"type":"file","file_id":"file_1"}}`), "file sources (the Files API) are not served"},
		{"an unknown source", user(`{"type":"image","source":{"type":"pixels"}}`), "source.type: Input should be 'base64' or 'url'"},
		{"an image in an assistant turn", msgs(`[{"role":"user","content":"hi"},{"role":"assistant","content":[` + imageBlock("image/png", pngB64) + `]},{"role":"user","content":"?"}]`),
			"messages.1.content.0: image blocks go in user messages"},
		{"a document", user(`{"type":"document","source":{"type":"text","media_type":"text/plain","data":"x"}}`), "document content blocks are not supported"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := f.do(t, http.MethodPost, "/v1/messages", tt.body)
			checkError(t, resp, b, wantError{400, invalidReq, tt.msg})
		})
	}
	if n := len(f.eng.Requests()); n != 0 {
		t.Errorf("refused requests reached the engine %d times", n)
	}
}

// TestMessagesImageSDK: anthropic-sdk-go's base64 image block reaches the engine; a model
// without a vision projector answers 400 invalid_request_error naming the block and the model.
func TestMessagesImageSDK(t *testing.T) {
	params := anthropic.MessageNewParams{Model: "fake", MaxTokens: 10, Messages: []anthropic.MessageParam{
		anthropic.NewUserMessage(anthropic.NewTextBlock("What is this? "), anthropic.NewImageBlockBase64("image/png", pngB64)),
	}}
	f := setup(t, config{model: sees})
	if _, err := f.client.Messages.New(t.Context(), params); err != nil {
		t.Fatal(err)
	}
	if prompt, media := f.lastMedia(t); !strings.Contains(prompt, "What is this? [M]<|im_end|>") || len(media) != 1 {
		t.Errorf("prompt %q, %d media", prompt, len(media))
	}

	text := setup(t, config{})
	_, err := text.client.Messages.New(t.Context(), params)
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Error(), "invalid_request_error") ||
		!strings.Contains(apiErr.Error(), "messages.0.content.1 is an image, and the model fake cannot take it") {
		t.Errorf("text-only model: %v", err)
	}
}

// TestMessagesModelsImageInput: the models listing says image_input is supported only with a
// vision projector.
func TestMessagesModelsImageInput(t *testing.T) {
	for _, vision := range []bool{false, true} {
		cfg := config{}
		if vision {
			cfg.model = sees
		}
		f := setup(t, cfg)
		_, b := f.do(t, http.MethodGet, "/v1/models?limit=5", "")
		var page struct {
			Data []struct {
				Capabilities struct {
					ImageInput struct {
						Supported bool `json:"supported"`
					} `json:"image_input"`
				} `json:"capabilities"`
			} `json:"data"`
		}
		if err := json.Unmarshal(b, &page); err != nil || len(page.Data) != 1 || page.Data[0].Capabilities.ImageInput.Supported != vision {
			t.Errorf("vision %v: %v %s", vision, err, b)
		}
	}
}

// TestMessagesLoraParam: lora reaches the engine's request as adapters; a bad one is a 400.
func TestMessagesLoraParam(t *testing.T) {
	f := setup(t, config{})
	f.ok(t, body(`"lora":[{"id":"pirate","scale":2}]`))
	if got, _ := f.eng.LastRequest(); !reflect.DeepEqual(got.Adapters, []llm.AdapterRef{{ID: "pirate", Scale: 2}}) {
		t.Errorf("adapters %#v", got.Adapters)
	}
	f.ok(t, body(`"lora":[]`))
	if got, _ := f.eng.LastRequest(); got.Adapters == nil || len(got.Adapters) != 0 {
		t.Errorf("lora [] gave adapters %#v, want empty and not nil", got.Adapters)
	}
	f.ok(t, body(""))
	if got, _ := f.eng.LastRequest(); got.Adapters != nil {
		t.Errorf("no lora gave adapters %#v, want nil", got.Adapters)
	}
	resp, b := f.do(t, http.MethodPost, "/v1/messages", body(`"lora":[{"id":"pirate","scale":"loud"}]`))
	checkError(t, resp, b, wantError{400, invalidReq, "lora: lora[0].scale must be a number"})
}

// TestCountTokensImage: count_tokens takes an image on a vision model (its text counted) and
// refuses it, as messages does, on a model without a projector.
func TestCountTokensImage(t *testing.T) {
	body := `{"model":"fake","messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},` + imageBlock("image/png", pngB64) + `]}]}`
	f := setup(t, config{model: sees})
	resp, b := f.do(t, http.MethodPost, "/v1/messages/count_tokens", body)
	var count struct {
		InputTokens int `json:"input_tokens"`
	}
	if err := json.Unmarshal(b, &count); err != nil || resp.StatusCode != 200 || count.InputTokens < len("What is this?") {
		t.Errorf("vision model: %d %s", resp.StatusCode, b)
	}
	text := setup(t, config{})
	resp, b = text.do(t, http.MethodPost, "/v1/messages/count_tokens", body)
	checkError(t, resp, b, wantError{400, invalidReq, "messages.0.content.1 is an image, and the model fake cannot take it"})
}
