package gguftest

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/superfluid/superfluid/runtime/gguf"
)

// A copy llama is a llama model of any shape whose weights are set by hand, not trained, so
// that it copies: at each position it predicts the token that followed the most recent earlier
// occurrence of the last three tokens (an induction circuit, what trained models use to quote
// their input). Speed does not depend on weight values, so a TinyLlama-1.1B-shaped copy llama
// costs what TinyLlama costs per token while it rewrites its prompt the way an editing model
// does — the workload prompt-lookup speculation is for — which a random-weight model never
// does. Blocks past the first two are zero matrices of full size (the residual passes through).
//
// The residual stream holds, per position i: a constant (dimension 0), the identity of the
// token t_i (CUR), and after block 0 those of t_{i-1}, t_{i-2} and t_{i-3} (PREV1-3); block 1
// writes the identity of the predicted token into OUT, and the output matrix reads OUT.
//   - Block 0, previous-token heads: query and key are constants rotated so that RoPE makes
//     the score peak at a fixed distance (1, 2 or 3 for PREV1-3's heads); values are CUR.
//   - Block 1, the induction heads: the query is (t_i, t_{i-1}, t_{i-2}) and the key
//     (t_{j-1}, t_{j-2}, t_{j-3}),
//     both in the slowest RoPE pairs (which barely rotate over the window, so they match by
//     content), plus a weak constant pair that favours recent positions; values are CUR, so the
//     head returns the identity of t_j where the three tokens before j are the last three.
const copyFreqBase = 1e16

// copyPlan holds the hand-set vectors of a copy llama.
type copyPlan struct {
	o        TinyLlamaOptions
	headDim  int
	ident    int // identity dimensions: 64 per key/value head (one head's width each)
	cur      int // first dimension of each region of the residual
	prev1    int
	prev2    int
	prev3    int
	out      int
	ids      [][]float32 // per token, its identity vector (unit length)
	posQ     [matched][]float32
	posK     []float32
	thetas   []float64
	contentP int // first RoPE pair used for matching by content
	recency  int // the RoPE pair of the recency preference
}

// WriteCopyLlama writes a copy llama of the given shape (see the comment above) to path.
// Q8 stores the matrices as Q8_0. The shape needs Embd ≥ 4 × 64 × KVHeads + 64, a head width of
// 64, at least three query heads per key/value head and at least two layers.
func WriteCopyLlama(path string, opts TinyLlamaOptions) error {
	w, err := NewCopyLlama(opts)
	if err != nil {
		return err
	}
	return w.WriteFile(path)
}

// NewCopyLlama returns a Writer holding the model WriteCopyLlama writes.
func NewCopyLlama(opts TinyLlamaOptions) (*Writer, error) {
	o := opts
	if err := o.defaults(); err != nil {
		return nil, err
	}
	p, err := newCopyPlan(o)
	if err != nil {
		return nil, err
	}
	if o.Name == "tiny-llama" {
		o.Name = "copy-llama"
	}
	w := NewWriter()
	writeLlamaHeader(w, o, copyFreqBase)
	embd, vocab, ff := uint64(o.Embd), uint64(o.Vocab), uint64(o.FF)
	kvdim := uint64(p.headDim * o.KVHeads)
	add := func(name string, dims []uint64, row func(r int, buf []float32)) {
		addRowTensor(w, name, dims, o.Q8, row)
	}
	ones := func(name string, n uint64) {
		data := make([]float32, n)
		for i := range data {
			data[i] = 1
		}
		w.AddTensorF32(name, []uint64{n}, data)
	}
	zero := func(int, []float32) {}
	add("token_embd.weight", []uint64{embd, vocab}, p.embeddingRow)
	for i := range o.Layers {
		pre := fmt.Sprintf("blk.%d.", i)
		q, k, v, out := zero, zero, zero, zero
		switch i {
		case 0:
			q, k, v, out = p.prevQ, p.prevK, p.curV0, p.prevOut
		case 1:
			q, k, v, out = p.inductionQ, p.inductionK, p.curV1, p.inductionOut
		}
		ones(pre+"attn_norm.weight", embd)
		add(pre+"attn_q.weight", []uint64{embd, embd}, q)
		add(pre+"attn_k.weight", []uint64{embd, kvdim}, k)
		add(pre+"attn_v.weight", []uint64{embd, kvdim}, v)
		add(pre+"attn_output.weight", []uint64{embd, embd}, out)
		ones(pre+"ffn_norm.weight", embd)
		add(pre+"ffn_gate.weight", []uint64{embd, ff}, zero)
		add(pre+"ffn_down.weight", []uint64{ff, embd}, zero)
		add(pre+"ffn_up.weight", []uint64{embd, ff}, zero)
	}
	ones("output_norm.weight", embd)
	add("output.weight", []uint64{embd, vocab}, p.outputRow)
	if w.err != nil {
		return nil, w.err
	}
	return w, nil
}

