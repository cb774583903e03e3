package app

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/superfluid/superfluid/server/servertest"
)

// TestMediaLongStripRefused: a 3×100000 PNG is under the core's pixel limit, but a LLaVA-style
// projector pads an image to a square of its longer side, which overflowed and aborted the
// worker (a 500 and a restart for what is bad input). Through openai-go it is a 400 saying
// the engine's side limit, and the same worker then replies to a sane image.
func TestMediaLongStripRefused(t *testing.T) {
	srvURL, vision, _ := mediaModels(t)
	oa := sdk(srvURL)
	ctx := context.Background()
	ask := func(png []byte) (*openai.ChatCompletion, error) {
		return oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: vision, MaxTokens: openai.Int(8), Temperature: openai.Float(0),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
				openai.TextContentPart("Once upon a time"),
				openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: servertest.DataURL("image/png", png)}),
				openai.TextContentPart(" there was"),
			})}})
	}
	_, err := ask(servertest.NoisePNG(3, 100000, 1))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "up to 8192 pixels a side") {
		t.Fatalf("a 3×100000 image: %v; want a 400 saying the engine takes up to 8192 pixels a side", err)
	}
	if _, err := ask(servertest.NoisePNG(40, 30, 2)); err != nil {
		t.Errorf("a 40×30 image after the refusal: %v", err)
	}
}
