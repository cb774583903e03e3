package tray

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // thumbnails of GIF, JPEG and PNG attachments
	_ "image/jpeg"
	_ "image/png"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/dustin/go-humanize"
	"golang.org/x/image/draw"
	_ "golang.org/x/image/webp" // thumbnails of WebP attachments
)

// Attachment kinds, as the playground checks them against a model's abilities.
const (
	kindImage = "image"
	kindAudio = "audio"
)

// maxAttachmentBytes bounds a file the playground reads into memory; the server's own limits
// (pixels, seconds, bytes) are checked when the message is sent.
const maxAttachmentBytes = 32 << 20

// attachTypes are the files the playground attaches, by extension.
var attachTypes = map[string]string{
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp", ".gif": "image/gif",
	".wav": "audio/wav", ".mp3": "audio/mpeg", ".flac": "audio/flac",
}

// attachKind is "image" or "audio" for a MIME type the playground attaches, else "".
func attachKind(mime string) string {
	for _, m := range attachTypes {
		if m == mime {
			kind, _, _ := strings.Cut(mime, "/")
			return kind
		}
	}
	return ""
}

// attachExtensions are the extensions of the kinds a model takes, for the file dialog's filter.
func attachExtensions(vision, audio bool) []string {
	var out []string
	for _, ext := range []string{".png", ".jpg", ".jpeg", ".webp", ".gif", ".wav", ".mp3", ".flac"} {
		kind := attachKind(attachTypes[ext])
		if kind == kindImage && vision || kind == kindAudio && audio {
			out = append(out, ext)
		}
	}
	return out
}

// errNotAttachable says what the playground takes.
var errNotAttachable = errors.New("attach a PNG, JPEG, WebP or GIF image, or a WAV, MP3 or FLAC audio file")

// readAttachment reads an attachment named name (its extension gives its type) from r.
func readAttachment(name string, r io.Reader) (Attachment, error) {
	mime := attachTypes[strings.ToLower(filepath.Ext(name))]
	if mime == "" {
		return Attachment{}, fmt.Errorf("%s: %w", name, errNotAttachable)
	}
	data, err := io.ReadAll(io.LimitReader(r, maxAttachmentBytes+1))
	if err != nil {
		return Attachment{}, fmt.Errorf("read %s: %w", name, err)
	}
	if len(data) > maxAttachmentBytes {
		return Attachment{}, fmt.Errorf("%s is over %s: attach a smaller file", name, humanize.IBytes(maxAttachmentBytes))
	}
	if len(data) == 0 {
		return Attachment{}, fmt.Errorf("%s is empty", name)
	}
	return Attachment{Name: filepath.Base(name), MIME: mime, Data: data}, nil
}

// opener reads one attachment.
type opener func() (Attachment, error)

// pastedAttachments says whether a paste is attachments rather than text, and how to read
// them: a data URL of an image or audio type, or one or more paths (or file:// URIs) of such
// files, one a line, as file managers copy them. fyne's clipboard holds text only, so a copied
// image itself cannot be pasted; ok is false for ordinary text, which the input then takes.
func pastedAttachments(text string) (files []opener, ok bool) {
	text = strings.TrimSpace(text)
	if strings.HasPrefix(text, "data:") {
		return []opener{func() (Attachment, error) { return dataURLAttachment(text) }}, true
	}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if u, err := url.Parse(line); err == nil && u.Scheme == "file" {
			line = u.Path
		}
		if !filepath.IsAbs(line) || attachTypes[strings.ToLower(filepath.Ext(line))] == "" {
			return nil, false
		}
		if st, err := os.Stat(line); err != nil || !st.Mode().IsRegular() {
			return nil, false
		}
		files = append(files, func() (Attachment, error) {
			f, err := os.Open(line)
			if err != nil {
				return Attachment{}, err
			}
			defer f.Close()
			return readAttachment(line, f)
		})
	}
	return files, len(files) > 0
}

// dataURLAttachment decodes "data:image/png;base64,...".
func dataURLAttachment(s string) (Attachment, error) {
	head, payload, found := strings.Cut(strings.TrimPrefix(s, "data:"), ",")
	mime, isBase64 := strings.CutSuffix(head, ";base64")
	if !found || !isBase64 || attachKind(mime) == "" {
		return Attachment{}, fmt.Errorf("the pasted data URL is not a base64 image or audio file: %w", errNotAttachable)
	}
	if base64.StdEncoding.DecodedLen(len(payload)) > maxAttachmentBytes {
		return Attachment{}, fmt.Errorf("the pasted file is over %s: attach a smaller file", humanize.IBytes(maxAttachmentBytes))
	}
	data, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(payload), ""))
	if err != nil || len(data) == 0 {
		return Attachment{}, fmt.Errorf("the pasted data URL's base64 does not decode")
	}
	ext := ""
	for e, m := range attachTypes {
		if m == mime && (ext == "" || e < ext) {
			ext = e
		}
	}
	return Attachment{Name: "pasted" + ext, MIME: mime, Data: data}, nil
}

// chipText is "name · 12 kB".
func chipText(a Attachment) string {
	return a.Name + " · " + humanize.Bytes(uint64(len(a.Data)))
}

// thumbSide is the largest side of an attachment's thumbnail, in pixels.
const thumbSide = 96

// maxThumbPixels bounds the images the playground decodes for a thumbnail: a bigger one (or a
// decompression bomb) gets the image icon; the server refuses it by its own limits anyway.
const maxThumbPixels = 40_000_000

// thumbnail is a small copy of an image attachment, nil when it does not decode.
func thumbnail(data []byte) image.Image {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width*cfg.Height > maxThumbPixels {
		return nil
	}
	img, _, err := image.Decode(bytes.NewReader(data)) // a GIF's first frame
	if err != nil {
		return nil
	}
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if w > thumbSide || h > thumbSide {
		if w >= h {
			w, h = thumbSide, max(1, h*thumbSide/w)
		} else {
			w, h = max(1, w*thumbSide/h), thumbSide
		}
	}
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.ApproxBiLinear.Scale(dst, dst.Bounds(), img, b, draw.Src, nil)
	return dst
}
