package gguftest

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"

	"github.com/superfluid/superfluid/runtime/gguf"
)

// TinyLlamaOptions shapes a random-weight llama model. Zero fields take the defaults noted.
type TinyLlamaOptions struct {
	Vocab         int    // tokens, at least 260; default 512
	Embd          int    // embedding length; default 64
	Layers        int    // blocks; default 2
	Heads         int    // attention heads; default 4
	KVHeads       int    // key/value heads (fewer than Heads for GQA); default Heads
	FF            int    // feed-forward length; default 128
	ContextLength int    // training context length; default 2048
	Seed          int64  // weights are a pure function of the options, seed included
	ChatTemplate  string // tokenizer.chat_template, written when not empty
	Name          string // general.name; default "tiny-llama"
	Q8            bool   // store the 2-D weight matrices as Q8_0 (Embd and FF must be multiples of 32)
}

func (o *TinyLlamaOptions) defaults() error {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	def(&o.Vocab, 512)
	def(&o.Embd, 64)
	def(&o.Layers, 2)
	def(&o.Heads, 4)
	def(&o.KVHeads, o.Heads)
	def(&o.FF, 128)
	def(&o.ContextLength, 2048)
	if o.Name == "" {
		o.Name = "tiny-llama"
	}
	switch {
	case o.Vocab < firstPiece+1:
		return fmt.Errorf("tiny llama: vocab %d is too small, need at least %d", o.Vocab, firstPiece+1)
	case o.Embd < 0 || o.Layers < 0 || o.Heads < 0 || o.KVHeads < 0 || o.FF < 0 || o.ContextLength < 0:
		return fmt.Errorf("tiny llama: negative size in %+v", *o)
	case o.Embd%o.Heads != 0:
		return fmt.Errorf("tiny llama: embedding length %d is not a multiple of the %d heads", o.Embd, o.Heads)
	case o.KVHeads > o.Heads || o.Heads%o.KVHeads != 0:
		return fmt.Errorf("tiny llama: %d heads is not a multiple of the %d key/value heads", o.Heads, o.KVHeads)
	case o.Q8 && (o.Embd%32 != 0 || o.FF%32 != 0):
		return fmt.Errorf("tiny llama: Q8_0 needs embedding (%d) and feed-forward (%d) lengths that are multiples of 32",
			o.Embd, o.FF)
	}
	return nil
}

// WriteTinyLlama writes a complete random-weight llama model to path: llama.cpp loads it and
// generates (gibberish) with it. The tokenizer is a SentencePiece ("llama") vocabulary with
// <unk>, <s>, </s>, the 256 byte tokens and common word pieces. Weights are streamed to the
// file, so real-sized models (for benchmarks) need little memory.
func WriteTinyLlama(path string, opts TinyLlamaOptions) error {
	w, err := NewTinyLlama(opts)
	if err != nil {
		return err
	}
	return w.WriteFile(path)
}

// NewTinyLlama returns a Writer holding the model WriteTinyLlama writes, for writing elsewhere.
func NewTinyLlama(opts TinyLlamaOptions) (*Writer, error) {
	o := opts
	if err := o.defaults(); err != nil {
		return nil, err
	}
	w := NewWriter()
	writeLlamaHeader(w, o, 10000)

	embd, vocab, ff := uint64(o.Embd), uint64(o.Vocab), uint64(o.FF)
	kvdim := uint64(o.Embd / o.Heads * o.KVHeads)
	seed := uint64(o.Seed)
	index := uint64(0)
	matrix := func(name string, dims ...uint64) {
		index++
		addRandomTensor(w, name, dims, o.Q8, seed, index)
	}
	ones := func(name string, n uint64) {
		data := make([]float32, n)
		for i := range data {
			data[i] = 1
		}
		w.AddTensorF32(name, []uint64{n}, data)
	}
	matrix("token_embd.weight", embd, vocab)
	for i := range o.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		ones(p+"attn_norm.weight", embd)
		matrix(p+"attn_q.weight", embd, embd)
		matrix(p+"attn_k.weight", embd, kvdim)
		matrix(p+"attn_v.weight", embd, kvdim)
		matrix(p+"attn_output.weight", embd, embd)
		ones(p+"ffn_norm.weight", embd)
		matrix(p+"ffn_gate.weight", embd, ff)
		matrix(p+"ffn_down.weight", ff, embd)
		matrix(p+"ffn_up.weight", embd, ff)
	}
	ones("output_norm.weight", embd)
	matrix("output.weight", embd, vocab)
	if w.err != nil {
		return nil, w.err
	}
	return w, nil
}

// Token ids of the tiny vocabulary.
const (
	firstByteToken = 3
	firstPiece     = firstByteToken + 256
)

