package llamacpp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ollama/ollama/llama"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/sampling"
)

// Options configure one loaded model.
type Options struct {
	ModelPath string
	// ContextLength is the window of one lane; 0 picks the model's trained window capped at 4096.
	ContextLength int
	// Parallel is the number of lanes (sequences decoded together); 0 means 4. An embedding
	// model runs one sequence at a time, whatever it says.
	Parallel int
	// Threads is the CPU thread count; 0 picks one from the model size.
	Threads int
	// BatchSize is the most tokens one tick sends to llama.cpp; 0 means 512.
	BatchSize int
	// VocabOnly loads only the vocabulary, for a worker that tokenizes: no weights, no context,
	// a fraction of the memory. Generate then fails, Slots reports no lanes, and the context
	// settings are ignored.
	VocabOnly bool
	// GPULayers offloads that many layers to the GPU devices of the runtime the worker loaded
	// (OLLAMA_LIBRARY_PATH); 0 keeps the model on the CPU. Runtime names that runtime.
	GPULayers int
	Runtime   string
	// Speculative is the default speculation mode (llm.SpecOff, SpecNgram, SpecDraft) of
	// requests that name none; "" means llm.SpecOff. DraftTokens is the default most tokens
	// drafted per step (0: the engine's own default).
	Speculative string
	DraftTokens int
	// DraftModelPath is a small model with the target's vocabulary, loaded in its own context
	// beside it to draft tokens (SpecDraft); "" loads none.
	DraftModelPath string
	// KVDir is where lanes' prefixes are saved when they would be lost (unload, eviction,
	// shutdown) and restored from; "" keeps the prefix cache in memory only. KVDiskMax caps the
	// folder's size (least recently used files go first); 0 means DefaultKVDiskMax.
	KVDir     string
	KVDiskMax int64
	// FlashAttention is "on", "off" or "auto" ("": auto, the engine picks per model and
	// runtime what measured fastest).
	FlashAttention string
	// ProjectorPath is a multimodal projector (mmproj GGUF) for the model: with it the engine
	// takes Request.Media (media.go). A vocab-only or embedding engine ignores it.
	ProjectorPath string
}

// DefaultKVDiskMax is the disk prefix cache's size cap when Options names none.
const DefaultKVDiskMax = 4 << 30

// Engine is a loaded model with its context and scheduling loop. It implements llm.Engine.
type Engine struct {
	model *llama.Model
	lctx  *llama.Context
	batch *llama.Batch
	info  llm.ModelInfo
	eog   []int

	submit    chan *job
	snapshots chan chan llm.Slots
	quit      chan struct{}
	done      chan struct{}

	// vocabOnly says only the vocabulary is loaded: no context, batch or loop.
	vocabOnly bool
	// chars refuses texts the SentencePiece tokenizer would take minutes over (fallback.go).
	chars spmChars
	// decode is lctx.Decode; tests replace it to play llama.cpp's failures.
	decode func(*llama.Batch) error
	// now and after are the clock of the gap between events (time.Now and time.After); tests
	// replace them to see when Generate waits.
	now   func() time.Time
	after func(time.Duration) <-chan time.Time
	// failed is closed, with failure set, once a fatal llama_decode has left the context in an
	// unknown state (see fail); the worker process must then exit.
	failed   chan struct{}
	failure  error
	failOnce sync.Once

	lanes     []*lane
	queue     []*job
	batchSize int
	stats     stats
	// vocabulary is built on the first constrained request.
	vocabulary vocabulary
	// embeds holds the embedding loop's state; nil for a generation model (see embed.go).
	embeds *embedState
	spec   specState // speculative decoding (spec.go)
	clock  uint64    // advances on every lane assignment; orders lanes by recent use

	closeOnce sync.Once
	// modelMu keeps Close from freeing the model under a caller outside the loop (Tokenize,
	// Piece), which holds it for reading; closed is set under it once the loop has stopped.
	modelMu sync.RWMutex
	closed  bool

	// disk saves and restores prefixes (Options.KVDir) and keeps miss reasons (kvdisk.go).
	disk *kvDisk

	// proj is the multimodal projector, nil without one (media.go); mediaTurn is the lane
	// whose media chunk the loop evaluated last, mediaLive the chunk lists not yet freed.
	proj      *projector
	mediaTurn int
	mediaLive atomic.Int64
	// lora is the LoRA adapters loaded for the model (lora.go).
	lora loraState
}

