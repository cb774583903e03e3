package llamacpp

import (
	"github.com/superfluid/superfluid/runtime/llm"
)

// tokenLogprob is the chosen token's entry in the reply's logprobs: its piece and its log
// probability, and the j.top most likely tokens at its position, best first.
//
// The probabilities are the model's own distribution, the log-softmax of the raw logits llama.cpp
// wrote for the position: before penalties, logit bias, temperature, top-k/top-p/min-p and the
// output grammar. That is what llama-server reports unless asked for post_sampling_probs; it
// makes logprobs comparable between requests whatever their sampler settings, costs one pass
// over the logits with no sampler state involved, and at temperature 0 with no penalties or
// bias the chosen token is the first of Top. The price: under a logit bias, penalties or a
// grammar the chosen token may rank low, and Top may list tokens the sampler could never have
// picked.
//
// Token is the piece's text, which can be part of a UTF-8 character (byte-fallback tokens);
// Bytes holds the exact bytes, and the Bytes of a reply's tokens join into its text.
func (e *Engine) tokenLogprob(j *job, logits []float32, token int, piece string) llm.TokenLogprob {
	j.dist.Compute(logits, j.top)
	lp := llm.TokenLogprob{Token: piece, Bytes: []byte(piece), Logprob: j.dist.Logprob(token)}
	if j.top == 0 {
		return lp
	}
	j.ranked = j.dist.Top(j.ranked[:0])
	pieces := e.vocab().pieces // built by Generate before the job was queued
	lp.Top = make([]llm.TopLogprob, len(j.ranked))
	for i, r := range j.ranked {
		p := pieces[r.ID]
		lp.Top[i] = llm.TopLogprob{Token: p, Bytes: []byte(p), Logprob: r.Logprob}
	}
	return lp
}