// tinyVocab returns n SentencePiece tokens with their scores and types: <unk>, <s>, </s>, the
// byte tokens <0x00>..<0xFF>, then word pieces, more frequent first, each word preceded by
// its prefixes so that the SPM merges can reach it.
func tinyVocab(n int) ([]string, []float32, []int32) {
	tokens := make([]string, 0, n)
	scores := make([]float32, 0, n)
	types := make([]int32, 0, n)
	add := func(tok string, score float32, typ int32) {
		tokens = append(tokens, tok)
		scores = append(scores, score)
		types = append(types, typ)
	}
	add("<unk>", 0, 2) // LLAMA_TOKEN_TYPE_UNKNOWN
	add("<s>", 0, 3)   // LLAMA_TOKEN_TYPE_CONTROL
	add("</s>", 0, 3)
	for b := range 256 {
		add(fmt.Sprintf("<0x%02X>", b), 0, 6) // LLAMA_TOKEN_TYPE_BYTE
	}
	seen := map[string]bool{}
	piece := func(p string) bool {
		if len(tokens) >= n {
			return false
		}
		if !seen[p] {
			seen[p] = true
			add(p, -float32(len(tokens)-firstPiece+1), 1) // LLAMA_TOKEN_TYPE_NORMAL
		}
		return len(tokens) < n
	}
	const sp = "▁"
	const lower = "abcdefghijklmnopqrstuvwxyz"
	singles := sp + lower + "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,!?'\"-:;()"
	for _, r := range singles {
		if !piece(string(r)) {
			return tokens, scores, types
		}
	}
	for _, r := range lower {
		if !piece(sp + string(r)) {
			return tokens, scores, types
		}
	}
	for _, word := range strings.Fields(tinyWords) {
		word = sp + word
		for i := len(sp) + 1; i <= len(word); i++ {
			if !piece(word[:i]) {
				return tokens, scores, types
			}
		}
	}
	for _, a := range lower {
		for _, b := range lower {
			if !piece(sp+string(a)+string(b)) || !piece(string(a)+string(b)) {
				return tokens, scores, types
			}
		}
	}
	for i := 0; ; i++ {
		if !piece(fmt.Sprintf("%stok%d", sp, i)) {
			return tokens, scores, types
		}
	}
}

const tinyWords = `hello world Hello the a and to of in is you that it he was for on are as with
his they I at be this have from or one had by word but not what all were we when your can said
there use an each which she do how their if will up other about out many then them these so some
her would make like him into time has look two more write go see number no way could people my
than first water been call who its now find long down day did get come made may part The once
upon little girl boy cat dog sun happy story model yes ok`

// addRandomTensor adds a 2-D weight matrix of approximately normal values (std 0.02),
// generated while the file is written, as F32 or Q8_0.
func addRandomTensor(w *Writer, name string, dims []uint64, q8 bool, seed, index uint64) {
	elems := dims[0] * dims[1]
	if q8 {
		const chunkBlocks = 8192
		blocks := elems / 32
		w.AddTensorFunc(name, gguf.TypeQ8_0, dims, func(out io.Writer) error {
			n := int((blocks + chunkBlocks - 1) / chunkBlocks)
			return writeChunks(out, n, chunkBlocks*34, func(i int, buf []byte) []byte {
				count := min(chunkBlocks, blocks-uint64(i)*chunkBlocks)
				rng := newRNG(seed, index, uint64(i))
				for b := range count {
					blk := buf[b*34 : b*34+34]
					binary.LittleEndian.PutUint16(blk, q8Scale)
					for j := 2; j < 34; j += 2 {
						x := rng.next()
						blk[j] = q8Random(x)
						blk[j+1] = q8Random(x >> 32)
					}
				}
				return buf[:count*34]
			})
		})
		return
	}
	const chunkElems = 1 << 18
	w.AddTensorFunc(name, gguf.TypeF32, dims, func(out io.Writer) error {
		n := int((elems + chunkElems - 1) / chunkElems)
		return writeChunks(out, n, chunkElems*4, func(i int, buf []byte) []byte {
			count := min(chunkElems, elems-uint64(i)*chunkElems)
			rng := newRNG(seed, index, uint64(i))
			for j := range count {
				binary.LittleEndian.PutUint32(buf[4*j:], math.Float32bits(rng.normal()*0.02))
			}
			return buf[:count*4]
		})
	})
}

// writeChunks writes n chunks made by gen, in order, making up to GOMAXPROCS of them at
// once. gen fills buf (chunkBytes long) and returns the part to write. The output depends
// only on gen, not on the number of workers.
func writeChunks(w io.Writer, n, chunkBytes int, gen func(i int, buf []byte) []byte) error {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		buf := make([]byte, chunkBytes)
		for i := range n {
			if _, err := w.Write(gen(i, buf)); err != nil {
				return err
			}
		}
		return nil
	}
	free := make(chan []byte, workers+1)
	for range workers + 1 {
		free <- make([]byte, chunkBytes)
	}
	results := make([]chan []byte, n)
	for i := range results {
		results[i] = make(chan []byte, 1)
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		for i := range n {
			select {
			case buf := <-free:
				go func() { results[i] <- gen(i, buf) }()
			case <-done:
				return
			}
		}
	}()
	for i := range n {
		b := <-results[i]
		if _, err := w.Write(b); err != nil {
			return err
		}
		free <- b[:cap(b)]
	}
	return nil
}

