package sampling

import (
	"math"
	"slices"
)

// minWeightExp is where exp underflows to nothing worth drawing: exp(-80) ≈ 1.8e-35.
const minWeightExp = -80

// cand is one candidate token. v holds the (penalized) logit until softmax, then the token's
// unnormalized weight exp((logit-max)/T), which is 1 for the best token.
type cand struct {
	id int32
	v  float32
}

// argmax returns the id of the largest logit, the lowest id among ties, and 0 when all are
// -Inf or NaN.
func argmax(buf []float32) int {
	best, bv := 0, negInf
	for i, v := range buf {
		if v > bv {
			best, bv = i, v
		}
	}
	return best
}

// candidates returns the top_k best tokens (unordered), or every token that is not banned.
func (s *Sampler) candidates(buf []float32) []cand {
	k := s.topK
	if k <= 0 || k >= len(buf) {
		if cap(s.cands) < len(buf) {
			s.cands = make([]cand, 0, len(buf))
		}
		c := s.cands[:0]
		for i, v := range buf {
			if v > negInf {
				c = append(c, cand{int32(i), v})
			}
		}
		return c
	}
	// A min-heap of the k best seen so far, worst at the root. Scanning ids upwards with a
	// strict comparison keeps the lowest ids among equal logits.
	if cap(s.cands) < k {
		s.cands = make([]cand, 0, k)
	}
	h := s.cands[:0]
	for i, v := range buf {
		if !(v > negInf) {
			continue
		}
		if len(h) < k {
			h = append(h, cand{int32(i), v})
			siftUp(h)
		} else if v > h[0].v {
			h[0] = cand{int32(i), v}
			siftDown(h)
		}
	}
	return h
}

// siftUp restores the min-heap (worst at the root) after a candidate was appended to h.
func siftUp(h []cand) {
	for j := len(h) - 1; j > 0; {
		p := (j - 1) / 2
		if !better(h[p], h[j]) {
			return
		}
		h[p], h[j] = h[j], h[p]
		j = p
	}
}

// siftDown restores the min-heap (worst at the root) after h[0] changed.
func siftDown(h []cand) {
	for j := 0; ; {
		w := 2*j + 1
		if w >= len(h) {
			return
		}
		if r := w + 1; r < len(h) && better(h[w], h[r]) {
			w = r
		}
		if !better(h[j], h[w]) {
			return
		}
		h[j], h[w] = h[w], h[j]
		j = w
	}
}

// better reports whether a ranks before b: a larger value, or the lower id among equals.
func better(a, b cand) bool {
	return a.v > b.v || (a.v == b.v && a.id < b.id)
}

func compare(a, b cand) int {
	switch {
	case better(a, b):
		return -1
	case better(b, a):
		return 1
	}
	return 0
}

// softmax turns the logits of c into weights exp((logit-max)/T) in place and returns their sum.
func (s *Sampler) softmax(c []cand) float64 {
	mx := c[0].v
	for _, x := range c[1:] {
		mx = max(mx, x.v)
	}
	var z float64
	if math.IsInf(float64(mx), 1) {
		for i := range c {
			w := float32(0)
			if c[i].v == mx {
				w = 1
			}
			c[i].v = w
			z += float64(w)
		}
		return z
	}
	invT, m := 1/s.temp, float64(mx)
	for i := range c {
		d := (float64(c[i].v) - m) * invT
		w := float32(0)
		if d > minWeightExp {
			w = expNeg(d)
		}
		c[i].v = w
		z += float64(w)
	}
	return z
}

// sortedTopP is the size up to which nucleus simply sorts its candidates.
const sortedTopP = 64

// expNeg returns exp(d) for d in (minWeightExp, 0] to float32 precision (relative error about
// 2e-7), several times faster than math.Exp: d·log2(e) = k + f with k an integer and |f| <= 1/2,
// then 2^f by its Taylor series to the 7th power and 2^k by setting the exponent bits.
func expNeg(d float64) float32 {
	x := d * math.Log2E
	k := int64(x - 0.5)              // rounds to nearest, as x <= 0 and conversion truncates
	f := (x - float64(k)) * math.Ln2 // |f| <= ln(2)/2
	p := 1 + f*(1+f*(1.0/2+f*(1.0/6+f*(1.0/24+f*(1.0/120+f*(1.0/720+f*(1.0/5040)))))))
	return float32(p * math.Float64frombits(uint64(1023+k)<<52))
}

// nucleus (top_p) keeps the shortest best-first prefix of c whose weights reach target (at
// least one token) and returns it, reordered, with its total weight. Past a few candidates it
// avoids a full sort: weights fall into buckets of 1/8 of an octave, and only the bucket where
// the running total crosses target is sorted.
func (s *Sampler) nucleus(c []cand, target float64) ([]cand, float64) {
	if len(c) <= sortedTopP {
		slices.SortFunc(c, compare)
		return cutAt(c, 0, 0, target)
	}
	s.mass = [len(s.mass)]float64{}
	for _, x := range c {
		s.mass[bucket(x.v)] += float64(x.v)
	}
	var cum float64
	b := len(s.mass) - 1
	for ; b >= 0; b-- {
		if s.mass[b] > 0 && cum+s.mass[b] >= target {
			break
		}
		cum += s.mass[b]
	}
	if b < 0 {
		return c, cum
	}
	// Everything above bucket b is kept whatever its order; sort bucket b to find the cut.
	k := 0
	for i, x := range c {
		if bucket(x.v) > b {
			c[i], c[k] = c[k], x
			k++
		}
	}
	j := k
	for i := k; i < len(c); i++ {
		if x := c[i]; bucket(x.v) == b {
			c[i], c[j] = c[j], x
			j++
		}
	}
	slices.SortFunc(c[k:j], compare)
	return cutAt(c[:j], k, cum, target)
}

// bucket maps a weight in [0, 1] to one of 1024 buckets, increasing with the weight: its float32
// exponent and top three mantissa bits.
func bucket(w float32) int { return int(math.Float32bits(w) >> 20 & 1023) }

// cutAt scans c from start, where cum is the weight before start, and cuts after the first
// token at which the running weight reaches target.
func cutAt(c []cand, start int, cum, target float64) ([]cand, float64) {
	for i := start; i < len(c); i++ {
		cum += float64(c[i].v)
		if cum >= target {
			return c[:i+1], cum
		}
	}
	return c, cum
}

// draw picks a candidate with probability proportional to its weight; z is the total weight.
func (s *Sampler) draw(c []cand, z float64) int {
	r := s.rng.Float64() * z
	last := int(c[0].id)
	for _, x := range c {
		if x.v <= 0 {
			continue
		}
		last = int(x.id)
		r -= float64(x.v)
		if r < 0 {
			return last
		}
	}
	return last // rounding left r at or above zero: the last token with any weight
}
