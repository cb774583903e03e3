package media

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"net/http"
	"strings"

	"golang.org/x/image/webp"

	"github.com/superfluid/superfluid/runtime/llm"
)

// imageFormats are the formats taken, by canonical MIME type.
var imageFormats = map[string]string{
	"image/png":  "PNG",
	"image/jpeg": "JPEG",
	"image/webp": "WebP",
	"image/gif":  "GIF",
}

// imageAliases are other spellings clients declare.
var imageAliases = map[string]string{"image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg", "image/x-png": "image/png"}

const imageFormatsHint = "send PNG, JPEG, WebP or GIF"

// DecodeImage decodes a PNG, JPEG, WebP or GIF (its first frame) into RGB pixels, alpha
// composited on white. The type is sniffed from the bytes; a declared mime that disagrees is
// refused, as are SVG and every other format. Size limits are checked from the header, before
// pixels are decoded. Resizing is left to the encoder.
func DecodeImage(data []byte, mime string, lim Limits) (llm.Media, error) {
	lim = lim.withDefaults()
	if int64(len(data)) > lim.MaxBytes {
		return llm.Media{}, tooLarge("the image is %s; the limit is %s", mib(int64(len(data))), mib(lim.MaxBytes))
	}
	if len(data) == 0 {
		return llm.Media{}, invalid("the image is empty (0 bytes)")
	}
	kind, err := sniffImage(data, mime)
	if err != nil {
		return llm.Media{}, err
	}
	name := imageFormats[kind]
	cfg, err := decodeConfig(kind, data)
	if err != nil {
		return llm.Media{}, damaged(name, err)
	}
	if err := checkImageSize(name, cfg, lim); err != nil {
		return llm.Media{}, err
	}
	if kind == "image/gif" {
		if err := checkGIFFrames(data, lim.MaxGIFFrames); err != nil {
			return llm.Media{}, err
		}
	}
	img, err := decodePixels(kind, data)
	if err != nil {
		return llm.Media{}, damaged(name, err)
	}
	b := img.Bounds()
	if b.Dx() <= 0 || b.Dy() <= 0 {
		return llm.Media{}, invalid("the %s image has no pixels", name)
	}
	rgb := toRGB(img)
	return llm.Media{Kind: llm.MediaImage, Hash: imageHash(b.Dx(), b.Dy(), rgb), Width: b.Dx(), Height: b.Dy(), RGB: rgb}, nil
}

// sniffImage names the image type the bytes are, refusing a declared type that disagrees.
func sniffImage(data []byte, declared string) (string, error) {
	declared = canonicalMIME(declared)
	if a, ok := imageAliases[declared]; ok {
		declared = a
	}
	const noSVG = "SVG images are not supported (the encoder takes pixels, not vector drawings); " + imageFormatsHint
	if declared == "image/svg+xml" {
		return "", invalid(noSVG)
	}
	sniffed := http.DetectContentType(data)
	if _, ok := imageFormats[sniffed]; !ok {
		if isSVG(data) {
			return "", invalid(noSVG)
		}
		if declared != "" && declared != "application/octet-stream" {
			return "", invalid("the image is declared %s but its bytes are %s; %s", declared, describeSniffed(sniffed), imageFormatsHint)
		}
		return "", invalid("the image's bytes are %s, not a supported image; %s", describeSniffed(sniffed), imageFormatsHint)
	}
	if declared != "" && declared != "application/octet-stream" && declared != sniffed {
		if _, ok := imageFormats[declared]; !ok {
			return "", invalid("%s is not a supported image type; %s", declared, imageFormatsHint)
		}
		return "", invalid("the image is declared %s but its bytes are %s; declare the type it really is", declared, sniffed)
	}
	return sniffed, nil
}

// canonicalMIME lowercases a MIME type and drops its parameters.
func canonicalMIME(m string) string {
	m, _, _ = strings.Cut(m, ";")
	return strings.ToLower(strings.TrimSpace(m))
}

// describeSniffed words what http.DetectContentType saw, for a refusal.
func describeSniffed(s string) string {
	s = canonicalMIME(s)
	if s == "application/octet-stream" {
		return "of no known type"
	}
	return s
}

// isSVG reports whether data looks like an SVG document (XML text with an <svg element near
// the start), which content sniffing calls text.
func isSVG(data []byte) bool {
	head := data[:min(len(data), 1024)]
	return bytes.Contains(bytes.ToLower(head), []byte("<svg"))
}

func decodeConfig(kind string, data []byte) (image.Config, error) {
	r := bytes.NewReader(data)
	switch kind {
	case "image/png":
		return png.DecodeConfig(r)
	case "image/jpeg":
		return jpeg.DecodeConfig(r)
	case "image/gif":
		return gif.DecodeConfig(r)
	default:
		return webp.DecodeConfig(r)
	}
}

func decodePixels(kind string, data []byte) (img image.Image, err error) {
	// The decoders are trusted to return errors, but a panic on hostile bytes must cost one
	// request, never the server.
	defer func() {
		if p := recover(); p != nil {
			img, err = nil, errors.New("the decoder failed on it")
		}
	}()
	r := bytes.NewReader(data)
	switch kind {
	case "image/png":
		return png.Decode(r)
	case "image/jpeg":
		return jpeg.Decode(r)
	case "image/gif":
		return gif.Decode(r) // the first frame only
	default:
		return webp.Decode(r)
	}
}

// damaged refuses an image its decoder could not read.
func damaged(name string, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return invalid("truncated or damaged %s: the file ends too soon; send the whole file", name)
	}
	return invalid("truncated or damaged %s: %v", name, err)
}

// checkImageSize refuses an image whose header declares more pixels, or more decoded bytes,
// than the limits allow: a decompression bomb is stopped here, before its pixels exist.
func checkImageSize(name string, cfg image.Config, lim Limits) error {
	w, h := int64(cfg.Width), int64(cfg.Height)
	if w <= 0 || h <= 0 {
		return invalid("the %s image has no pixels (%d×%d)", name, w, h)
	}
	pixels := w * h
	if pixels > lim.MaxPixels {
		return tooLarge("the %s image is %d×%d = %d pixels; the limit is %d pixels (about %d megapixels); scale it down",
			name, w, h, pixels, lim.MaxPixels, lim.MaxPixels/1_000_000)
	}
	if need, budget := pixels*bytesPerPixel(cfg.ColorModel), 4*lim.MaxPixels; need > budget {
		return tooLarge("the %s image (%d×%d, 16 bits a channel) needs %s to decode; the limit is %s; send it with 8 bits a channel or smaller",
			name, w, h, mib(need), mib(budget))
	}
	return nil
}

// bytesPerPixel is what the standard decoders allocate per pixel for a color model.
func bytesPerPixel(m color.Model) int64 {
	switch m {
	case color.RGBA64Model, color.NRGBA64Model:
		return 8
	case color.Gray16Model:
		return 2
	case color.GrayModel:
		return 1
	default:
		return 4
	}
}

// imageHash identifies decoded pixels with their shape (llm.Media.Hash).
func imageHash(w, h int, rgb []byte) string {
	sum := sha256.New()
	var shape [8]byte
	binary.LittleEndian.PutUint32(shape[:4], uint32(w))
	binary.LittleEndian.PutUint32(shape[4:], uint32(h))
	sum.Write([]byte(llm.MediaImage + "\x00"))
	sum.Write(shape[:])
	sum.Write(rgb)
	return hex.EncodeToString(sum.Sum(nil))
}
