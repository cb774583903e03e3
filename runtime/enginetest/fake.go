// Package enginetest is a deterministic fake llm.Engine for fast server tests: one token per
// byte, a scripted reply, no model file. It exercises the same stop handling as the real
// engine (llm.TextStream), the same request checks (sampling.Check) and the same logprobs
// bookkeeping, so dialect tests see realistic event streams. A prompt with media counts each
// clip as MediaTokens positions, and the last request (LastRequest) shows the media and
// adapters the core sent. NewEmbedder makes a fake embedding model (or reranker) instead,
// which embeds and refuses generation.
package enginetest

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/sampling"
)

// Engine is the fake. The zero value is not usable; call New.
type Engine struct {
	// Reply is the text every generation produces, one token per byte.
	Reply string
	// TokenDelay is slept before each token, to test streaming and cancellation.
	TokenDelay time.Duration
	// Fail, when set, is returned by Generate after FailAfter tokens.
	Fail      error
	FailAfter int
	// Lanes, when set, runs at most that many generations at once (Info().Parallel reports
	// it); the others wait, interactive before background (llm.Request.Priority), in arrival
	// order within each, as the real engine's queue does. 0 runs every generation at once.
	Lanes int
	// Speculative is the engine's default speculation mode (the model's setting; "" is off). A
	// generation in which a mode other than off is in effect (the request's, else this) reports
	// Done.Spec: every other generated token counted as drafted and kept, as Spec says.
	Speculative string
	// SpecNote, when set, is the note of every Done.Spec (speculation not run as asked).
	SpecNote string
	// RestoredTokens and CacheMiss are what every Started and Done report, as an engine with a
	// disk prefix cache does.
	RestoredTokens int
	CacheMiss      string

	info llm.ModelInfo

	mu       sync.Mutex
	requests []llm.Request
	busy     int       // generations holding a lane (Lanes > 0)
	waiting  []*waiter // generations waiting for one, in arrival order
	embeds   []llm.EmbedRequest
}

// New returns a fake with a context window of ctx tokens.
func New(ctx int, reply string) *Engine {
	return &Engine{
		Reply: reply,
		info: llm.ModelInfo{
			Path: "fake.gguf", Architecture: "fake", ContextLength: ctx, TrainContextLength: ctx,
			VocabSize: 258, Parallel: 1, Threads: 1, Runtime: "fake", AddBOS: true,
		},
	}
}

// BOS is the fake's begin-of-sequence token id; bytes are ids 2..257.
const BOS = 1

// Info describes the fake model.
func (e *Engine) Info() llm.ModelInfo {
	info := e.info
	if e.Lanes > 0 {
		info.Parallel = e.Lanes
	}
	return info
}

// Tokenize maps each byte b to token b+2, with BOS first when addSpecial.
func (e *Engine) Tokenize(_ context.Context, text string, addSpecial, _ bool) ([]int, error) {
	var tokens []int
	if addSpecial {
		tokens = append(tokens, BOS)
	}
	for i := 0; i < len(text); i++ {
		tokens = append(tokens, int(text[i])+2)
	}
	return tokens, nil
}

// Requests returns the requests Generate has seen, in the order they got a lane.
func (e *Engine) Requests() []llm.Request {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]llm.Request(nil), e.requests...)
}