// Random Q8_0 blocks are made directly in the quantized domain: quants from q8Random
// (approximately normal, std ≈ 36.95) and a fixed scale, so the weights are approximately
// normal with std 0.02, as in F32, at a fraction of the cost of quantizing floats.
var q8Scale = f32ToF16(0.02 / 36.95)

// q8Random turns the low 32 bits of x into a quant: the sum of four uniform bytes, centered
// and divided by 4 (Irwin–Hall), clamped to Q8_0's [-127, 127].
func q8Random(x uint64) byte {
	s := int32(x&0xff+x>>8&0xff+x>>16&0xff+x>>24&0xff) - 510
	return byte(int8(max(s>>2, -127)))
}

// rng is splitmix64: tiny, fast, and seeded per chunk so chunks can be made in parallel.
type rng struct{ s uint64 }

func newRNG(seed, tensor, chunk uint64) *rng {
	r := &rng{s: seed ^ tensor*0xd1b54a32d192ed03 ^ chunk*0xabc98388fb8fac03}
	r.next()
	return r
}

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// normal returns an approximately standard normal value: the scaled sum of four uniform
// 16-bit numbers (Irwin–Hall), good enough for random weights and much faster than exact.
func (r *rng) normal() float32 {
	x := r.next()
	s := x&0xffff + x>>16&0xffff + x>>32&0xffff + x>>48
	const mean = 4 * 65535.0 / 2
	const std = 37837.23 // 65536 * sqrt(4/12)
	return (float32(s) - mean) / std
}

// f32ToF16 converts to IEEE half precision, rounding to nearest even.
func f32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	rawExp := int(b >> 23 & 0xff)
	mant := b & 0x7fffff
	if rawExp == 0xff {
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	exp := rawExp - 127 + 15
	switch {
	case exp >= 0x1f:
		return sign | 0x7c00
	case exp <= 0:
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint(14 - exp)
		half := mant >> shift
		rem := mant & (1<<shift - 1)
		halfway := uint32(1) << (shift - 1)
		if rem > halfway || rem == halfway && half&1 == 1 {
			half++
		}
		return sign | uint16(half)
	}
	half := uint32(exp)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || rem == 0x1000 && half&1 == 1 {
		half++ // a carry into the exponent is the correct rounding
	}
	return sign | uint16(half)
}

// writeLlamaHeader adds a llama model's metadata and tiny vocabulary for the shape o.
func writeLlamaHeader(w *Writer, o TinyLlamaOptions, freqBase float64) {
	w.AddString("general.architecture", "llama")
	w.AddString("general.name", o.Name)
	w.AddUint32("llama.context_length", uint32(o.ContextLength))
	w.AddUint32("llama.embedding_length", uint32(o.Embd))
	w.AddUint32("llama.block_count", uint32(o.Layers))
	w.AddUint32("llama.feed_forward_length", uint32(o.FF))
	w.AddUint32("llama.attention.head_count", uint32(o.Heads))
	w.AddUint32("llama.attention.head_count_kv", uint32(o.KVHeads))
	w.AddUint32("llama.rope.dimension_count", uint32(o.Embd/o.Heads))
	w.AddFloat32("llama.rope.freq_base", float32(freqBase))
	w.AddFloat32("llama.attention.layer_norm_rms_epsilon", 1e-5)
	if o.Q8 {
		w.AddUint32("general.file_type", 7) // LLAMA_FTYPE_MOSTLY_Q8_0
		w.AddUint32("general.quantization_version", 2)
	} else {
		w.AddUint32("general.file_type", 0) // LLAMA_FTYPE_ALL_F32
	}
	writeTinyTokenizer(w, o)
}

// writeTinyTokenizer writes the tiny SentencePiece vocabulary's tokenizer keys.
func writeTinyTokenizer(w *Writer, o TinyLlamaOptions) {
	tokens, scores, types := tinyVocab(o.Vocab)
	w.AddString("tokenizer.ggml.model", "llama")
	w.AddStrings("tokenizer.ggml.tokens", tokens)
	w.AddFloat32s("tokenizer.ggml.scores", scores)
	w.AddInt32s("tokenizer.ggml.token_type", types)
	w.AddUint32("tokenizer.ggml.unknown_token_id", 0)
	w.AddUint32("tokenizer.ggml.bos_token_id", 1)
	w.AddUint32("tokenizer.ggml.eos_token_id", 2)
	w.AddBool("tokenizer.ggml.add_bos_token", true)
	w.AddBool("tokenizer.ggml.add_eos_token", false)
	if o.ChatTemplate != "" {
		w.AddString("tokenizer.chat_template", o.ChatTemplate)
	}
}
