package llm

import (
	"context"
	"fmt"
)

// Media kinds: what a projector (a multimodal encoder beside the text model) takes.
const (
	MediaImage = "image"
	MediaAudio = "audio"
)

// AudioSampleRate is the rate, in samples per second, of Media.PCM: every audio encoder the
// engine runs (Whisper-style) takes 16 kHz mono.
const AudioSampleRate = 16000

// ErrUnsupportedInput refuses an image or audio part the model cannot take (no projector, or a
// projector for the other kind): the spec's 400 unsupported_input. It matches ErrInvalidInput
// too.
var ErrUnsupportedInput = fmt.Errorf("%w: the model cannot take this input", ErrInvalidInput)

// MediaPart is an image or audio clip as a client sent it, inside a chat message: raw file
// bytes or a URL, not yet decoded. The core decodes it (runtime/media) into a Media.
type MediaPart struct {
	// At is the byte offset in the message's Content where the part goes (0: before the text).
	At int
	// Kind is MediaImage or MediaAudio.
	Kind string
	// MIME is the declared type ("image/png", "audio/wav", ...); "" lets the decoder sniff it.
	MIME string
	// Data is the file's bytes (base64 already decoded by the dialect); empty when URL is set.
	Data []byte
	// URL is an http(s) URL to fetch instead (only with --allow-remote-media).
	URL string
	// Where names the part for errors, in the dialect's words ("messages[0].content[1]").
	Where string
}

// Media is one decoded image or audio clip of a prompt, ready for the engine's encoder.
type Media struct {
	// Kind is MediaImage or MediaAudio.
	Kind string `json:"kind"`
	// Hash identifies the content (hex SHA-256 of the decoded pixels or samples with their
	// shape): the prefix cache keys the clip's positions by it, so a conversation that re-sends
	// the same image stays warm.
	Hash string `json:"hash"`
	// Width and Height are an image's size in pixels; RGB its pixels, row by row, 3 bytes each
	// (len = Width*Height*3).
	Width  int    `json:"width,omitempty"`
	Height int    `json:"height,omitempty"`
	RGB    []byte `json:"rgb,omitempty"`
	// PCM is an audio clip's mono samples at AudioSampleRate, little-endian float32 in [-1, 1].
	PCM []byte `json:"pcm,omitempty"`
}

// Samples is the number of audio samples in PCM.
func (m *Media) Samples() int { return len(m.PCM) / 4 }

// AdapterRef is a LoRA adapter one request runs with: the engine loads Path on first use and
// applies it at Scale to this request's lane only.
type AdapterRef struct {
	// ID names the adapter in replies and errors (a catalog id, or the id it was loaded as).
	ID   string `json:"id"`
	Path string `json:"path"`
	// Scale multiplies the adapter's delta; 1 is as trained, 0 turns it off.
	Scale float64 `json:"scale"`
}

// AdapterReleaser is implemented by engines that keep LoRA adapters loaded: ReleaseAdapter
// frees the adapter at path once no lane runs with it (POST /v1/lora/unload). Engines without
// it simply stop being asked for the adapter.
type AdapterReleaser interface {
	ReleaseAdapter(ctx context.Context, path string) error
}