var backendOnce sync.Once

// Load reads the model and creates its context. It fails with a message naming the file when
// llama.cpp cannot load it.
func Load(opts Options) (*Engine, error) {
	if opts.Parallel <= 0 {
		opts.Parallel = 4
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 512
	}
	st, err := os.Stat(opts.ModelPath)
	if err != nil {
		return nil, fmt.Errorf("load model: %w", err)
	}
	if opts.Threads <= 0 {
		opts.Threads = threadsFor(st.Size())
	}
	if err := checkSpecMode(opts.Speculative); err != nil {
		return nil, fmt.Errorf("speculative: %w", err)
	}
	backendOnce.Do(llama.BackendInit)

	// llama.cpp aborts the process on some malformed files; the strict reader refuses them first.
	meta, err := readMeta(opts.ModelPath)
	if err != nil {
		return nil, err
	}
	runtimeName := "llamacpp-cpu"
	modelParams := llama.ModelParams{UseMmap: true, VocabOnly: opts.VocabOnly}
	onGPU := false
	if opts.GPULayers > 0 && !opts.VocabOnly {
		// Offload only when the runtime brought a device; otherwise say so and run on the CPU.
		if gpus := llama.EnumerateGPUs(); len(gpus) > 0 {
			modelParams.NumGpuLayers = opts.GPULayers
			runtimeName = "llamacpp-" + opts.Runtime
			onGPU = true
			fmt.Fprintf(os.Stderr, "superfluid worker: offloading up to %d layers to %s device %s\n", opts.GPULayers, gpus[0].Library, gpus[0].ID)
		} else {
			fmt.Fprintf(os.Stderr, "superfluid worker: the %s runtime found no GPU device; running on the CPU\n", opts.Runtime)
		}
	}
	flash, flashOn, err := flashAttentionFor(opts.FlashAttention, onGPU, meta.embeds)
	if err != nil {
		return nil, err
	}
	modelParams.UseMmap = mmapFor(opts.ModelPath, onGPU, opts.VocabOnly)
	model, err := llama.LoadModelFromFile(opts.ModelPath, modelParams)
	if err != nil {
		return nil, fmt.Errorf("load model %s: llama.cpp could not read it (see the log above for why)", opts.ModelPath)
	}
	if opts.VocabOnly {
		return loadVocab(opts, model, meta), nil
	}
	if opts.ContextLength <= 0 {
		opts.ContextLength = defaultContext(meta.trainContext)
	}
	if meta.embeds {
		// One sequence at a time, a whole window per batch (see embed.go).
		opts.ContextLength, opts.BatchSize = embeddingWindow(opts.ContextLength, meta.trainContext)
		opts.Parallel = 1
	}
	// Without a unified KV cache llama.cpp splits n_ctx evenly between sequences, so the
	// context holds one full window per lane.
	params := llama.NewContextParams(opts.ContextLength*opts.Parallel, opts.BatchSize, opts.Parallel,
		opts.Threads, flash, "")
	lctx, err := llama.NewContextWithModel(model, params)
	if err != nil {
		llama.FreeModel(model)
		return nil, fmt.Errorf("create context for %s (ctx %d × %d lanes): %w", opts.ModelPath, opts.ContextLength, opts.Parallel, err)
	}
	batch, err := llama.NewBatch(opts.BatchSize, opts.Parallel, 0)
	if err != nil {
		llama.FreeModel(model)
		return nil, fmt.Errorf("allocate batch: %w", err)
	}
	e := &Engine{
		model: model,
		lctx:  lctx,
		batch: batch,
		info: llm.ModelInfo{
			Path:               opts.ModelPath,
			Architecture:       meta.architecture,
			ContextLength:      opts.ContextLength,
			TrainContextLength: meta.trainContext,
			VocabSize:          model.NumVocab(),
			Parallel:           opts.Parallel,
			Threads:            opts.Threads,
			Runtime:            runtimeName,
			AddBOS:             model.AddBOSToken(),
			FlashAttention:     flashOn,
		},
		submit:    make(chan *job),
		snapshots: make(chan chan llm.Slots),
		quit:      make(chan struct{}),
		done:      make(chan struct{}),
		failed:    make(chan struct{}),
		batchSize: opts.BatchSize,
		chars:     meta.chars,
	}
	e.lora.init()
	if err := e.loadSpec(opts, modelParams, meta.embeds); err != nil {
		batch.Free()
		llama.FreeModel(model)
		return nil, err
	}
	if !meta.embeds {
		if err := e.loadProjector(opts, onGPU); err != nil {
			e.spec.draft.close()
			batch.Free()
			llama.FreeModel(model)
			return nil, err
		}
	}
	e.decode = lctx.Decode
	e.now, e.after = time.Now, time.After
	e.eog, e.info.MaxTokenBytes = scanVocab(model)
	e.lanes = make([]*lane, opts.Parallel)
	for i := range e.lanes {
		e.lanes[i] = &lane{id: i}
	}
	if meta.embeds {
		e.startEmbedding()
		return e, nil
	}
	e.disk = newKVDisk(opts, e)
	go e.loop()
	return e, nil
}

