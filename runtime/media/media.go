// Package media turns the images and audio clips clients send (llm.MediaPart: raw bytes, data
// URLs or, when allowed, http(s) URLs) into what the engine's encoders take (llm.Media: RGB
// pixels or 16 kHz mono PCM), refusing hostile input — oversized, bombs, fakes, URLs at this
// machine — from headers where it can, before anything big is allocated. Pure Go, no cgo.
package media

import (
	"errors"
	"fmt"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
)

// Limits bounds what one media part may cost. A zero field takes its DefaultLimits value.
type Limits struct {
	// MaxBytes is the largest file (encoded bytes) taken, inline or fetched.
	MaxBytes int64
	// MaxPixels is the largest image (width × height); decoded memory is held to 4 bytes a
	// pixel at this size, so 16-bit images get half as many.
	MaxPixels int64
	// MaxGIFFrames is the most frames a GIF may hold (only the first is decoded).
	MaxGIFFrames int
	// MaxAudioSeconds is the longest audio clip.
	MaxAudioSeconds int
	// MaxParts is the most media parts in one request (the core enforces it).
	MaxParts int
	// AllowRemote reports whether http(s) URLs are fetched (--allow-remote-media).
	AllowRemote bool
	// FetchTimeout bounds one remote fetch, redirects and body included.
	FetchTimeout time.Duration
	// MaxRedirects is the most redirects one fetch follows.
	MaxRedirects int
}

// DefaultLimits are the server's limits unless configured otherwise.
func DefaultLimits() Limits {
	return Limits{
		MaxBytes:        20 << 20,
		MaxPixels:       7680 * 4320, // 8K UHD, about 33 megapixels
		MaxGIFFrames:    1000,
		MaxAudioSeconds: 600,
		MaxParts:        20,
		FetchTimeout:    10 * time.Second,
		MaxRedirects:    5,
	}
}

// withDefaults fills the zero fields of l from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxBytes <= 0 {
		l.MaxBytes = d.MaxBytes
	}
	if l.MaxPixels <= 0 {
		l.MaxPixels = d.MaxPixels
	}
	if l.MaxGIFFrames <= 0 {
		l.MaxGIFFrames = d.MaxGIFFrames
	}
	if l.MaxAudioSeconds <= 0 {
		l.MaxAudioSeconds = d.MaxAudioSeconds
	}
	if l.MaxParts <= 0 {
		l.MaxParts = d.MaxParts
	}
	if l.FetchTimeout <= 0 {
		l.FetchTimeout = d.FetchTimeout
	}
	if l.MaxRedirects <= 0 {
		l.MaxRedirects = d.MaxRedirects
	}
	return l
}

// ErrTooLarge marks refusals for size (bytes, pixels, frames, seconds): a route may answer
// them 413. It matches llm.ErrInvalidInput too.
var ErrTooLarge = fmt.Errorf("%w: media too large", llm.ErrInvalidInput)

// refusal is a media part refused for what it is. Its message is the whole story (no sentinel
// prefix), so a dialect shows it to the user as is.
type refusal struct {
	msg      string
	tooLarge bool
}

func (r *refusal) Error() string { return r.msg }

// Is lets errors.Is match llm.ErrInvalidInput, and ErrTooLarge for size refusals.
func (r *refusal) Is(target error) bool {
	return target == llm.ErrInvalidInput || (r.tooLarge && target == ErrTooLarge)
}

// invalid refuses a part for its content.
func invalid(format string, args ...any) error {
	return &refusal{msg: fmt.Sprintf(format, args...)}
}

// tooLarge refuses a part for its size.
func tooLarge(format string, args ...any) error {
	return &refusal{msg: fmt.Sprintf(format, args...), tooLarge: true}
}

// within prefixes a refusal with where the part sat ("messages[0].content[1]: ..."), keeping
// what it matches; other errors (a cancelled context) pass unchanged.
func within(where string, err error) error {
	var r *refusal
	if where == "" || !errors.As(err, &r) {
		return err
	}
	return &refusal{msg: where + ": " + r.msg, tooLarge: r.tooLarge}
}

// Duration is how long an audio clip plays (zero for an image).
func Duration(m llm.Media) time.Duration {
	if m.Kind != llm.MediaAudio {
		return 0
	}
	return time.Duration(int64(m.Samples()) * int64(time.Second) / llm.AudioSampleRate)
}

// mib formats a byte count for messages.
func mib(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%d KiB", (n+1023)>>10)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
