package core

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/media"
)

// Images and audio on the prompt road: the dialects put llm.MediaParts on the messages, at
// byte offsets in their text; here each is checked against the model, decoded
// (runtime/media) and replaced by a marker the engine splits the prompt at. The marker is new
// for every request, so no client text can forge one.

// MediaError refuses one image or audio part. Where names it in the dialect's words
// ("messages[0].content[1]"), for a dialect whose error shape has a parameter; the message
// names it too.
type MediaError struct {
	Where string
	Err   error
}

func (e *MediaError) Error() string { return e.Err.Error() }

func (e *MediaError) Unwrap() error { return e.Err }

// mediaRefusal is the core's own reason for refusing a part: its message says it all, and it
// matches llm.ErrInvalidInput, and llm.ErrUnsupportedInput when the model cannot take the kind.
type mediaRefusal struct {
	msg         string
	unsupported bool
}

func (r *mediaRefusal) Error() string { return r.msg }

func (r *mediaRefusal) Is(target error) bool {
	return target == llm.ErrInvalidInput || (r.unsupported && target == llm.ErrUnsupportedInput)
}

// refuseMedia refuses the part at where.
func refuseMedia(where string, unsupported bool, format string, args ...any) *MediaError {
	return &MediaError{Where: where, Err: &mediaRefusal{msg: fmt.Sprintf(format, args...), unsupported: unsupported}}
}

// Modalities says whether the model takes images and audio: the loaded engine's view when it
// runs a projector, else what the catalog read from the projector file before any load.
func (m *Model) Modalities() (vision, audio bool) {
	if m.Loaded() {
		if info := m.Engine.Info(); info.Projector != "" {
			return info.Vision, info.Audio
		}
	}
	return m.Vision, m.Audio
}

// mediaLimits are the configured limits with defaults for the zero fields that matter here.
func (s *Service) mediaLimits() media.Limits {
	l := s.cfg.Media
	if l.MaxParts <= 0 {
		l.MaxParts = media.DefaultLimits().MaxParts
	}
	if l.MaxDecodedBytes <= 0 {
		l.MaxDecodedBytes = media.DefaultLimits().MaxDecodedBytes
	}
	return l
}

// newResolver is the media decoder of a Service with cfg.
func newResolver(cfg Config) *media.Resolver { return &media.Resolver{Limits: cfg.Media} }

// withMedia readies the media of msgs (req's messages with the system prompt) for the prompt
// road: each part checked against the model, the parts counted against the limit, decoded,
// and replaced in its message's text by the request's marker. It returns req with
// Generation.Media and MediaMarker set, and the messages to render; both unchanged when no
// message carries media. release gives back the request's share of the media the server
// holds (decodedBudget) once the request is done with them; it is never nil.
func (s *Service) withMedia(ctx context.Context, m *Model, req *ChatRequest, msgs []chat.Message) (_ *ChatRequest, _ []chat.Message, release func(), err error) {
	parts := mediaParts(msgs)
	if parts == 0 {
		return req, msgs, func() {}, nil
	}
	if err := s.checkMedia(m, msgs, parts); err != nil {
		return nil, nil, nil, err
	}
	marker, err := newMediaMarker()
	if err != nil {
		return nil, nil, nil, err
	}
	decoded := make([]llm.Media, 0, parts)
	limit := s.mediaLimits().MaxDecodedBytes
	budget := &decodedBudget{limit: limit, copies: int64(max(1, req.N)), held: &s.mediaHeld, heldLimit: mediaHeldFactor * limit}
	defer func() {
		if err != nil {
			budget.release()
		}
	}()
	out := make([]chat.Message, len(msgs))
	for i, msg := range msgs {
		out[i] = msg
		if len(msg.Media) == 0 {
			continue
		}
		var sb strings.Builder
		last := 0
		for _, p := range msg.Media {
			if p.At < last || p.At > len(msg.Content) {
				// A dialect's bug, not the client's: offsets come from the parts' order.
				return nil, nil, nil, refuseMedia(p.Where, false, "%s sits at byte %d of a %d-byte message, out of order", partName(p), p.At, len(msg.Content))
			}
			md, err := s.resolveMedia(ctx, p)
			if err != nil {
				return nil, nil, nil, &MediaError{Where: p.Where, Err: err}
			}
			if err := budget.take(p, md); err != nil {
				return nil, nil, nil, err
			}
			decoded = append(decoded, md)
			sb.WriteString(msg.Content[last:p.At])
			sb.WriteString(marker)
			last = p.At
		}
		sb.WriteString(msg.Content[last:])
		out[i].Content, out[i].Media = sb.String(), nil
	}
	ready := *req
	ready.Generation.Media, ready.Generation.MediaMarker = decoded, marker
	return &ready, out, budget.release, nil
}

// mediaHeldFactor is how many requests' worth of decoded media (Limits.MaxDecodedBytes) the
// server holds at once: decoding happens before a request waits for admission and a lane,
// so without it the queue (64 by default) could hold 64 budgets.
const mediaHeldFactor = 4

// decodedBudget is what a request's decoded media may come to (Limits.MaxDecodedBytes): each of
// its choices carries every clip to the engine, so copies counts them. held is what the
// requests in flight hold together, at most heldLimit; past it a request is refused as the
// server being busy (429, Retry-After), not for what it sent.
type decodedBudget struct {
	limit, copies, used int64
	held                *atomic.Int64
	heldLimit, taken    int64
}