// loadVocab makes the engine of a vocab-only model: it tokenizes, and has nothing to run.
func loadVocab(opts Options, model *llama.Model, meta modelMeta) *Engine {
	e := &Engine{
		model:     model,
		vocabOnly: true,
		info: llm.ModelInfo{
			Path:               opts.ModelPath,
			Architecture:       meta.architecture,
			TrainContextLength: meta.trainContext,
			VocabSize:          model.NumVocab(),
			Runtime:            "llamacpp-vocab",
			AddBOS:             model.AddBOSToken(),
		},
		quit:   make(chan struct{}),
		done:   make(chan struct{}),
		failed: make(chan struct{}),
		chars:  meta.chars,
	}
	e.eog, e.info.MaxTokenBytes = scanVocab(model)
	close(e.done) // no loop to wait for on Close
	return e
}

// scanVocab returns the end-of-generation tokens and the length in bytes of the longest token
// text (ModelInfo.MaxTokenBytes).
func scanVocab(model *llama.Model) (eog []int, longest int) {
	for id := range model.NumVocab() {
		if model.TokenIsEog(id) {
			eog = append(eog, id)
		}
		longest = max(longest, len(model.TokenToPiece(id)))
	}
	return eog, longest
}

// threadsFor picks a thread count from the model size: tiny graphs are dominated by thread
// synchronisation (stories260K decodes 7× faster on one thread than two), big ones by math.
func threadsFor(modelBytes int64) int {
	if modelBytes < 64<<20 {
		return 1
	}
	return max(1, runtime.NumCPU())
}

func defaultContext(train int) int {
	if train <= 0 || train > 4096 {
		return 4096
	}
	return train
}

// Info describes the loaded model.
func (e *Engine) Info() llm.ModelInfo { return e.info }

// Tokenize returns the token ids of text.
func (e *Engine) Tokenize(ctx context.Context, text string, addSpecial, parseSpecial bool) ([]int, error) {
	if text == "" && !addSpecial {
		return []int{}, nil
	}
	if err := e.chars.check(text); err != nil {
		return nil, err
	}
	if err := checkCodepoints(text); err != nil {
		return nil, err
	}
	e.modelMu.RLock()
	defer e.modelMu.RUnlock()
	if e.closed {
		return nil, errClosed
	}
	// On a thread of our own with room for the pre-tokenizer's recursion (bigstack.go).
	return tokenizeOnStack(ctx, e.model, text, addSpecial, parseSpecial, stackFor(len(text)), nil)
}

// Piece returns the text of one token ("" once the engine is closed).
func (e *Engine) Piece(token int) string {
	e.modelMu.RLock()
	defer e.modelMu.RUnlock()
	if e.closed {
		return ""
	}
	return e.model.TokenToPiece(token)
}

