package openai_test

import (
	"encoding/json"
	"errors"
	"image/color"
	"net/http"
	"strings"
	"testing"

	openai "github.com/openai/openai-go/v3"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
)

// seesAndHears gives the model a projector that encodes images and audio.
func seesAndHears(m *core.Model) {
	m.Projector, m.Vision, m.Audio = "/models/mmproj-fake.gguf", true, true
}

var (
	redPNG  = servertest.PNG(4, 3, color.RGBA{255, 0, 0, 255})
	pngURL  = servertest.DataURL("image/png", redPNG)
	wavData = servertest.Base64(servertest.WAV(0.25, 440))
)

// lastMedia is what the fake engine got last: its prompt with the request's marker written
// as [M], and its media.
func (f *fixture) lastMedia(t *testing.T) (string, []llm.Media) {
	t.Helper()
	req, ok := f.eng.LastRequest()
	if !ok {
		t.Fatal("no request reached the engine")
	}
	if len(req.Media) > 0 && req.MediaMarker == "" {
		t.Fatal("media without a marker")
	}
	prompt := req.Prompt
	if req.MediaMarker != "" {
		prompt = strings.ReplaceAll(prompt, req.MediaMarker, "[M]")
	}
	return prompt, req.Media
}

// TestChatMedia: an image_url part (a data URL) and an input_audio part arrive decoded, each
// at its place between the text parts of its message, through the chat template.
func TestChatMedia(t *testing.T) {
	f := setup(t, config{template: chatML, model: seesAndHears})
	body := `{"model":"fake","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[` +
		`{"type":"text","text":"before "},{"type":"image_url","image_url":{"url":"` + pngURL + `","detail":"low"}},` +
		`{"type":"text","text":" middle "},{"type":"input_audio","input_audio":{"data":"` + wavData + `","format":"wav"}},` +
		`{"type":"text","text":" after"}]}]}`
	resp, b := f.do(t, http.MethodPost, "/v1/chat/completions", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	prompt, media := f.lastMedia(t)
	if want := "<|im_start|>user\nbefore [M] middle [M] after<|im_end|>"; !strings.Contains(prompt, want) {
		t.Errorf("prompt %q, want it to hold %q", prompt, want)
	}
	if len(media) != 2 || media[0].Kind != llm.MediaImage || media[0].Width != 4 || media[0].Height != 3 || media[1].Kind != llm.MediaAudio || media[1].Samples() != 4000 {
		t.Errorf("media %+v, want the 4x3 image then 4000 samples of audio", media)
	}
	var reply struct {
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &reply); err != nil || reply.Usage.PromptTokens < 2*16 {
		t.Errorf("prompt_tokens %d (%v), want the clips' positions counted", reply.Usage.PromptTokens, err)
	}
}

// TestChatMediaBadInput: each bad image or audio part is a 400 in OpenAI's shape naming the
// part, the engine never sees it, and the server keeps serving.
func TestChatMediaBadInput(t *testing.T) {
	f := setup(t, config{template: chatML, model: seesAndHears})
	user := func(parts string) string {
		return `{"model":"fake","messages":[{"role":"user","content":[{"type":"text","text":"what is this?"},` + parts + `]}]}`
	}
	image := func(url string) string { return `{"type":"image_url","image_url":{"url":"` + url + `"}}` }
	fifty := strings.TrimSuffix(strings.Repeat(image(pngURL)+",", 50), ",")
	const bad = "invalid_request_error"
	for _, tt := range []struct {
		name, body string
		want       wantError
	}{
		{"image_url without url", user(`{"type":"image_url","image_url":{}}`),
			wantError{400, bad, "messages[0].content[1].image_url.url", "", "messages[0].content[1].image_url.url is missing"}},
		{"image_url without image_url", user(`{"type":"image_url"}`),
			wantError{400, bad, "messages[0].content[1].image_url", "", "has no image_url"}},
		{"image_url of a file", user(image("file:///etc/passwd")),
			wantError{400, bad, "messages[0].content[1].image_url.url", "", `the scheme "file"`}},
		{"bad base64 in the data URL", user(image("data:image/png;base64,@@@@")),
			wantError{400, bad, "messages[0].content[1]", "", "base64"}},
		{"data URL with the wrong MIME type", user(image(servertest.DataURL("image/jpeg", redPNG))),
			wantError{400, bad, "messages[0].content[1]", "", "image/jpeg"}},
		{"SVG", user(image(servertest.DataURL("image/svg+xml", servertest.SVG()))),
			wantError{400, bad, "messages[0].content[1]", "", "SVG"}},
		{"remote URL without --allow-remote-media", user(image("https://example.com/cat.png")),
			wantError{400, bad, "messages[0].content[1]", "", "--allow-remote-media"}},
		{"50 images", user(fifty), wantError{400, bad, "", "", "this request has 50 images and audio clips; at most 20"}},
		{"input_audio in ogg", user(`{"type":"input_audio","input_audio":{"data":"` + wavData + `","format":"ogg"}}`),
			wantError{400, bad, "messages[0].content[1].input_audio.format", "", `format is "ogg"; use wav, mp3 or flac`}},
		{"input_audio without format", user(`{"type":"input_audio","input_audio":{"data":"` + wavData + `"}}`),
			wantError{400, bad, "messages[0].content[1].input_audio.format", "", "format is missing"}},
		{"input_audio with bad base64", user(`{"type":"input_audio","input_audio":{"data":"!!not base64!!","format":"wav"}}`),
			wantError{400, bad, "messages[0].content[1].input_audio.data", "", "not valid base64"}},
		{"input_audio that is not a WAV", user(`{"type":"input_audio","input_audio":{"data":"` + servertest.Base64(redPNG) + `","format":"wav"}}`),
			wantError{400, bad, "messages[0].content[1]", "", "messages[0].content[1]: "}},
		{"a file part", user(`{"type":"file","file":{"file_id":"file-1"}}`),
			wantError{400, bad, "messages[0].content[1]", "unsupported_input", `a "file" part`}},
		{"an unknown part", user(`{"type":"hologram"}`),
			wantError{400, bad, "messages[0].content[1].type", "", `type is "hologram"`}},
		{"an image in a system message", `{"model":"fake","messages":[{"role":"system","content":[` + image(pngURL) + `]},{"role":"user","content":"hi"}]}`,
			wantError{400, bad, "messages[0].content[0]", "", "images and audio go in user messages"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := len(f.eng.Requests())
			resp, b := f.do(t, http.MethodPost, "/v1/chat/completions", tt.body)
			checkError(t, resp, b, tt.want)
			if n := len(f.eng.Requests()); n != before {
				t.Errorf("a refused request reached the engine")
			}
		})
	}
	if resp, b := f.do(t, http.MethodPost, "/v1/chat/completions", user(image(pngURL))); resp.StatusCode != http.StatusOK {
		t.Errorf("a good image after the bad ones: %d %s", resp.StatusCode, b)
	}
}

// TestChatMediaSDK: openai-go's image_url and input_audio parts reach the engine as media; on
// a model without a projector the SDK gets a 400 unsupported_input naming the part.
func TestChatMediaSDK(t *testing.T) {
	f := setup(t, config{template: chatML, model: seesAndHears})
	params := openai.ChatCompletionNewParams{Model: "fake", Messages: []openai.ChatCompletionMessageParamUnion{
		openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.TextContentPart("Describe "),
			openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: pngURL}),
			openai.TextContentPart(" and "),
			openai.InputAudioContentPart(openai.ChatCompletionContentPartInputAudioInputAudioParam{Data: wavData, Format: "wav"}),
		}),
	}}
	if _, err := f.client.Chat.Completions.New(t.Context(), params); err != nil {
		t.Fatal(err)
	}
	prompt, media := f.lastMedia(t)
	if !strings.Contains(prompt, "Describe [M] and [M]<|im_end|>") || len(media) != 2 {
		t.Errorf("prompt %q with %d media", prompt, len(media))
	}

	text := setup(t, config{template: chatML})
	_, err := text.client.Chat.Completions.New(t.Context(), params)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "unsupported_input" || apiErr.Param != "messages[0].content[1]" ||
		!strings.Contains(apiErr.Message, "is an image, and the model fake cannot take it") {
		t.Errorf("text-only model: %v", err)
	}
}

