// Package sampling picks the next token from a model's logits: logit bias, ignore-EOS,
// repetition penalties, then greedy argmax or top-k → temperature softmax → top-p → min-p and a
// draw from a seeded PRNG. It is done in Go because llama.cpp's common sampler, as ollama wraps
// it, has no logit bias and no ignore-EOS. It also computes log probabilities (LogSoftmax) and
// checks the settings a request may not carry (Check).
package sampling

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/superfluid/superfluid/runtime/llm"
)

// banBias is the logit bias at or below which a token is banned outright (OpenAI's -100).
const banBias = -100

// maxBias caps a positive logit bias so that logit+bias stays finite in float32.
const maxBias = 1e6

var negInf = float32(math.Inf(-1))

type bias struct {
	id  int
	add float32 // -Inf for a ban
}

// Sampler picks tokens for one sequence. It is not safe for concurrent use.
type Sampler struct {
	temp, topP, minP       float64
	topK                   int
	repeat, freq, presence float32
	penalize               bool
	bias                   []bias
	ban                    []int // end-of-generation ids when ignoring EOS
	rng                    *rand.Rand
	last                   [llm.RepeatLastN]int32 // ring of the last accepted tokens
	nlast, head            int
	scratchHist            [llm.RepeatLastN]int32
	buf                    []float32 // copy of the logits, modified in place
	cands                  []cand
	best                   []cand        // Best's heap
	bestIDs                []int32       // Best's answer
	mass                   [1024]float64 // nucleus's weight per bucket
}

// New builds a sampler for one sequence. vocab is the vocabulary size; eog lists the
// end-of-generation token ids, which are banned when ignoreEOS is set. Nil pointers in s take
// llm's defaults (temperature 0.8, top_k 40, top_p 0.95, min_p 0.05, repeat penalty 1.0).
// Settings are normalized rather than rejected: NaN means the default, top_k <= 0 or >= vocab
// means the whole vocabulary, top_p >= 1 and min_p <= 0 are off, min_p above 1 counts as 1, a
// repeat penalty <= 0 is off. Logit-bias ids outside [0, vocab) are ignored; a bias of -100 or
// less bans the token. Seed 0 means a fresh random seed.
func New(s llm.Sampling, vocab int, eog []int, ignoreEOS bool) *Sampler {
	sm := &Sampler{
		temp:     orDefault(s.Temperature, llm.DefaultTemperature),
		topP:     orDefault(s.TopP, llm.DefaultTopP),
		minP:     orDefault(s.MinP, llm.DefaultMinP),
		topK:     llm.DefaultTopK,
		repeat:   float32(orDefault(s.RepeatPenalty, llm.DefaultRepeatPenalty)),
		freq:     finite32(s.FrequencyPenalty),
		presence: finite32(s.PresencePenalty),
	}
	if s.TopK != nil {
		sm.topK = *s.TopK
	}
	if sm.topK < 0 || sm.topK >= vocab {
		sm.topK = 0
	}
	sm.minP = min(sm.minP, 1)
	if !(sm.repeat > 0) || math.IsInf(float64(sm.repeat), 1) {
		sm.repeat = 1
	}
	sm.penalize = sm.repeat != 1 || sm.freq != 0 || sm.presence != 0
	for id, b := range s.LogitBias {
		if id < 0 || id >= vocab || math.IsNaN(b) {
			continue
		}
		add := float32(min(b, maxBias))
		if b <= banBias {
			add = negInf
		}
		sm.bias = append(sm.bias, bias{id: id, add: add})
	}
	slices.SortFunc(sm.bias, func(a, b bias) int { return a.id - b.id })
	if ignoreEOS {
		for _, id := range eog {
			if id >= 0 && id < vocab {
				sm.ban = append(sm.ban, id)
			}
		}
	}
	seed := s.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	sm.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	sm.buf = make([]float32, vocab)
	n := vocab
	if sm.topK > 0 {
		n = sm.topK
	}
	sm.cands = make([]cand, 0, n)
	return sm
}

