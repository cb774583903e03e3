package llamacpp

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/ollama/ollama/llama"

	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/llm"
)

// Images and audio (llm.Request.Media) go through the model's projector (Options.ProjectorPath,
// llama.cpp's mtmd): Generate splits the prompt at the request's marker, tokenizes the text
// pieces and has mtmd turn each image or clip into chunks (media_cgo.go). A media chunk's n
// positions sit in the job's prompt as pseudo tokens, negative ints derived from the content's
// hash, so the prefix cache (lanes, copies, the disk) matches a re-sent image like text. The
// loop evaluates a chunk whole (evalMedia): its text prefill stops at the chunk, and a common
// prefix that ends inside one is rounded down to its start.

// projector is the loaded multimodal projector.
type projector struct {
	ctx  mtmdContext
	path string
	// identity is the file's path, size and mtime: a prefix computed with another projector
	// holds other embeddings under the same pseudo tokens, so the disk cache keys on it.
	identity string
	// width is the floats per position of the model's input embeddings.
	width int
	// nonCausal says the chunk's positions attend to each other both ways (Gemma 3).
	nonCausal bool
	// refuse says, per kind, why the engine does not take it; "" when it does.
	refuse map[string]string
	// batch carries embedding rows (llama.cpp batches hold tokens or embeddings, not both).
	batch *llama.Batch
}

// loadProjector loads opts.ProjectorPath beside the model; a file that is not a projector,
// or one made for another model (its output width is not the model's), fails with an error
// naming both files that wraps llm.ErrInvalidInput.
func (e *Engine) loadProjector(opts Options, onGPU bool) error {
	if opts.ProjectorPath == "" {
		return nil
	}
	path, model := opts.ProjectorPath, opts.ModelPath
	unfit := func(format string, args ...any) error {
		return fmt.Errorf("%w: the projector %s does not fit the model %s: %s", llm.ErrInvalidInput, path, model, fmt.Sprintf(format, args...))
	}
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%w: load the projector for the model %s: %v", llm.ErrInvalidInput, model, err)
	}
	// llama.cpp aborts the process on some malformed files; the strict reader refuses them first.
	f, err := gguf.ReadFile(path)
	if err != nil {
		return unfit("%v", err)
	}
	if arch := f.Architecture(); arch != "clip" {
		return unfit("it is not a multimodal projector (its general.architecture is %q; a projector's is \"clip\")", arch)
	}
	ctx, why := openMtmd(path, e.model, onGPU, opts.Threads)
	if ctx.p == nil {
		if why == "" {
			why = "llama.cpp could not load it (see the log above)"
		}
		return unfit("%s", why)
	}
	width := inputWidth(e.model)
	batch, err := llama.NewBatch(opts.BatchSize, 1, width)
	if err != nil {
		ctx.free()
		return fmt.Errorf("allocate the projector's batch: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	p := &projector{ctx: ctx, path: path, width: width, nonCausal: ctx.nonCausal(), batch: batch,
		identity: fmt.Sprintf("mmproj=%s size=%d mtime=%d", abs, st.Size(), st.ModTime().UnixNano()),
		refuse:   map[string]string{}}
	const mrope = "its projector places positions in several dimensions (M-RoPE, the Qwen2-VL family), which this engine's linear positions cannot follow"
	switch {
	case !ctx.vision():
		p.refuse[llm.MediaImage] = "its projector has no vision encoder"
	case ctx.mrope():
		p.refuse[llm.MediaImage] = mrope
	}
	switch rate := ctx.audioRate(); {
	case !ctx.audio():
		p.refuse[llm.MediaAudio] = "its projector has no audio encoder"
	case ctx.mrope():
		p.refuse[llm.MediaAudio] = mrope
	case rate != llm.AudioSampleRate:
		p.refuse[llm.MediaAudio] = fmt.Sprintf("its audio encoder takes %d Hz and the engine sends %d Hz", rate, llm.AudioSampleRate)
		fmt.Fprintf(os.Stderr, "superfluid worker: the projector %s takes audio at %d Hz, not %d Hz: audio input is off\n", path, rate, llm.AudioSampleRate)
	}
	e.proj = p
	e.info.Projector = path
	e.info.Vision = p.refuse[llm.MediaImage] == ""
	e.info.Audio = p.refuse[llm.MediaAudio] == ""
	return nil
}

// free releases the projector; the loop has stopped.
func (p *projector) free() {
	if p == nil {
		return
	}
	p.batch.Free()
	p.ctx.free()
}

// mediaSpan is one media chunk of a prompt: n positions from start.
type mediaSpan struct {
	start, n int
	kind     string
	chunk    mtmdChunk
}

// promptMedia is what one job's media became: the chunk lists (freed once, by whichever of
// the request goroutine and the loop lets go last) and where their chunks sit in the prompt.
type promptMedia struct {
	spans []mediaSpan // in prompt order
	lists []mtmdChunks
	refs  atomic.Int32
	live  *atomic.Int64 // the engine's count of chunk lists not yet freed
}

func (m *promptMedia) add(l mtmdChunks) {
	m.lists = append(m.lists, l)
	m.live.Add(1)
}

func (m *promptMedia) free() {
	for _, l := range m.lists {
		l.free()
		m.live.Add(-1)
	}
	m.lists, m.spans = nil, nil
}

// release lets go of one hold; the last frees the chunks. Nil-safe.
func (m *promptMedia) release() {
	if m != nil && m.refs.Add(-1) == 0 {
		m.free()
	}
}

// roundDown is c, or the start of the chunk c falls inside: a chunk is cached whole or not at
// all. Nil-safe.
func (m *promptMedia) roundDown(c int) int {
	if m == nil {
		return c
	}
	for _, s := range m.spans {
		if c > s.start && c < s.start+s.n {
			return s.start
		}
	}
	return c
}

// textEnd is where a text prefill from position from may stop, at most to: before the first
// chunk it would reach into. Nil-safe.
func (m *promptMedia) textEnd(from, to int) int {
	if m == nil {
		return to
	}
	for _, s := range m.spans {
		if s.start >= from && s.start < to {
			return s.start
		}
	}
	return to
}

// spanAt is the chunk starting at position pos, or nil.
func (m *promptMedia) spanAt(pos int) *mediaSpan {
	if m == nil {
		return nil
	}
	for i := range m.spans {
		if m.spans[i].start == pos {
			return &m.spans[i]
		}
	}
	return nil
}

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
	if n := len(prompt); n > 0 && prompt[n-1] < 0 {
		// The logits of the first reply token come from the last prompt position: a text token.
		m.free()
		return nil, nil, fmt.Errorf("%w: the prompt ends with an image or clip; a prompt with media must end with text (the chat template's assistant turn)", llm.ErrInvalidInput)
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
	case m.Kind == llm.MediaAudio && (len(m.PCM) == 0 || len(m.PCM)%4 != 0):
		return fmt.Errorf("%w: audio clip %d has %d bytes of PCM; want a whole, non-zero number of float32 samples", llm.ErrInvalidInput, i, len(m.PCM))
	}
	return nil
}

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

// samples decodes little-endian float32 PCM (a copy: the bytes need not be aligned).
func samples(pcm []byte) []float32 {
	out := make([]float32, len(pcm)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(pcm[4*i:]))
	}
	return out
}
