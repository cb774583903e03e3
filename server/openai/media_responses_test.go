package openai_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/superfluid/superfluid/runtime/llm"
)

// TestResponsesMedia: input_image and input_audio parts reach the engine at their places; the
// stored input keeps the image, so input_items lists it and a response continued with
// previous_response_id still shows the model the image, before the new turn.
func TestResponsesMedia(t *testing.T) {
	f := setup(t, config{template: chatML, model: seesAndHears})
	body := `{"model":"fake","input":[{"role":"user","content":[{"type":"input_text","text":"see "},` +
		`{"type":"input_image","image_url":"` + pngURL + `"},{"type":"input_text","text":" hear "},` +
		`{"type":"input_audio","input_audio":{"data":"` + wavData + `","format":"wav"}}]}]}`
	resp, b := f.do(t, http.MethodPost, "/v1/responses", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var first struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &first); err != nil {
		t.Fatal(err)
	}
	prompt, media := f.lastMedia(t)
	if !strings.Contains(prompt, "user\nsee [M] hear [M]<|im_end|>") || len(media) != 2 || media[0].Kind != llm.MediaImage || media[1].Kind != llm.MediaAudio {
		t.Errorf("prompt %q, %d media", prompt, len(media))
	}

	_, b = f.do(t, http.MethodGet, "/v1/responses/"+first.ID+"/input_items", "")
	var page struct {
		Data []struct {
			Content []map[string]any `json:"content"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &page); err != nil || len(page.Data) != 1 || len(page.Data[0].Content) != 4 {
		t.Fatalf("input_items: %v %s", err, b)
	}
	img := page.Data[0].Content[1]
	if img["type"] != "input_image" || img["image_url"] != pngURL || img["detail"] != "auto" {
		t.Errorf("listed image part %v", img)
	}
	if aud, _ := page.Data[0].Content[3]["input_audio"].(map[string]any); page.Data[0].Content[3]["type"] != "input_audio" || aud["format"] != "wav" || aud["data"] != wavData {
		t.Errorf("listed audio part %v", page.Data[0].Content[3])
	}

	resp, b = f.do(t, http.MethodPost, "/v1/responses", `{"model":"fake","previous_response_id":"`+first.ID+`","input":"And now?"}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("continued: %d %s", resp.StatusCode, b)
	}
	prompt, media = f.lastMedia(t)
	if !strings.Contains(prompt, "user\nsee [M] hear [M]<|im_end|>") || !strings.Contains(prompt, "user\nAnd now?<|im_end|>") || len(media) != 2 {
		t.Errorf("continued prompt %q, %d media", prompt, len(media))
	}
}

// TestResponsesMediaBadInput: bad media parts are 400s naming the part.
func TestResponsesMediaBadInput(t *testing.T) {
	f := setup(t, config{template: chatML, model: seesAndHears})
	msg := func(role, part string) string {
		return `{"model":"fake","input":[{"role":"` + role + `","content":[` + part + `]}]}`
	}
	const bad = "invalid_request_error"
	for _, tt := range []struct {
		name, body string
		want       wantError
	}{
		{"no image_url", msg("user", `{"type":"input_image"}`), wantError{400, bad, "input[0].content[0].image_url", "", "is missing"}},
		{"file_id", msg("user", `{"type":"input_image","file_id":"file-abc"}`),
			wantError{400, bad, "input[0].content[0].file_id", "unsupported_input", "file_id"}},
		{"image_url not a string", msg("user", `{"type":"input_image","image_url":7}`), wantError{400, bad, "input[0].content[0].image_url", "", "must be a string"}},
		{"image in an assistant message", msg("assistant", `{"type":"input_image","image_url":"`+pngURL+`"}`),
			wantError{400, bad, "input[0].content[0]", "", "images and audio go in user messages"}},
		{"audio in flac with bad base64", msg("user", `{"type":"input_audio","input_audio":{"data":"%%%","format":"flac"}}`),
			wantError{400, bad, "input[0].content[0].input_audio.data", "", "not valid base64"}},
		{"audio in aac", msg("user", `{"type":"input_audio","input_audio":{"data":"AAAA","format":"aac"}}`),
			wantError{400, bad, "input[0].content[0].input_audio.format", "", "use wav, mp3 or flac"}},
		{"remote image", msg("user", `{"type":"input_image","image_url":"http://example.com/a.png"}`),
			wantError{400, bad, "input[0].content[0]", "", "--allow-remote-media"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := f.do(t, http.MethodPost, "/v1/responses", tt.body)
			checkError(t, resp, b, tt.want)
		})
	}
}

// TestResponsesMediaSDK: openai-go's input_image part reaches the engine as an image.
func TestResponsesMediaSDK(t *testing.T) {
	f := setup(t, config{template: chatML, model: seesAndHears})
	parts := responses.ResponseInputMessageContentListParam{
		responses.ResponseInputContentParamOfInputText("What is in "),
		{OfInputImage: &responses.ResponseInputImageParam{ImageURL: openai.String(pngURL), Detail: responses.ResponseInputImageDetailAuto}},
	}
	_, err := f.client.Responses.New(t.Context(), responses.ResponseNewParams{Model: "fake",
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage(parts, responses.EasyInputMessageRoleUser)}}})
	if err != nil {
		t.Fatal(err)
	}
	prompt, media := f.lastMedia(t)
	if !strings.Contains(prompt, "What is in [M]<|im_end|>") || len(media) != 1 || media[0].Width != 4 {
		t.Errorf("prompt %q, media %+v", prompt, media)
	}
}