// Generate streams Reply byte by byte, honouring MaxTokens, Stop and the context window. It
// refuses what the real engine refuses (sampling.Check: top_logprobs outside 0-20, logit_bias
// outside the 258-token vocabulary or not finite) with llm.ErrInvalidInput; the request still
// counts as seen (Requests). With logprobs asked for (sampling.WantsLogprobs), every event
// carries the logprobs of the tokens it counts, as Logprob describes them.
func (e *Engine) Generate(ctx context.Context, req *llm.Request, emit func(llm.Event) error) error {
	release, err := e.lane(ctx, req.Priority)
	if err != nil {
		return err
	}
	defer release()
	e.mu.Lock()
	e.requests = append(e.requests, *req) // in the order they got a lane
	e.mu.Unlock()
	if e.info.Embedding != nil {
		return fmt.Errorf("%w: %s is an embedding model; it does not generate", llm.ErrUnsupportedModel, e.info.Path)
	}
	if err := sampling.Check(req, e.info.VocabSize); err != nil {
		return err
	}
	wantLogprobs := sampling.WantsLogprobs(req)
	var lps []llm.TokenLogprob // those of the pending tokens
	take := func() []llm.TokenLogprob {
		out := lps
		lps = nil
		return out
	}
	prompt := req.Tokens
	if len(req.Media) > 0 {
		if prompt, err = e.mediaPrompt(ctx, req); err != nil {
			return err
		}
	} else if len(prompt) == 0 {
		prompt, _ = e.Tokenize(ctx, req.Prompt, req.AddSpecial, true)
	}
	if len(prompt) > e.info.ContextLength {
		return &llm.ContextLengthError{PromptTokens: len(prompt), ContextLength: e.info.ContextLength}
	}
	limit := e.info.ContextLength - len(prompt)
	if req.MaxTokens > 0 && req.MaxTokens < limit {
		limit = req.MaxTokens
	}
	if err := emit(llm.Event{Started: &llm.Started{PromptTokens: len(prompt), RestoredTokens: e.RestoredTokens, CacheMiss: e.CacheMiss}}); err != nil {
		return err
	}
	text := llm.NewTextStream(req.Stop)
	reason, generated, expired := llm.FinishStop, 0, false
	pending := 0 // tokens whose text the stream still holds back, as the real engine counts them
	for i := 0; i < len(e.Reply); i++ {
		if generated >= limit {
			reason = llm.FinishLength
			break
		}
		if !req.Deadline.IsZero() && time.Now().After(req.Deadline) {
			reason, expired = llm.FinishLength, true
			break
		}
		if e.Fail != nil && generated >= e.FailAfter {
			return e.Fail
		}
		if e.TokenDelay > 0 {
			select {
			case <-time.After(e.TokenDelay):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		generated++
		pending++
		if wantLogprobs {
			lps = append(lps, Logprob(e.Reply[i], req.TopLogprobs))
		}
		out, stopped := text.Push([]byte{e.Reply[i]})
		if out != "" {
			if err := emit(llm.Event{Text: out, Tokens: pending, Logprobs: take()}); err != nil {
				return err
			}
			pending = 0
		}
		if stopped {
			break
		}
	}
	if rest := text.Flush(); rest != "" || pending > 0 {
		if err := emit(llm.Event{Text: rest, Tokens: pending, Logprobs: take()}); err != nil {
			return err
		}
	}
	return emit(llm.Event{Done: &llm.Done{
		FinishReason:   reason,
		StopSequence:   text.StopSequence(),
		Usage:          llm.Usage{PromptTokens: len(prompt), CompletionTokens: generated},
		Expired:        expired,
		Spec:           e.spec(req, generated),
		RestoredTokens: e.RestoredTokens,
		CacheMiss:      e.CacheMiss,
	}})
}

// spec is the fake's speculation stats for a generation of n tokens: nil when no mode is in
// effect; else half the tokens (rounded down) proposed, and of them every other one (rounded
// up) accepted, so a test can tell the counts apart.
func (e *Engine) spec(req *llm.Request, n int) *llm.SpecStats {
	mode := e.Speculative
	if req.Speculative != nil && req.Speculative.Mode != "" {
		mode = req.Speculative.Mode
	}
	if mode == "" || mode == llm.SpecOff {
		return nil
	}
	proposed := n / 2
	return &llm.SpecStats{Mode: mode, Proposed: proposed, Accepted: (proposed + 1) / 2, Note: e.SpecNote}
}

// Logprob is the fake's logprob for the reply byte b with top alternatives. The fake is a model
// sure of its reply, whatever the sampler settings: b is the most likely token, with
// probability 1/2 (logprob -ln 2), and comes first in Top; the k-th alternative after it (k =
// 1, 2, ...) has probability 2^-(k+1) and is the k-th of the bytes 'a', 'b', 'c', ... other than
// b. Token is string(b) (not valid UTF-8 for b >= 0x80, like a real byte-fallback token).
func Logprob(b byte, top int) llm.TokenLogprob {
	tok := string([]byte{b})
	lp := llm.TokenLogprob{Token: tok, Bytes: []byte{b}, Logprob: -math.Ln2}
	if top <= 0 {
		return lp
	}
	lp.Top = make([]llm.TopLogprob, 0, top)
	lp.Top = append(lp.Top, llm.TopLogprob{Token: tok, Bytes: []byte{b}, Logprob: lp.Logprob})
	for alt := byte('a'); len(lp.Top) < top; alt++ {
		if alt == b {
			continue
		}
		k := len(lp.Top)
		lp.Top = append(lp.Top, llm.TopLogprob{Token: string([]byte{alt}), Bytes: []byte{alt}, Logprob: -float64(k+1) * math.Ln2})
	}
	return lp
}

// Close does nothing.
func (e *Engine) Close() error { return nil }
