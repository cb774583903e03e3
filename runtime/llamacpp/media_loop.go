package llamacpp

import (
	"fmt"

	"github.com/superfluid/superfluid/runtime/llm"
)

// evalMedia evaluates one media chunk per tick, after the tick's text batch (so decoding lanes
// have their tokens out before the encoder runs): that of the first lane, after the one served
// last, whose prefill has reached a chunk's start. One chunk per tick bounds how long the
// other lanes wait for their next token.
func (e *Engine) evalMedia() {
	if e.proj == nil || e.failure != nil {
		return
	}
	n := len(e.lanes)
	for k := range n {
		l := e.lanes[(e.mediaTurn+1+k)%n]
		if l.job == nil || !l.prefilling() {
			continue
		}
		if s := l.job.media.spanAt(len(l.cache)); s != nil {
			e.mediaTurn = l.id
			e.evalChunk(l, s)
			return
		}
	}
}

// evalChunk encodes chunk s of lane l's prompt and decodes its embeddings at its positions in
// the lane's sequence; the lane's cache then holds the chunk's pseudo tokens. An encoder
// failure ends the job alone (nothing was decoded); a decode failure is handled as in tick.
func (e *Engine) evalChunk(l *lane, s *mediaSpan) {
	j := l.job
	embd, err := e.proj.ctx.encode(s.chunk, e.proj.width)
	if err != nil {
		j.out.finish(fmt.Errorf("%w: encode the prompt's %s at position %d: %v", llm.ErrEngineFailure, s.kind, s.start, err))
		l.job = nil
		return
	}
	// The chunk's KV is computed under the lane's adapters, like its text (lora_tick.go).
	e.applyAdapters(j.adapters)
	last := s.start+s.n == len(j.prompt)
	row, err := e.decodeEmbeddings(l, embd, s, last)
	e.lora.decoded = e.lora.embeddings
	if err != nil {
		if fatalDecode(err) {
			e.fail(fmt.Errorf("%w: llama_decode of an %s: %v; the worker exits and the next request starts a new one", llm.ErrEngineFailure, s.kind, err))
			return
		}
		e.failAll(fmt.Errorf("%w: llama_decode of an %s: %v", llm.ErrEngineFailure, s.kind, err))
		return
	}
	l.cache = append(l.cache, j.prompt[s.start:s.start+s.n]...)
	e.stats.prefillComputed += s.n
	if last {
		// A prompt that ends with the clip (a lone user turn of text then an image, under the
		// fallback template): its first reply token comes from the clip's last row.
		e.sample(l, row)
	}
}

// decodeEmbeddings feeds the chunk's rows at positions s.start.. of lane l, at most a batch
// per llama_decode; a non-causal chunk fits one batch (mediaPrompt refuses it otherwise). With
// logits, the chunk's last row has them, at the returned row of the last batch.
func (e *Engine) decodeEmbeddings(l *lane, embd []float32, s *mediaSpan, logits bool) (int, error) {
	w := e.proj.width
	if e.proj.nonCausal {
		setCausal(e.lctx, false)
		defer setCausal(e.lctx, true)
	}
	b := e.proj.batch
	row := 0
	for off := 0; off < s.n; off += e.batchSize {
		b.Clear()
		for i := off; i < min(s.n, off+e.batchSize); i++ {
			row = i - off
			b.Add(0, embd[i*w:(i+1)*w], s.start+i, logits && i == s.n-1, l.id)
		}
		if err := e.decode(b); err != nil {
			return 0, err
		}
	}
	return row, nil
}
