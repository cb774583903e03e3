package llamacpp

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/superfluid/superfluid/runtime/llm"
)

// mediaPrompt is the prompt of a request with media as token ids, pseudo tokens where the
// media chunks go, and the media it holds (two holds: the caller's and the loop's).
func (e *Engine) mediaPrompt(ctx context.Context, req *llm.Request) ([]int, *promptMedia, error) {
	switch {
	case len(req.Tokens) > 0:
		return nil, nil, fmt.Errorf("%w: a prompt with images or audio is text with markers, not token ids", llm.ErrInvalidInput)
	case req.MediaMarker == "":
		return nil, nil, fmt.Errorf("%w: the request has %d images or clips and no media marker to place them", llm.ErrInvalidInput, len(req.Media))
	}
	pieces := strings.Split(req.Prompt, req.MediaMarker)
	if len(pieces)-1 != len(req.Media) {
		return nil, nil, fmt.Errorf("%w: the prompt holds the media marker %d times for %d images and clips; each goes where one marker is",
			llm.ErrInvalidInput, len(pieces)-1, len(req.Media))
	}
	for i := range req.Media {
		if err := e.checkMedia(i, &req.Media[i]); err != nil {
			return nil, nil, err
		}
	}
	m := &promptMedia{live: &e.mediaLive}
	var prompt []int
	for i, piece := range pieces {
		// Special tokens (BOS) go on the first piece only, as on a whole prompt.
		tokens, err := e.Tokenize(ctx, piece, req.AddSpecial && i == 0, true)
		if err != nil {
			m.free()
			if errors.Is(err, errClosed) {
				return nil, nil, err
			}
			return nil, nil, fmt.Errorf("%w: tokenize prompt: %v", llm.ErrInvalidInput, err)
		}
		prompt = append(prompt, tokens...)
		if i < len(req.Media) {
			if prompt, err = e.appendMedia(prompt, m, i, &req.Media[i]); err != nil {
				m.free()
				return nil, nil, err
			}
		}
	}
	m.refs.Store(2)
	return prompt, m, nil
}

// checkMedia refuses media the model cannot take (no projector, or one without that kind's
// encoder) and media whose data does not match its shape.
func (e *Engine) checkMedia(i int, m *llm.Media) error {
	var what string
	switch m.Kind {
	case llm.MediaImage:
		what = "an image"
	case llm.MediaAudio:
		what = "audio"
	default:
		return fmt.Errorf("%w: media %d has kind %q (want %q or %q)", llm.ErrInvalidInput, i, m.Kind, llm.MediaImage, llm.MediaAudio)
	}
	model := filepath.Base(e.info.Path)
	if e.proj == nil {
		return fmt.Errorf("%w: the model %s cannot take %s: it has no multimodal projector (mmproj) loaded beside it", llm.ErrUnsupportedInput, model, what)
	}
	if why := e.proj.refuse[m.Kind]; why != "" {
		return fmt.Errorf("%w: the model %s cannot take %s: %s", llm.ErrUnsupportedInput, model, what, why)
	}
	switch {
	case m.Kind == llm.MediaImage && (m.Width <= 0 || m.Height <= 0 || m.Width > math.MaxInt32/m.Height/3 || len(m.RGB) != m.Width*m.Height*3):
		return fmt.Errorf("%w: image %d is %d×%d with %d bytes of RGB; want width × height × 3", llm.ErrInvalidInput, i, m.Width, m.Height, len(m.RGB))
	case m.Kind == llm.MediaImage && max(m.Width, m.Height) > maxImageSide:
		return fmt.Errorf("%w: image %d is %d×%d; the engine takes images up to %d pixels a side (scale it down)", llm.ErrInvalidInput, i, m.Width, m.Height, maxImageSide)
	case m.Kind == llm.MediaAudio && (len(m.PCM) == 0 || len(m.PCM)%4 != 0):
		return fmt.Errorf("%w: audio clip %d has %d bytes of PCM; want a whole, non-zero number of float32 samples", llm.ErrInvalidInput, i, len(m.PCM))
	}
	return nil
}