func newCopyPlan(o TinyLlamaOptions) (*copyPlan, error) {
	headDim := o.Embd / o.Heads
	ident := 64 * o.KVHeads
	switch {
	case headDim != 64:
		return nil, fmt.Errorf("copy llama: head width %d, need 64", headDim)
	case o.Layers < 2:
		return nil, fmt.Errorf("copy llama: %d layers, need at least 2", o.Layers)
	case o.Embd < 5*ident+64:
		return nil, fmt.Errorf("copy llama: embedding length %d, need at least %d for %d key/value heads", o.Embd, 5*ident+64, o.KVHeads)
	case o.Heads/o.KVHeads < matched:
		return nil, fmt.Errorf("copy llama: needs at least %d query heads per key/value head", matched)
	}
	p := &copyPlan{o: o, headDim: headDim, ident: ident, cur: 64, contentP: 9, recency: 6}
	p.prev1, p.prev2, p.prev3, p.out = p.cur+ident, p.cur+2*ident, p.cur+3*ident, p.cur+4*ident
	for m := range headDim / 2 {
		p.thetas = append(p.thetas, math.Pow(copyFreqBase, -2*float64(m)/float64(headDim)))
	}
	r := newRNG(uint64(o.Seed), 0xc0ffee, 0)
	p.ids = make([][]float32, o.Vocab)
	for t := range p.ids {
		p.ids[t] = identity(r, ident)
	}
	// Block 0: the key is the same constant for every position, energy in the fast pairs; each
	// query is that key rotated back by the distance its head looks at, so q·R(j-i)k peaks at
	// j = i - distance.
	const positional = 5 // RoPE pairs 0-4 (angles 1 to 0.01 per position)
	const amplitude = 45 // per pair: the score's peak is 5 × 45² / 8 = 1,266, its nearest rival ≥ 6% lower
	p.posK = make([]float32, headDim)
	for m := range positional {
		p.posK[2*m] = amplitude
	}
	for d := range matched {
		p.posQ[d] = rotate(p.posK, p.thetas, -float64(d+1))
	}
	return p, nil
}

// matched is how many tokens the induction head compares; slice the width of each compared
// identity slice (the first matched×slice coordinates of an identity).
const (
	matched = 3
	slice   = 15
)

// identity is a unit vector of n coordinates whose first matched slices each have the length
// sliceNorm exactly, so a match scores the same for every token.
func identity(r *rng, n int) []float32 {
	v := make([]float32, 0, n)
	for range matched {
		for _, x := range unitVector(r, slice) {
			v = append(v, x*sliceNorm(n))
		}
	}
	rest := float32(math.Sqrt(1 - matched*float64(sliceNorm(n)*sliceNorm(n))))
	for _, x := range unitVector(r, n-matched*slice) {
		v = append(v, x*rest)
	}
	return v
}

func sliceNorm(n int) float32 { return float32(math.Sqrt(slice / float64(n))) }

func unitVector(r *rng, n int) []float32 {
	v := make([]float32, n)
	var norm float64
	for i := range v {
		x := r.normal()
		v[i] = float32(x)
		norm += float64(x * x)
	}
	scale := float32(1 / math.Sqrt(norm))
	for i := range v {
		v[i] *= scale
	}
	return v
}

// rotate applies RoPE's rotation (llama.cpp's normal mode: adjacent pairs) for position pos.
func rotate(v []float32, thetas []float64, pos float64) []float32 {
	out := make([]float32, len(v))
	for m, th := range thetas {
		c, s := math.Cos(pos*th), math.Sin(pos*th)
		x0, x1 := float64(v[2*m]), float64(v[2*m+1])
		out[2*m] = float32(x0*c - x1*s)
		out[2*m+1] = float32(x0*s + x1*c)
	}
	return out
}

// The residual's scale after RMS normalization: block 0 sees [1, id] (two unit parts), block 1
// the constant and four identities, the output one more.
func (p *copyPlan) normScale(parts int) float32 {
	return float32(math.Sqrt(float64(p.o.Embd) / float64(parts)))
}

func (p *copyPlan) embeddingRow(t int, buf []float32) {
	buf[0] = 1
	copy(buf[p.cur:], p.ids[t])
}

func (p *copyPlan) outputRow(t int, buf []float32) {
	// logit = 1.5 × id_t · OUT, normalized (× √(Embd/6) ≈ 18): about 28 for the copied token,
	// under 8 for the others.
	const scale = 1.5
	for i, x := range p.ids[t] {
		buf[p.out+i] = scale * x
	}
}

// group and role of query head h: heads are grouped by key/value head; the first two of each
// group do the work.
func (p *copyPlan) headRole(h int) (group, role int) {
	per := p.o.Heads / p.o.KVHeads
	return h / per, h % per
}

// prevQ: query heads 0, 1 and 2 of each group look back 1, 2 and 3 positions.
func (p *copyPlan) prevQ(r int, buf []float32) {
	h, c := r/p.headDim, r%p.headDim
	if _, role := p.headRole(h); role < matched {
		buf[0] = p.posQ[role][c] / p.normScale(2)
	}
}

func (p *copyPlan) prevK(r int, buf []float32) {
	buf[0] = p.posK[r%p.headDim] / p.normScale(2)
}