// Generate runs one completion through a lane.
func (e *Engine) Generate(ctx context.Context, req *llm.Request, emit func(llm.Event) error) error {
	if e.vocabOnly {
		return fmt.Errorf("%w: %s is loaded for tokenizing only (vocab-only), not for generation", llm.ErrEngineFailure, e.info.Path)
	}
	if e.embeds != nil {
		return errEmbeddingOnly(e.info)
	}
	prompt, media, err := e.promptTokens(ctx, req)
	if err != nil {
		return err
	}
	// The request's hold on its media goes when Generate returns; the loop's when the job
	// ends, or here when the loop never got the job.
	submitted := false
	defer func() {
		if !submitted {
			media.release()
		}
		media.release()
	}()
	if len(prompt) == 0 {
		return fmt.Errorf("%w: the prompt is empty", llm.ErrInvalidInput)
	}
	if len(prompt) > e.info.ContextLength {
		return &llm.ContextLengthError{PromptTokens: len(prompt), ContextLength: e.info.ContextLength}
	}
	// top_logprobs outside 0-20 and logit_bias ids outside the vocabulary (or NaN/Inf
	// values) are refused; top_logprobs > 0 alone turns logprobs on (sampling.WantsLogprobs).
	if err := sampling.Check(req, e.info.VocabSize); err != nil {
		return err
	}
	if err := checkSpeculative(req); err != nil {
		return err
	}
	if req.TopLogprobs > 0 {
		e.vocab() // the alternatives' texts; built here, once, rather than on the loop
	}
	grammar, err := e.newGrammar(req)
	if err != nil {
		return err
	}
	adapters, err := e.adaptersFor(ctx, req)
	if err != nil {
		return err
	}
	defer e.releaseSet(adapters)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	j := newJob(ctx, req, prompt, e)
	if media != nil {
		j.media, j.out.onEnd = media, media.release
	}
	j.adapters, j.partition = adapters, adapters.partition(req.CachePartition)
	j.shared = e.sharedTokens(ctx, req, prompt)
	if grammar != nil {
		j.grammar = grammar
		defer grammar.Free()
	}
	select {
	case e.submit <- j:
		submitted = true
	case <-ctx.Done():
		return ctx.Err()
	case <-e.quit:
		return fmt.Errorf("%w: the engine is shutting down", llm.ErrEngineFailure)
	case <-e.failed:
		return e.failure
	}
	var lastText time.Time // when text last went out; zero until the first
	for {
		// A model faster than one token per eventGap (tiny models do thousands a second)
		// has its pieces grouped, so the per-event cost downstream (socket, SSE, client)
		// never slows it; at human-visible rates every token is its own event. The gap runs
		// between pieces of text only: the first text goes out as soon as it is sampled
		// (Started does not start the gap, so a cached prefill does not wait), and once the
		// reply is finished its last text and Done go out at once.
		if !lastText.IsZero() && !j.out.ended() {
			if wait := eventGap - e.now().Sub(lastText); wait > 0 {
				select {
				case <-e.after(wait):
				case <-j.out.end:
				case <-ctx.Done():
				}
			}
		}
		events, finished, jobErr := j.out.take(ctx)
		took := e.now()
		for _, ev := range events {
			if isText(ev) {
				lastText = took
			}
			if err := emit(ev); err != nil {
				cancel()
				return err
			}
		}
		if finished {
			return jobErr
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// eventGap is the shortest time between two events of one generation.
const eventGap = time.Millisecond

// promptTokens is the request's prompt as token ids, checked against the vocabulary, and its
// media (nil without).
func (e *Engine) promptTokens(ctx context.Context, req *llm.Request) ([]int, *promptMedia, error) {
	if len(req.Media) > 0 {
		return e.mediaPrompt(ctx, req)
	}
	if len(req.Tokens) > 0 {
		for _, t := range req.Tokens {
			if t < 0 || t >= e.info.VocabSize {
				return nil, nil, fmt.Errorf("%w: token id %d is outside the vocabulary (0-%d)", llm.ErrInvalidInput, t, e.info.VocabSize-1)
			}
		}
		return req.Tokens, nil, nil
	}
	prompt, err := e.Tokenize(ctx, req.Prompt, req.AddSpecial, true)
	if errors.Is(err, errClosed) {
		return nil, nil, err
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%w: tokenize prompt: %v", llm.ErrInvalidInput, err)
	}
	return prompt, nil, nil
}

// Close stops the loop and frees the model.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() {
		close(e.quit)
		<-e.done
		e.disk.close() // the lanes were saved as the loop stopped
		e.modelMu.Lock()
		e.closed = true
		e.modelMu.Unlock()
		if e.batch != nil {
			e.batch.Free()
		}
		e.closeAdapters()
		e.spec.draft.close()
		e.proj.free() // before the model it was made for; jobs' chunks do not need it to be freed
		llama.FreeModel(e.model)
	})
	return nil
}

var errShutdown = errors.New("engine closed")

var errClosed = fmt.Errorf("%w: the engine is closed", llm.ErrEngineFailure)
