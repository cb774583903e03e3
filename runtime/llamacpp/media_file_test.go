package llamacpp

import (
	"bytes"
	"errors"
	"image/color"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

// TestDecodeImageFile: llama.cpp's own decoder turns a PNG's bytes into the very pixels it
// holds (the media benchmark's llama-server baseline), the result generates like any image,
// and bytes that are no image, or an engine without a vision projector, are refused.
func TestDecodeImageFile(t *testing.T) {
	files := writeMediaFiles(t)[0]
	e := loadMedia(t, files.model, files.vision, 1)
	pixel := func(x, y int) color.RGBA { return color.RGBA{uint8(x * 40), uint8(y * 60), uint8(x + y), 255} }
	m, err := e.DecodeImageFile(testPNG(t, 5, 3, pixel))
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 0, 5*3*3)
	for y := range 3 {
		for x := range 5 {
			c := pixel(x, y)
			want = append(want, c.R, c.G, c.B)
		}
	}
	if m.Kind != llm.MediaImage || m.Width != 5 || m.Height != 3 || !bytes.Equal(m.RGB, want) {
		t.Fatalf("decoded %s %d×%d %v, want image 5×3 %v", m.Kind, m.Width, m.Height, m.RGB, want)
	}
	res, err := generate(t, e, mediaReq("Look: ", " It is", 2, m))
	if err != nil {
		t.Fatalf("the decoded image does not generate: %v", err)
	}
	if got := res.done.Usage.PromptTokens; got <= files.visionTokens {
		t.Errorf("prompt_tokens %d, want the image's %d positions and the text", got, files.visionTokens)
	}
	if _, err := e.DecodeImageFile([]byte("not an image at all")); !errors.Is(err, llm.ErrInvalidInput) {
		t.Errorf("garbage bytes: %v, want an invalid-input error", err)
	}
	audioOnly := loadMedia(t, files.model, files.audio, 1)
	if _, err := audioOnly.DecodeImageFile(testPNG(t, 2, 2, pixel)); !errors.Is(err, llm.ErrUnsupportedInput) {
		t.Errorf("no vision projector: %v, want an unsupported-input error", err)
	}
}
