package sampling

import (
	"fmt"
	"math"
	"slices"

	"github.com/superfluid/superfluid/runtime/llm"
)

// MinLogprob is the floor of a reported log probability. A token the model gives no chance at
// all (a -Inf or NaN logit) reports it instead of -Inf, which JSON cannot carry; OpenAI reports
// -9999 for such tokens too.
const MinLogprob = -9999

// Ranked is one token with its log probability.
type Ranked struct {
	ID      int
	Logprob float64
}

// LogSoftmax is the log-softmax of one position's logits, evaluated only at the tokens a reply
// reports: the chosen one and the n most likely. Compute makes one pass over the vocabulary
// that finds the normalizer (log-sum-exp, with the running maximum rescaled as it grows) and,
// with a heap of n entries, the n best tokens, so no full softmax or sort of the vocabulary is
// ever done. A LogSoftmax is reused from position to position and does not allocate once its
// heap has grown to n. It is not safe for concurrent use.
type LogSoftmax struct {
	logits []float32
	max    float64 // the largest logit (+Inf when a logit is +Inf; -Inf when none is finite)
	logZ   float64 // log Σ exp(logit - max) over the tokens that have a chance
	heap   []cand  // the n best tokens, worst at the root (a min-heap as in candidates)
}

// Compute evaluates the distribution of logits and keeps the n most likely tokens (none when
// n <= 0). It keeps a reference to logits, which must stay unchanged until the next Compute.
// NaN and -Inf logits count as tokens without a chance.
func (d *LogSoftmax) Compute(logits []float32, n int) {
	d.logits = logits
	n = min(n, len(logits))
	if cap(d.heap) < n {
		d.heap = make([]cand, 0, n)
	}
	h := d.heap[:0]
	m, s := math.Inf(-1), 0.0
	for i, v := range logits {
		x := float64(v)
		if x > m {
			// A new maximum: rescale the sum to it. This branch runs about log(vocab) times
			// on a shuffled vocabulary, so the slow exact exp costs nothing measurable.
			s = s*math.Exp(m-x) + 1
			m = x
		} else if e := x - m; e >= minWeightExp {
			s += expTable(e)
		} else if !(v > negInf) {
			continue // NaN or -Inf: no chance, and not ranked
		}
		if n == 0 {
			continue
		}
		if len(h) < n {
			h = append(h, cand{int32(i), v})
			siftUp(h)
		} else if v > h[0].v { // strict: among equal logits the lower id, seen first, stays
			h[0] = cand{int32(i), v}
			siftDown(h)
		}
	}
	d.max, d.logZ, d.heap = m, math.Log(s), h
}

// exp2Table holds 2^(i/64) for i in 0..63.
var exp2Table = func() (t [64]float64) {
	for i := range t {
		t[i] = math.Exp2(float64(i) / 64)
	}
	return t
}()

// expTable returns exp(d) for d in [minWeightExp, 0] with a relative error below 1e-10, about
// twice as fast as expNeg (which would double the cost of logprobs on a 32k vocabulary):
// d·64·log2(e) = k + f with |f| <= 1/2, then 2^(k/64) from the exponent bits and a 64-entry
// table, and 2^(f/64) from a cubic, whose argument is tiny.
func expTable(d float64) float64 {
	t := d * (64 * math.Log2E)
	k := int64(t - 0.5) // rounds to nearest, as t <= 0 and conversion truncates
	f := (t - float64(k)) * (math.Ln2 / 64)
	p := 1 + f*(1+f*(1.0/2+f*(1.0/6)))
	return p * exp2Table[k&63] * math.Float64frombits(uint64(1023+(k>>6))<<52)
}

// Logprob returns the log probability of token id: at most 0, at least MinLogprob.
func (d *LogSoftmax) Logprob(id int) float64 {
	if id < 0 || id >= len(d.logits) {
		return MinLogprob
	}
	x := float64(d.logits[id])
	switch {
	case !(x > math.Inf(-1)):
		return MinLogprob
	case math.IsInf(d.max, 1):
		// Degenerate logits: the +Inf tokens share all the probability.
		if !math.IsInf(x, 1) {
			return MinLogprob
		}
		n := 0
		for _, v := range d.logits {
			if math.IsInf(float64(v), 1) {
				n++
			}
		}
		return -math.Log(float64(n))
	}
	// x <= max and logZ >= 0 (the maximum's own term is exp(0) = 1), so this is never above 0,
	// and the most likely token gets exactly -logZ.
	return max((x-d.max)-d.logZ, MinLogprob)
}

// Top appends the n most likely tokens of the last Compute to dst, best first (the lower id
// among equal logits), and returns it. Fewer than n come back when fewer tokens have a chance.
// It reorders the heap, so call it once per Compute.
func (d *LogSoftmax) Top(dst []Ranked) []Ranked {
	slices.SortFunc(d.heap, compare)
	for _, c := range d.heap {
		dst = append(dst, Ranked{ID: int(c.id), Logprob: d.Logprob(int(c.id))})
	}
	return dst
}

// Check refuses the settings of req that no engine can honour, with errors that wrap
// llm.ErrInvalidInput: top_logprobs outside 0..llm.MaxTopLogprobs, and logit_bias naming a token
// outside [0, vocab) or carrying a NaN or infinite value. (New, by contrast, quietly ignores
// such bias entries, for callers that have checked already or do not care.) When several
// logit_bias entries are wrong, the lowest token id is named, so the message is the same on
// every run.
func Check(req *llm.Request, vocab int) error {
	if req.TopLogprobs < 0 || req.TopLogprobs > llm.MaxTopLogprobs {
		return fmt.Errorf("%w: top_logprobs must be between 0 and %d, got %d", llm.ErrInvalidInput, llm.MaxTopLogprobs, req.TopLogprobs)
	}
	bad, badID := "", 0
	for id, v := range req.Sampling.LogitBias {
		var why string
		switch {
		case id < 0 || id >= vocab:
			why = fmt.Sprintf("logit_bias token %d is outside the vocabulary (0-%d)", id, vocab-1)
		case math.IsNaN(v) || math.IsInf(v, 0):
			why = fmt.Sprintf("logit_bias token %d has the value %g; give a finite number (-100 bans the token)", id, v)
		default:
			continue
		}
		if bad == "" || id < badID {
			bad, badID = why, id
		}
	}
	if bad != "" {
		return fmt.Errorf("%w: %s", llm.ErrInvalidInput, bad)
	}
	return nil
}

// WantsLogprobs reports whether req asks for log probabilities: Logprobs, or TopLogprobs > 0
// alone (asking for alternatives implies asking for the chosen token's, rather than being
// refused or silently ignored).
func WantsLogprobs(req *llm.Request) bool { return req.Logprobs || req.TopLogprobs > 0 }