// TestModelsModalities: /v1/models says what each model reads.
func TestModelsModalities(t *testing.T) {
	for _, tt := range []struct {
		name  string
		model func(*core.Model)
		want  string
	}{
		{"text", nil, `["text"]`},
		{"vision", func(m *core.Model) { m.Vision = true }, `["text","image"]`},
		{"vision and audio", seesAndHears, `["text","image","audio"]`},
	} {
		f := setup(t, config{model: tt.model})
		resp, b := f.do(t, http.MethodGet, "/v1/models/fake", "")
		var e struct {
			Architecture struct {
				InputModalities json.RawMessage `json:"input_modalities"`
			} `json:"architecture"`
			Capabilities struct {
				Vision *bool `json:"vision"`
				Audio  *bool `json:"audio"`
			} `json:"capabilities"`
		}
		if err := json.Unmarshal(b, &e); err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", tt.name, resp.StatusCode, b)
		}
		vision, audio := strings.Contains(tt.want, "image"), strings.Contains(tt.want, "audio")
		if string(e.Architecture.InputModalities) != tt.want || e.Capabilities.Vision == nil || *e.Capabilities.Vision != vision ||
			e.Capabilities.Audio == nil || *e.Capabilities.Audio != audio {
			t.Errorf("%s: input_modalities %s, capabilities.vision %v audio %v", tt.name, e.Architecture.InputModalities, e.Capabilities.Vision, e.Capabilities.Audio)
		}
	}
}

// TestBatchMedia: an image part in a batch line is served as online: decoded and placed; a
// line with a bad image gets its 400 in the output file, and the batch completes.
func TestBatchMedia(t *testing.T) {
	f := setupFiles(t, filesConfig{model: seesAndHears})
	line := func(url string) string {
		return `{"model":"fake","messages":[{"role":"user","content":[{"type":"text","text":"what is "},{"type":"image_url","image_url":{"url":"` + url + `"}}]}]}`
	}
	in := f.uploadBatch(t, chatBatchLine("good", line(pngURL)), chatBatchLine("bad", line("data:image/png;base64,@@")))
	b, err := f.client.Batches.New(t.Context(), openai.BatchNewParams{InputFileID: in,
		Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions, CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	if err != nil {
		t.Fatal(err)
	}
	b = f.waitBatch(t, b.ID)
	status := map[string]int{}
	for _, l := range append(f.readLines(t, b.OutputFileID), f.readLines(t, b.ErrorFileID)...) {
		if l.Response != nil {
			status[l.CustomID] = l.Response.StatusCode
		}
	}
	if b.Status != openai.BatchStatusCompleted || status["good"] != 200 || status["bad"] != 400 {
		t.Fatalf("batch %s: line statuses %v", b.Status, status)
	}
	reqs := f.eng.Requests()
	if len(reqs) != 1 || len(reqs[0].Media) != 1 || reqs[0].Media[0].Width != 4 || !strings.Contains(reqs[0].Prompt, "what is "+reqs[0].MediaMarker) {
		t.Fatalf("the engine got %d requests: %+v", len(reqs), reqs)
	}
}
