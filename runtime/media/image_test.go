package media

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

// encodePNG writes img as a PNG.
func encodePNG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// halfTransparent is a w×h NRGBA image: opaque red on the left half, a fully transparent
// (green) right half, so compositing on white is visible.
func halfTransparent(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			if x < w/2 {
				img.Set(x, y, color.NRGBA{255, 0, 0, 255})
			} else {
				img.Set(x, y, color.NRGBA{0, 255, 0, 0})
			}
		}
	}
	return img
}

func TestDecodePNGCompositesAlphaOnWhite(t *testing.T) {
	m, err := DecodeImage(encodePNG(t, halfTransparent(4, 2)), "image/png", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Kind != llm.MediaImage || m.Width != 4 || m.Height != 2 || len(m.RGB) != 4*2*3 {
		t.Fatalf("got kind %q %d×%d with %d bytes; want image 4×2 with 24", m.Kind, m.Width, m.Height, len(m.RGB))
	}
	if got := m.RGB[0:3]; !bytes.Equal(got, []byte{255, 0, 0}) {
		t.Errorf("opaque red pixel = %v", got)
	}
	if got := m.RGB[9:12]; !bytes.Equal(got, []byte{255, 255, 255}) {
		t.Errorf("transparent pixel = %v; want white", got)
	}
	if len(m.Hash) != 64 {
		t.Errorf("hash %q is not hex sha256", m.Hash)
	}
}

func TestResolveDataURL(t *testing.T) {
	data := encodePNG(t, halfTransparent(2, 2))
	url := "data:image/png;base64," + base64.StdEncoding.EncodeToString(data)
	m, err := Resolver{}.Resolve(context.Background(), llm.MediaPart{Kind: llm.MediaImage, URL: url})
	if err != nil {
		t.Fatal(err)
	}
	direct, err := DecodeImage(data, "", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Hash != direct.Hash || m.Width != 2 {
		t.Errorf("the data URL decoded to %s (%d wide), the bytes to %s", m.Hash, m.Width, direct.Hash)
	}
}

func TestDataURLWithWrongMIME(t *testing.T) {
	data := encodePNG(t, halfTransparent(2, 2))
	url := "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(data)
	_, err := Resolver{}.Resolve(context.Background(), llm.MediaPart{Kind: llm.MediaImage, URL: url, Where: "messages[0].content[1]"})
	if !errors.Is(err, llm.ErrInvalidInput) {
		t.Fatalf("err = %v; want invalid input", err)
	}
	for _, want := range []string{"messages[0].content[1]", "image/jpeg", "image/png"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not name %s", err, want)
		}
	}
}
