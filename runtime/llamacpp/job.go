package llamacpp

import (
	"context"
	"sync"
	"time"

	"github.com/ollama/ollama/llama"

	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/sampling"
)

// job is one generation as the loop sees it.
type job struct {
	ctx     context.Context
	req     *llm.Request
	prompt  []int
	sampler *sampling.Sampler
	text    *llm.TextStream
	out     *mailbox
	// grammar constrains the output (a JSON format); nil for free text. scratch is its
	// reusable candidate buffer.
	grammar *llama.Grammar
	scratch []llama.TokenData
	masked  []float32 // the logits the grammar allows, for a second draw

	// logprobs says the request wants log probabilities (sampling.WantsLogprobs), top how
	// many alternatives; lps holds those of the tokens counted in pending, to go out with
	// them. dist and ranked are reused from token to token.
	logprobs bool
	top      int
	lps      []llm.TokenLogprob
	dist     sampling.LogSoftmax
	ranked   []sampling.Ranked

	maxTokens int
	generated int
	pending   int // tokens sampled but not yet reflected in an emitted event
	cached    int
	lane      int
	expired   bool
	// placed reports whether assign has put the job on a lane (it leaves the queue).
	placed bool
	// shared is how many leading prompt tokens another cache partition's lanes may serve: those
	// the prompt has in common with llm.Request.SharedPrefix (0 without one).
	shared int
	// kv is what the cache did for the job (restored tokens, miss reason).
	kv kvNote
	// media is the prompt's images and clips (media.go); nil for a text prompt.
	media *promptMedia
	// adapters is the LoRA set the job runs with (nil: the bare model); partition is its
	// cache partition: the request's, and the set's (adapterSet.partition).
	adapters  *adapterSet
	partition string

	submitted, started, firstToken time.Time
}

func newJob(ctx context.Context, req *llm.Request, prompt []int, e *Engine) *job {
	maxTokens := e.info.ContextLength - len(prompt)
	if req.MaxTokens > 0 && req.MaxTokens < maxTokens {
		maxTokens = req.MaxTokens
	}
	return &job{
		ctx:       ctx,
		req:       req,
		prompt:    prompt,
		sampler:   sampling.New(req.Sampling, e.info.VocabSize, e.eog, req.IgnoreEOS),
		text:      llm.NewTextStream(req.Stop),
		out:       newMailbox(),
		maxTokens: maxTokens,
		partition: req.CachePartition,
		submitted: time.Now(),
		logprobs:  sampling.WantsLogprobs(req),
		top:       req.TopLogprobs,
	}
}

// takeLogprobs hands the logprobs of the pending tokens to the event that counts them.
func (j *job) takeLogprobs() []llm.TokenLogprob {
	lps := j.lps
	j.lps = nil // the event owns the slice now
	return lps
}

// mailbox hands events from the loop to the request goroutine without ever blocking the loop
// on a slow client.
type mailbox struct {
	mu       sync.Mutex
	events   []llm.Event
	finished bool
	err      error
	notify   chan struct{}
	// end is closed when the job finishes, so a reader pacing its events stops waiting.
	end chan struct{}
	// onEnd, when set, runs once as the job finishes (the loop lets go of the job's media).
	onEnd func()
}

func newMailbox() *mailbox { return &mailbox{notify: make(chan struct{}, 1), end: make(chan struct{})} }

func (m *mailbox) put(ev llm.Event) {
	m.mu.Lock()
	m.events = append(m.events, ev)
	m.mu.Unlock()
	m.wake()
}

func (m *mailbox) finish(err error) {
	m.mu.Lock()
	first := !m.finished
	if first {
		close(m.end)
	}
	m.finished, m.err = true, err
	m.mu.Unlock()
	m.wake()
	if first && m.onEnd != nil {
		m.onEnd()
	}
}

// ended reports whether the job has finished (its last events may still wait to be taken).
func (m *mailbox) ended() bool {
	select {
	case <-m.end:
		return true
	default:
		return false
	}
}

func (m *mailbox) wake() {
	select {
	case m.notify <- struct{}{}:
	default:
	}
}

// take waits for events or the end and returns what is there. Text pieces that piled up
// while the reader was busy are merged into one event, so a slow transport costs fewer, larger
// chunks instead of falling further behind.
func (m *mailbox) take(ctx context.Context) ([]llm.Event, bool, error) {
	for {
		m.mu.Lock()
		events, finished, err := m.events, m.finished, m.err
		m.events = nil
		m.mu.Unlock()
		if len(events) > 0 || finished {
			return mergeText(events), finished, err
		}
		select {
		case <-m.notify:
		case <-ctx.Done():
			return nil, false, nil
		}
	}
}

type modelMeta struct {
	architecture string
	trainContext int
	// embeds says the model embeds (gguf.File.Embedding): it gets the embedding loop.
	embeds bool
	// chars guards a SentencePiece tokenizer (fallback.go).
	chars spmChars
}

func readMeta(path string) (modelMeta, error) {
	f, err := gguf.ReadFile(path)
	if err != nil {
		return modelMeta{}, err
	}
	_, embeds := f.Embedding()
	return modelMeta{architecture: f.Architecture(), trainContext: f.ContextLength(), embeds: embeds, chars: newSPMChars(f)}, nil
}

func mergeText(events []llm.Event) []llm.Event {
	out := events[:0]
	for _, ev := range events {
		if n := len(out); n > 0 && isText(out[n-1]) && isText(ev) {
			out[n-1].Text += ev.Text
			out[n-1].Tokens += ev.Tokens
			// Each event's slice is its own (takeLogprobs), so appending to it is safe.
			out[n-1].Logprobs = append(out[n-1].Logprobs, ev.Logprobs...)
			continue
		}
		out = append(out, ev)
	}
	return out
}

func isText(ev llm.Event) bool { return ev.Started == nil && ev.Done == nil }

func (j *job) expiredAt(now time.Time) bool {
	return !j.req.Deadline.IsZero() && now.After(j.req.Deadline)
}