func orDefault(p *float64, def float64) float64 {
	if p == nil || math.IsNaN(*p) {
		return def
	}
	return *p
}

func finite32(f float64) float32 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return float32(f)
}

// Accept records a token the sequence now contains (prompt tokens too); the penalties look at
// the last llm.RepeatLastN accepted tokens. Negative ids are ignored.
func (s *Sampler) Accept(token int) {
	if token < 0 {
		return
	}
	s.last[s.head] = int32(token)
	s.head = (s.head + 1) % len(s.last)
	if s.nlast < len(s.last) {
		s.nlast++
	}
}

// Sample returns the next token id from logits (len(logits) should be the vocabulary size; ids
// beyond len(logits) in the settings are ignored). NaN and -Inf logits count as banned. When
// every token is banned it returns 0. It panics on empty logits. It does not allocate once its
// scratch buffers have grown to the vocabulary.
func (s *Sampler) Sample(logits []float32) int {
	return s.SampleAdjusted(s.Adjusted(logits))
}

// Adjusted returns logits with the request's logit_bias, bans and penalties applied: the values
// Sample ranks and draws from. The slice is the sampler's scratch, valid until the next call.
// It panics on empty logits.
func (s *Sampler) Adjusted(logits []float32) []float32 {
	n := len(logits)
	if n == 0 {
		panic("sampling: no logits")
	}
	if cap(s.buf) < n {
		s.buf = make([]float32, n)
	}
	buf := s.buf[:n]
	copy(buf, logits)
	for _, b := range s.bias {
		if b.id < n {
			buf[b.id] += b.add
		}
	}
	for _, id := range s.ban {
		if id < n {
			buf[id] = negInf
		}
	}
	if s.penalize {
		s.applyPenalties(buf)
	}
	return buf
}

// Decisive is how many of the best adjusted values decide a draw, ranked by value and then by
// lower id: 1 when greedy, top_k when sampling; 0 when any token can be drawn (top_k off). A
// caller that masks tokens (a grammar) need only look at the best ones until it has found that
// many it allows: the tokens after them cannot be drawn.
func (s *Sampler) Decisive() int {
	if s.temp <= 0 {
		return 1
	}
	return s.topK
}

// SampleAdjusted draws from values Adjusted returned, possibly masked further (-Inf bans).
func (s *Sampler) SampleAdjusted(buf []float32) int {
	if len(buf) == 0 {
		panic("sampling: no logits")
	}
	if s.temp <= 0 {
		return argmax(buf)
	}
	c := s.candidates(buf)
	if len(c) == 0 {
		return argmax(buf)
	}
	z := s.softmax(c)
	if s.minP > 0 {
		// Every weight is relative to the best token's 1, so min_p is a plain threshold, and
		// because min_p and top_p both keep a prefix of the sorted list, filtering by min_p
		// first leaves the same set as top_p followed by min_p.
		thr := float32(s.minP)
		j := 0
		for _, x := range c {
			if x.v >= thr {
				c[j] = x
				j++
			}
		}
		c = c[:j]
	}
	if s.topP < 1 {
		c, z = s.nucleus(c, s.topP*z)
	} else if s.minP > 0 {
		z = 0
		for _, x := range c {
			z += float64(x.v)
		}
	}
	return s.draw(c, z)
}

// applyPenalties applies llama.cpp's repeat, frequency and presence penalties to the tokens in
// the recent window.
func (s *Sampler) applyPenalties(buf []float32) {
	h := s.scratchHist[:s.nlast]
	copy(h, s.last[:s.nlast])
	slices.Sort(h)
	for i := 0; i < len(h); {
		j := i + 1
		for j < len(h) && h[j] == h[i] {
			j++
		}
		id, count := int(h[i]), float32(j-i)
		i = j
		if id >= len(buf) {
			continue
		}
		l := buf[id]
		if l <= 0 {
			l *= s.repeat
		} else {
			l /= s.repeat
		}
		buf[id] = l - count*s.freq - s.presence
	}
}
