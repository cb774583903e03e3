package app

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	ollama "github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server/servertest"
)

// mediaModels registers the test model twice in a fresh server's catalog, once with a random
// vision projector and once with a random audio projector (gguftest, sized for its width),
// and loads both, so their engines report what they take.
func mediaModels(t *testing.T) (srvURL, vision, audio string) {
	t.Helper()
	dir := t.TempDir()
	data, err := os.ReadFile(testModel)
	if err != nil {
		t.Fatal(err)
	}
	a, srv := startServer(t, testConfig(t, ""), false)
	for _, m := range []struct {
		id    string
		write func(path string) error
	}{
		{"tiny-vision", func(p string) error {
			return gguftest.WriteVisionProjector(p, gguftest.VisionProjectorOptions{TextEmbd: 64})
		}},
		{"tiny-audio", func(p string) error {
			return gguftest.WriteAudioProjector(p, gguftest.AudioProjectorOptions{TextEmbd: 64})
		}},
	} {
		path, proj := filepath.Join(dir, m.id+".gguf"), filepath.Join(dir, "mmproj-"+m.id+".gguf")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := m.write(proj); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Manager().Catalog().Register(context.Background(), models.Record{ID: m.id, Path: path, Source: models.SourceLocal, Projector: proj}); err != nil {
			t.Fatal(err)
		}
		resp, err := http.Post(srv.URL+"/v1/models/load", "application/json", strings.NewReader(`{"model":"`+m.id+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("load %s: %d", m.id, resp.StatusCode)
		}
	}
	return srv.URL, "tiny-vision", "tiny-audio"
}

// TestMediaThroughTheSDKs: on the real engine with real (random-weight) projectors, an image
// changes the greedy reply through openai-go, anthropic-sdk-go and the ollama client, and two
// different images give different replies; an audio clip changes it through openai-go's
// input_audio (two tones, two replies); the clip's positions count in prompt_tokens; a re-sent image is served warm;
// the same image to a model without a projector is a 400 unsupported_input.
func TestMediaThroughTheSDKs(t *testing.T) {
	srvURL, vision, audio := mediaModels(t)
	ctx := context.Background()
	red, blue := servertest.NoisePNG(40, 30, 1), servertest.NoisePNG(40, 30, 2)
	// Each clip sits inside the text: the test model has no chat template, so the fallback
	// renders a lone user message bare, and a prompt must end with text.
	const before, after = "Once upon a time", " there was a little girl who"

	oa := sdk(srvURL)
	chatWith := func(model string, parts ...openai.ChatCompletionContentPartUnionParam) *openai.ChatCompletion {
		t.Helper()
		res, err := oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model, MaxTokens: openai.Int(24), Temperature: openai.Float(0),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(append(append([]openai.ChatCompletionContentPartUnionParam{openai.TextContentPart(before)}, parts...), openai.TextContentPart(after)))}})
		if err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		return res
	}
	image := func(png []byte) openai.ChatCompletionContentPartUnionParam {
		return openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: servertest.DataURL("image/png", png)})
	}
	plain, withRed, again, withBlue := chatWith(vision), chatWith(vision, image(red)), chatWith(vision, image(red)), chatWith(vision, image(blue))
	if withRed.Choices[0].Message.Content == plain.Choices[0].Message.Content || withRed.Choices[0].Message.Content == withBlue.Choices[0].Message.Content {
		t.Errorf("OpenAI replies: none %q, red %q, blue %q; want the image to change it", plain.Choices[0].Message.Content,
			withRed.Choices[0].Message.Content, withBlue.Choices[0].Message.Content)
	}
	if withRed.Usage.PromptTokens < plain.Usage.PromptTokens+16 {
		t.Errorf("prompt_tokens %d with the image, %d without; want its positions counted", withRed.Usage.PromptTokens, plain.Usage.PromptTokens)
	}
	if again.Choices[0].Message.Content != withRed.Choices[0].Message.Content || again.Usage.PromptTokensDetails.CachedTokens < withRed.Usage.PromptTokens-2 {
		t.Errorf("re-sent image: reply %q (first %q), cached %d of %d", again.Choices[0].Message.Content, withRed.Choices[0].Message.Content,
			again.Usage.PromptTokensDetails.CachedTokens, again.Usage.PromptTokens)
	}

	an := anthropic.NewClient(aoption.WithBaseURL(srvURL), aoption.WithAPIKey("x"), aoption.WithMaxRetries(0))
	message := func(blocks ...anthropic.ContentBlockParamUnion) string {
		t.Helper()
		res, err := an.Messages.New(ctx, anthropic.MessageNewParams{Model: anthropic.Model(vision), MaxTokens: 24,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(append(append([]anthropic.ContentBlockParamUnion{anthropic.NewTextBlock(before)}, blocks...), anthropic.NewTextBlock(after))...)}},
			aoption.WithJSONSet("temperature", 0))
		if err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		for _, b := range res.Content {
			sb.WriteString(b.Text)
		}
		return sb.String()
	}
	if none, img := message(), message(anthropic.NewImageBlockBase64("image/png", servertest.Base64(red))); none == img {
		t.Errorf("Anthropic reply %q with and without the image", img)
	}

	base, _ := url.Parse(srvURL)
	ol := ollama.NewClient(base, http.DefaultClient)
	generate := func(images ...ollama.ImageData) string {
		t.Helper()
		no := false
		var out string
		err := ol.Generate(ctx, &ollama.GenerateRequest{Model: vision, Prompt: before + after, Stream: &no, Images: images,
			Options: map[string]any{"temperature": 0, "num_predict": 24}}, func(r ollama.GenerateResponse) error { out += r.Response; return nil })
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if none, img := generate(), generate(red); none == img {
		t.Errorf("Ollama reply %q with and without the image", img)
	}

	clip := func(hz float64) openai.ChatCompletionContentPartUnionParam {
		return openai.InputAudioContentPart(openai.ChatCompletionContentPartInputAudioInputAudioParam{
			Data: servertest.Base64(servertest.WAV(5, hz)), Format: "wav"})
	}
	silent, low, high := chatWith(audio), chatWith(audio, clip(220)), chatWith(audio, clip(1760))
	if reply := low.Choices[0].Message.Content; reply == silent.Choices[0].Message.Content || reply == high.Choices[0].Message.Content ||
		low.Usage.PromptTokens <= silent.Usage.PromptTokens {
		t.Errorf("audio: reply %q (without %q, 1760 Hz %q), prompt_tokens %d (without %d)", reply, silent.Choices[0].Message.Content,
			high.Choices[0].Message.Content, low.Usage.PromptTokens, silent.Usage.PromptTokens)
	}

	// The audio model has no vision: its engine says so, and the image is refused by name.
	_, err := oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: audio, MaxTokens: openai.Int(4),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{image(red), openai.TextContentPart(after)})}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "unsupported_input" || !strings.Contains(apiErr.Message, "messages[0].content[0] is an image") {
		t.Errorf("image to the audio model: %v", err)
	}
}