// maxImageSide is the longest image side the engine hands to mtmd. LLaVA-style projectors pad
// an image to a square of its longer side first (3 × side² bytes, in a C int): a 3×100000
// strip, 900 KB of pixels, overflowed it and aborted the worker, and a 1×25000 one still asked
// for 1.9 GB. 8192 takes 8K UHD (the core's largest image) and bounds that square to 200 MB.
const maxImageSide = 8192

// appendMedia runs media i through the projector and appends what it became to prompt: the
// text chunks' tokens (mtmd's begin/end-of-image tokens), and pseudo tokens for each media
// chunk's positions.
func (e *Engine) appendMedia(prompt []int, m *promptMedia, i int, media *llm.Media) ([]int, error) {
	hash := media.Hash
	if hash == "" {
		hash = contentHash(media)
	}
	e.modelMu.RLock()
	defer e.modelMu.RUnlock()
	if e.closed {
		return nil, errClosed
	}
	var chunks mtmdChunks
	var err error
	if media.Kind == llm.MediaImage {
		chunks, err = e.proj.ctx.tokenizeImage(media.RGB, media.Width, media.Height, hash)
	} else {
		chunks, err = e.proj.ctx.tokenizeAudio(samples(media.PCM), hash)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: media %d (%s): %v", llm.ErrInvalidInput, i, media.Kind, err)
	}
	m.add(chunks)
	for c := range chunks.len() {
		ch := chunks.at(c)
		if ch.kind() == chunkText {
			prompt = append(prompt, ch.textTokens()...)
			continue
		}
		n := ch.count()
		switch {
		case n == 0:
			continue
		case ch.positions() != n:
			return nil, fmt.Errorf("%w: media %d takes %d positions for %d embeddings; this engine places one embedding per position", llm.ErrUnsupportedInput, i, ch.positions(), n)
		case e.proj.nonCausal && n > e.batchSize:
			return nil, fmt.Errorf("%w: media %d takes %d positions, which this projector needs in one batch, and the batch holds %d; load the model with a larger batch", llm.ErrUnsupportedInput, i, n, e.batchSize)
		}
		kind := llm.MediaImage
		if ch.kind() == chunkAudio {
			kind = llm.MediaAudio
		}
		m.spans = append(m.spans, mediaSpan{start: len(prompt), n: n, kind: kind, chunk: ch})
		base := pseudoBase(hash, c)
		for k := range n {
			prompt = append(prompt, pseudoToken(base, k))
		}
	}
	return prompt, nil
}

// pseudoBase seeds the pseudo tokens of chunk c of the content with hash.
func pseudoBase(hash string, c int) uint64 {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/%d", hash, c))
	return binary.LittleEndian.Uint64(sum[:8])
}

// pseudoToken is the token id held for position k of a media chunk: negative (never a
// vocabulary id) and within int32 (the disk cache stores ids as int32). Two different chunks
// agree on a position by chance with probability 2^-31, and a prefix match needs every
// position of the chunk to agree.
func pseudoToken(base uint64, k int) int {
	x := base + uint64(k)*0x9e3779b97f4a7c15 // splitmix64
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	x ^= x >> 31
	return -1 - int(x%(math.MaxInt32-1))
}

// contentHash identifies media the core sent without a hash: its kind, shape and data.
func contentHash(m *llm.Media) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s %d %d\n", m.Kind, m.Width, m.Height)
	h.Write(m.RGB)
	h.Write(m.PCM)
	return hex.EncodeToString(h.Sum(nil))
}

// samples decodes little-endian float32 PCM (a copy: the bytes need not be aligned), as the
// core's decoders make it: NaN is silence and the rest is clipped to [-1, 1]. A request that
// reached the worker with others (straight over its socket) would otherwise turn every logit
// NaN, which the engine reports as a broken model.
func samples(pcm []byte) []float32 {
	out := make([]float32, len(pcm)/4)
	for i := range out {
		v := math.Float32frombits(binary.LittleEndian.Uint32(pcm[4*i:]))
		if v != v {
			v = 0
		}
		out[i] = max(-1, min(1, v))
	}
	return out
}
