package media

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

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

func TestHundredMegapixelPNGRefusedFromItsHeader(t *testing.T) {
	// The header alone: IHDR declares 10000×10000 and no pixel data follows, so a refusal can
	// only have come from the header.
	data := craftPNG(t, 10000, 10000, 8, 6, 0)
	var err error
	bytesUsed := allocated(func() { _, err = DecodeImage(data, "image/png", Limits{}) })
	mustRefuse(t, err, true, "10000×10000", "100000000 pixels", "limit is 33177600")
	if bytesUsed > 64<<10 {
		t.Errorf("refusing a %d-byte header allocated %d bytes; decoding began", len(data), bytesUsed)
	}
}

func TestZipBombPNG(t *testing.T) {
	t.Run("huge declared size", func(t *testing.T) {
		// 8000×6000 gray: 48 MB of zeros that deflate to a few tens of KiB.
		data := craftPNG(t, 8000, 6000, 8, 0, 6000*(8000+1))
		var err error
		used := allocated(func() { _, err = DecodeImage(data, "", Limits{}) })
		mustRefuse(t, err, true, "48000000 pixels")
		if used > 1<<20 {
			t.Errorf("a %d KiB bomb allocated %d bytes before its refusal", len(data)>>10, used)
		}
	})
	t.Run("IDAT far past the declared size", func(t *testing.T) {
		// 64×64 gray needs 4160 bytes; the IDAT inflates to 16 MiB.
		data := craftPNG(t, 64, 64, 8, 0, 16<<20)
		var err error
		used := allocated(func() { _, err = DecodeImage(data, "", Limits{}) })
		mustRefuse(t, err, false, "damaged PNG", "too much pixel data")
		if used > 4<<20 {
			t.Errorf("decoding a 64×64 bomb allocated %d bytes: it inflated past the image", used)
		}
	})
	t.Run("16-bit channels past the decoded-bytes cap", func(t *testing.T) {
		// 30×30 = 900 pixels fit a 1000-pixel limit, but at 8 bytes a pixel they need more
		// than the 4 bytes a pixel the limit allows.
		data := craftPNG(t, 30, 30, 16, 6, 0)
		_, err := DecodeImage(data, "", Limits{MaxPixels: 1000})
		mustRefuse(t, err, true, "16 bits a channel", "needs")
	})
}

func TestTruncatedJPEG(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 64, 64))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 7)
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, nil); err != nil {
		t.Fatal(err)
	}
	whole := buf.Bytes()
	if _, err := DecodeImage(whole, "image/jpeg", Limits{}); err != nil {
		t.Fatalf("the whole JPEG: %v", err)
	}
	// Cut in its entropy-coded data, the decoder finds the Huffman data short; cut in its
	// headers, it meets the end of the file.
	_, err := DecodeImage(whole[:len(whole)/2], "image/jpeg", Limits{})
	mustRefuse(t, err, false, "truncated or damaged JPEG", "short Huffman data")
	_, err = DecodeImage(whole[:200], "image/jpeg", Limits{})
	mustRefuse(t, err, false, "truncated or damaged JPEG: the file ends too soon")
}

func TestDecodeJPEGColors(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 16, 16))
	for i := 0; i < len(img.Pix); i += 4 {
		copy(img.Pix[i:], []byte{200, 40, 60, 255})
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 95}); err != nil {
		t.Fatal(err)
	}
	m, err := DecodeImage(buf.Bytes(), "image/jpg", Limits{}) // a common misspelling, taken
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{200, 40, 60} {
		if got := int(m.RGB[i]); got < want-6 || got > want+6 {
			t.Errorf("channel %d = %d; want about %d", i, got, want)
		}
	}
}

func TestGIFWith10000FramesRefusedWithoutDecoding(t *testing.T) {
	// 10,000 one-pixel frames, written block by block: about 150 KB.
	var buf bytes.Buffer
	buf.WriteString("GIF89a\x01\x00\x01\x00\x80\x00\x00") // 1×1 screen, a 2-color global table
	buf.Write([]byte{0, 0, 0, 255, 255, 255})
	for range 10000 {
		// Image descriptor at 0,0, 1×1, no local table; LZW code size 2; one sub-block holding
		// the codes clear, 0, end.
		buf.Write([]byte{0x2C, 0, 0, 0, 0, 1, 0, 1, 0, 0, 2, 2, 0x44, 0x01, 0})
	}
	buf.WriteByte(0x3B)
	var err error
	used := allocated(func() { _, err = DecodeImage(buf.Bytes(), "image/gif", Limits{}) })
	mustRefuse(t, err, true, "more than 1000 frames")
	if used > 64<<10 {
		t.Errorf("counting frames allocated %d bytes; frames were decoded", used)
	}
	// The same GIF under a higher frame limit decodes (its first frame).
	m, err := DecodeImage(buf.Bytes(), "image/gif", Limits{MaxGIFFrames: 10000})
	if err != nil || m.Width != 1 {
		t.Errorf("with a 10000-frame limit: %d wide, %v", m.Width, err)
	}
}