// take counts md, refusing it at p when the request's media pass the limit, or the server's
// media in flight would pass theirs.
func (b *decodedBudget) take(p llm.MediaPart, md llm.Media) error {
	size := int64(len(md.RGB)+len(md.PCM)) * b.copies
	b.used += int64(len(md.RGB) + len(md.PCM))
	if b.used*b.copies > b.limit {
		return b.refuse(p)
	}
	b.taken += size
	if b.held.Add(size) > b.heldLimit {
		return &llm.StatusError{Status: http.StatusTooManyRequests, Code: "concurrency_limit_exceeded", RetryAfter: time.Second,
			Message: fmt.Sprintf("the server is busy: the images and audio of the requests in flight hold %s, the most it keeps at once (%d × --media-max-decoded); retry in a moment",
				byteSize(b.held.Load()), mediaHeldFactor)}
	}
	return nil
}

// release gives back what take counted; a second call gives back nothing.
func (b *decodedBudget) release() {
	b.held.Add(-b.taken)
	b.taken = 0
}

// refuse says that the request's media pass its limit at p.
func (b *decodedBudget) refuse(p llm.MediaPart) error {
	each := ""
	if b.copies > 1 {
		each = fmt.Sprintf(", %s for each of its %d choices", byteSize(b.used), b.copies)
	}
	return refuseMedia(p.Where, false, "%s: with it, this request's images and audio clips come to %s decoded (3 bytes a pixel, 4 a sample)%s, over the %s one request may take (--media-max-decoded); send fewer or smaller images, shorter clips or fewer choices",
		partName(p), byteSize(b.used*b.copies), each, byteSize(b.limit))
}

// byteSize formats a byte count for messages.
func byteSize(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%d KiB", (n+1023)>>10)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// mediaParts counts the media parts of msgs.
func mediaParts(msgs []chat.Message) int {
	n := 0
	for _, msg := range msgs {
		n += len(msg.Media)
	}
	return n
}

// checkMedia refuses media the model cannot take, and more parts than the limit, before
// anything is decoded or fetched.
func (s *Service) checkMedia(m *Model, msgs []chat.Message, parts int) error {
	vision, audio := m.Modalities()
	for _, msg := range msgs {
		for _, p := range msg.Media {
			if err := checkKind(m, p, vision, audio); err != nil {
				return err
			}
		}
	}
	if limit := s.mediaLimits().MaxParts; parts > limit {
		return fmt.Errorf("%w: this request has %d images and audio clips; at most %d are taken in one request (the server's --media-max-parts)",
			llm.ErrInvalidInput, parts, limit)
	}
	return nil
}

// checkKind refuses a part the model cannot take: no projector, or one for the other kind,
// or a model served by a forwarding engine (which takes text only, for now).
func checkKind(m *Model, p llm.MediaPart, vision, audio bool) error {
	what, takes, kind := "an image", vision, "vision"
	switch p.Kind {
	case llm.MediaImage:
	case llm.MediaAudio:
		what, takes, kind = "an audio clip", audio, "audio"
	default:
		return refuseMedia(p.Where, false, "%s is a media part of kind %q; send an image or an audio clip", partName(p), p.Kind)
	}
	switch {
	case m.Requests != nil:
		return refuseMedia(p.Where, true, "%s is %s, and the model %s is served by a forwarding engine, which takes text only here; send text, or use a local model with a projector",
			partName(p), what, m.ID)
	case !takes:
		return refuseMedia(p.Where, true, "%s is %s, and the model %s cannot take it (it has no %s projector); use a model that does, or give this one a projector with superfluid add --mmproj",
			partName(p), what, m.ID, kind)
	}
	return nil
}

// partName names p for messages: where the dialect saw it.
func partName(p llm.MediaPart) string {
	if p.Where == "" {
		return "a media part"
	}
	return p.Where
}

// checkMarkers refuses a prompt whose template did not render each media part exactly once:
// the engine would put the clips in the wrong places or fail.
func checkMarkers(m *Model, gen *llm.Request) error {
	if gen.MediaMarker == "" {
		return nil
	}
	if got := strings.Count(gen.Prompt, gen.MediaMarker); got != len(gen.Media) {
		return fmt.Errorf("%w: the chat template of %s rendered %d of the request's %d images and audio clips (it dropped or repeated one); put them in user messages",
			llm.ErrInvalidInput, m.ID, got, len(gen.Media))
	}
	return nil
}

// newMediaMarker is a request's media marker: random, so client text cannot hold it.
func newMediaMarker() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("media marker: %w", err)
	}
	return "<__media_" + hex.EncodeToString(b) + "__>", nil
}

// DecodeBase64 reads base64 as clients send media in it: standard or URL-safe alphabet, padded
// or not, with line breaks or not. The dialects use it for their base64 fields.
func DecodeBase64(s string) ([]byte, error) {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == ' ' || r == '\t' {
			return -1
		}
		return r
	}, s)
	enc := base64.StdEncoding
	if strings.ContainsAny(s, "-_") {
		enc = base64.URLEncoding
	}
	b, err := enc.WithPadding(base64.NoPadding).DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		var ce base64.CorruptInputError
		if errors.As(err, &ce) {
			return nil, fmt.Errorf("bad base64 at byte %d", int64(ce))
		}
		return nil, err
	}
	return b, nil
}