// curV0 and curV1: key/value head g carries identity dimensions [64g, 64g+64) of CUR, as
// block 0 and block 1 see it.
func (p *copyPlan) curV0(r int, buf []float32) { buf[p.cur+r] = 1 / p.normScale(2) }
func (p *copyPlan) curV1(r int, buf []float32) { buf[p.cur+r] = 1 / p.normScale(2+matched) }

func (p *copyPlan) prevOut(r int, buf []float32) {
	// Output row r is a residual dimension; it reads the heads' dimensions.
	for d, region := range []int{p.prev1, p.prev2, p.prev3} {
		if r >= region && r < region+p.ident {
			g, c := (r-region)/64, (r-region)%64
			buf[(g*p.o.Heads/p.o.KVHeads+d)*p.headDim+c] = 1
		}
	}
}

// Block 1. Content dimensions of a head: RoPE pairs from contentP on, in matched parts of slice
// dimensions; part k compares identity slice k of t_{i-k} (query) with that of t_{j-1-k} (key).
func (p *copyPlan) contentPart(c int) (part, offset int, ok bool) {
	start := 2 * p.contentP
	if c < start || c >= start+matched*slice {
		return 0, 0, false
	}
	return (c - start) / slice, (c - start) % slice, true
}

// inductionGain sets the score of a full match: matched × gain² / 8 = 150 logits; two of three
// score 100, so the softmax keeps the full match.
const inductionGain = 20

// recencyGain weighs recent positions: cos((j-i)θ_6) falls from 1 to -0.5 over 2,048 positions,
// worth 1.5 × recencyGain²/8 = 3 logits in all — it breaks ties between equal matches, never
// outweighs a token of difference.
const recencyGain = 4

func (p *copyPlan) inductionQ(r int, buf []float32) {
	h, c := r/p.headDim, r%p.headDim
	if _, role := p.headRole(h); role != 0 {
		return
	}
	p.inductionRow(c, buf, []int{p.cur, p.prev1, p.prev2})
}

func (p *copyPlan) inductionK(r int, buf []float32) {
	p.inductionRow(r%p.headDim, buf, []int{p.prev1, p.prev2, p.prev3})
}

// inductionRow fills head dimension c of a query or key reading the regions (one per part).
func (p *copyPlan) inductionRow(c int, buf []float32, regions []int) {
	s := p.normScale(2 + matched)
	if c == 2*p.recency {
		buf[0] = recencyGain / s
		return
	}
	if part, off, ok := p.contentPart(c); ok {
		buf[regions[part]+part*slice+off] = inductionGain / sliceNorm(p.ident) / s
	}
}

func (p *copyPlan) inductionOut(r int, buf []float32) {
	if r >= p.out && r < p.out+p.ident {
		g, c := (r-p.out)/64, (r-p.out)%64
		buf[(g*p.o.Heads/p.o.KVHeads)*p.headDim+c] = 1
	}
}

// addRowTensor adds a 2-D tensor whose rows row fills (zeroed before each call), as F32 or
// Q8_0, generated while the file is written.
func addRowTensor(w *Writer, name string, dims []uint64, q8 bool, row func(r int, buf []float32)) {
	cols, rows := int(dims[0]), int(dims[1])
	typ := uint32(gguf.TypeF32)
	if q8 {
		typ = gguf.TypeQ8_0
	}
	w.AddTensorFunc(name, typ, dims, func(out io.Writer) error {
		buf := make([]float32, cols)
		var enc []byte
		for r := range rows {
			clear(buf)
			row(r, buf)
			enc = enc[:0]
			if q8 {
				enc = appendQ8(enc, buf)
			} else {
				for _, x := range buf {
					enc = binary.LittleEndian.AppendUint32(enc, math.Float32bits(x))
				}
			}
			if _, err := out.Write(enc); err != nil {
				return err
			}
		}
		return nil
	})
}

// appendQ8 quantizes x (a multiple of 32 long) to Q8_0 blocks: an f16 scale, 32 int8 quants.
func appendQ8(dst []byte, x []float32) []byte {
	for b := 0; b < len(x); b += 32 {
		blk := x[b : b+32]
		var amax float32
		for _, v := range blk {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		d := amax / 127
		dst = binary.LittleEndian.AppendUint16(dst, f32ToF16(d))
		for _, v := range blk {
			q := 0.0
			if d != 0 {
				q = math.Round(float64(v / d))
			}
			dst = append(dst, byte(int8(max(-127, min(127, q)))))
		}
	}
	return dst
}

// CopyText returns n words of the tiny vocabulary (each one token with its leading space) in a
// random order, seeded, in which no three consecutive words occur twice: a copy llama
// reproduces such a text exactly, with nothing ambiguous to choose between.
func CopyText(n int, seed int64) string {
	words := strings.Fields(tinyWords)
	r := newRNG(uint64(seed), 0x7e47, 0)
	seen := map[[3]string]bool{}
	out := make([]string, 0, n)
	for len(out) < n {
		w := words[r.next()%uint64(len(words))]
		if k := len(out); k >= 2 {
			tri := [3]string{out[k-2], out[k-1], w}
			if seen[tri] {
				continue
			}
			seen[tri] = true
		}
		out = append(out, w)
	}
	return strings.Join(out, " ")
}