func TestGIFFirstFrame(t *testing.T) {
	palette := color.Palette{color.RGBA{255, 0, 0, 255}, color.RGBA{0, 0, 255, 255}, color.Transparent}
	red := image.NewPaletted(image.Rect(0, 0, 3, 2), palette)
	blue := image.NewPaletted(image.Rect(0, 0, 3, 2), palette)
	for i := range blue.Pix {
		blue.Pix[i] = 1
	}
	red.Pix[5] = 2 // one transparent pixel: white
	var buf bytes.Buffer
	if err := gif.EncodeAll(&buf, &gif.GIF{Image: []*image.Paletted{red, blue}, Delay: []int{10, 10}}); err != nil {
		t.Fatal(err)
	}
	m, err := DecodeImage(buf.Bytes(), "image/gif", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte{255, 0, 0}, 5)
	want = append(want, 255, 255, 255)
	if !bytes.Equal(m.RGB, want) {
		t.Errorf("first frame = %v; want five red pixels and a white one", m.RGB)
	}
}

func TestWebP(t *testing.T) {
	src := readFixture(t, "src.png")
	ref, err := DecodeImage(src, "image/png", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	lossless, err := DecodeImage(readFixture(t, "lossless.webp"), "image/webp", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	// The hash is over pixels, not the file: the same picture in another format is the same image.
	if lossless.Hash != ref.Hash || !bytes.Equal(lossless.RGB, ref.RGB) {
		t.Errorf("lossless WebP differs from its PNG source (hash %s vs %s)", lossless.Hash, ref.Hash)
	}
	smooth, err := DecodeImage(readFixture(t, "smooth.png"), "", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	lossy, err := DecodeImage(readFixture(t, "lossy.webp"), "", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if lossy.Width != 32 || lossy.Height != 24 {
		t.Fatalf("lossy WebP is %d×%d; want 32×24", lossy.Width, lossy.Height)
	}
	var diff int
	for i := range lossy.RGB {
		diff += abs(int(lossy.RGB[i]) - int(smooth.RGB[i]))
	}
	// libwebp's own decoder is 1.3 levels from the source.
	if mean := float64(diff) / float64(len(smooth.RGB)); mean > 4 {
		t.Errorf("lossy WebP is %.1f levels a channel from its source on average", mean)
	}
}

func TestSVGRefused(t *testing.T) {
	svg := []byte(`<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>`)
	for _, declared := range []string{"image/svg+xml", "image/png", ""} {
		_, err := DecodeImage(svg, declared, Limits{})
		mustRefuse(t, err, false, "SVG images are not supported", "PNG, JPEG, WebP or GIF")
	}
}

func TestUnsupportedImageTypes(t *testing.T) {
	bmp := append([]byte("BM"), make([]byte, 60)...)
	cases := []struct {
		name     string
		data     []byte
		declared string
		words    []string
	}{
		{"BMP sniffed", bmp, "", []string{"image/bmp", "not a supported image"}},
		{"BMP declared", bmp, "image/bmp", []string{"image/bmp"}},
		{"TIFF declared over PNG bytes", encodePNG(t, halfTransparent(2, 2)), "image/tiff", []string{"image/tiff is not a supported image type"}},
		{"text", []byte("hello, world"), "", []string{"text/plain", "not a supported image"}},
		{"empty", nil, "image/png", []string{"empty"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeImage(c.data, c.declared, Limits{})
			mustRefuse(t, err, false, c.words...)
		})
	}
}

func TestImageByteLimit(t *testing.T) {
	data := encodePNG(t, halfTransparent(64, 64))
	_, err := DecodeImage(data, "image/png", Limits{MaxBytes: int64(len(data) - 1)})
	mustRefuse(t, err, true, "the limit is")
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
