package llamacpp

import (
	"fmt"
	"os"
	"path/filepath"
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
	// Sizes mtmd would assert on as it warms the encoder up (a zero patch, say) kill the worker.
	if _, err := f.Projector(); err != nil {
		return unfit("%v", err)
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
