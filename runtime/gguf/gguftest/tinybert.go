package gguftest

import (
	"fmt"
	"strings"

	"github.com/superfluid/superfluid/runtime/gguf"
)

// TinyBERTOptions shapes a random-weight BERT embedding model. Zero fields take the defaults
// noted.
type TinyBERTOptions struct {
	// VocabFrom is a GGUF file whose BERT (WordPiece) tokenizer the model takes, such as a
	// vocab-only ggml-vocab-bert-bge.gguf; "" uses a small built-in WordPiece vocabulary.
	VocabFrom string
	Embd      int // embedding length (the vectors' size); default 32
	Layers    int // blocks; default 2
	Heads     int // attention heads; default 2
	FF        int // feed-forward length; default 64
	// ContextLength is the training context, and the number of position embeddings; default 512.
	ContextLength int
	// Pooling is bert.pooling_type: "mean" (the default), "cls", "rank" (a reranker: adds a
	// classification head with one score) or "none" (no pooling key: the model embeds by its
	// architecture alone).
	Pooling string
	Seed    int64  // weights are a pure function of the options, seed included
	Name    string // general.name; default "tiny-bert"
}

func (o *TinyBERTOptions) defaults() error {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	def(&o.Embd, 32)
	def(&o.Layers, 2)
	def(&o.Heads, 2)
	def(&o.FF, 64)
	def(&o.ContextLength, 512)
	if o.Name == "" {
		o.Name = "tiny-bert"
	}
	if o.Pooling == "" {
		o.Pooling = "mean"
	}
	switch {
	case o.Embd < 0 || o.Layers < 0 || o.Heads <= 0 || o.FF < 0 || o.ContextLength < 0:
		return fmt.Errorf("tiny bert: bad size in %+v", *o)
	case o.Embd%o.Heads != 0:
		return fmt.Errorf("tiny bert: embedding length %d is not a multiple of the %d heads", o.Embd, o.Heads)
	}
	return nil
}

// tinyBERTPooling maps TinyBERTOptions.Pooling to bert.pooling_type; -1 writes no key.
var tinyBERTPooling = map[string]int{"none": -1, "mean": gguf.PoolingMean, "cls": gguf.PoolingCLS, "rank": gguf.PoolingRank}

// WriteTinyBERT writes a complete random-weight BERT model to path: llama.cpp loads it and
// embeds (meaningless but deterministic vectors: equal inputs give equal vectors, different
// inputs different ones). With Pooling "rank" it is a reranker scoring sentence pairs.
func WriteTinyBERT(path string, opts TinyBERTOptions) error {
	w, err := NewTinyBERT(opts)
	if err != nil {
		return err
	}
	return w.WriteFile(path)
}

// NewTinyBERT returns a Writer holding the model WriteTinyBERT writes.
func NewTinyBERT(opts TinyBERTOptions) (*Writer, error) {
	o := opts
	if err := o.defaults(); err != nil {
		return nil, err
	}
	pooling, ok := tinyBERTPooling[o.Pooling]
	if !ok {
		return nil, fmt.Errorf("tiny bert: pooling %q is not none, mean, cls or rank", o.Pooling)
	}
	w := NewWriter()
	w.AddString("general.architecture", "bert")
	w.AddString("general.name", o.Name)
	w.AddUint32("general.file_type", 0) // LLAMA_FTYPE_ALL_F32
	w.AddUint32("bert.context_length", uint32(o.ContextLength))
	w.AddUint32("bert.embedding_length", uint32(o.Embd))
	w.AddUint32("bert.feed_forward_length", uint32(o.FF))
	w.AddUint32("bert.block_count", uint32(o.Layers))
	w.AddUint32("bert.attention.head_count", uint32(o.Heads))
	w.AddFloat32("bert.attention.layer_norm_epsilon", 1e-12)
	w.AddBool("bert.attention.causal", false)
	if pooling >= 0 {
		w.AddUint32("bert.pooling_type", uint32(pooling))
	}
	vocab, err := addBERTVocab(w, o.VocabFrom)
	if err != nil {
		return nil, err
	}

	embd, ff := uint64(o.Embd), uint64(o.FF)
	seed, index := uint64(o.Seed), uint64(0)
	matrix := func(name string, dims ...uint64) {
		index++
		addRandomTensor(w, name, dims, false, seed, index)
	}
	filled := func(name string, n uint64, v float32) {
		data := make([]float32, n)
		for i := range data {
			data[i] = v
		}
		w.AddTensorF32(name, []uint64{n}, data)
	}
	norm := func(name string) {
		filled(name+".weight", embd, 1)
		filled(name+".bias", embd, 0)
	}
	matrix("token_embd.weight", embd, uint64(vocab))
	matrix("token_types.weight", embd, 2)
	matrix("position_embd.weight", embd, uint64(o.ContextLength))
	norm("token_embd_norm")
	for i := range o.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		for _, m := range []string{"attn_q", "attn_k", "attn_v", "attn_output"} {
			matrix(p+m+".weight", embd, embd)
			filled(p+m+".bias", embd, 0)
		}
		norm(p + "attn_output_norm")
		matrix(p+"ffn_up.weight", embd, ff)
		filled(p+"ffn_up.bias", ff, 0)
		matrix(p+"ffn_down.weight", ff, embd)
		filled(p+"ffn_down.bias", embd, 0)
		norm(p + "layer_output_norm")
	}
	if pooling == gguf.PoolingRank {
		matrix("cls.weight", embd, embd)
		filled("cls.bias", embd, 0)
		matrix("cls.output.weight", embd, 1)
		filled("cls.output.bias", 1, 0)
	}
	if w.err != nil {
		return nil, w.err
	}
	return w, nil
}

// bertVocabKeys are the tokenizer keys a BERT model takes from its vocabulary file.
var bertVocabKeys = []string{
	"tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
	"tokenizer.ggml.token_type_count", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.cls_token_id",
	"tokenizer.ggml.seperator_token_id", "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id",
	"tokenizer.ggml.mask_token_id",
}

// addBERTVocab adds a WordPiece tokenizer, from a GGUF file or built in, and returns its size.
func addBERTVocab(w *Writer, from string) (int, error) {
	if from == "" {
		tokens, types := tinyWordPiece()
		w.AddString("tokenizer.ggml.model", "bert")
		w.AddStrings("tokenizer.ggml.tokens", tokens)
		w.AddInt32s("tokenizer.ggml.token_type", types)
		w.AddUint32("tokenizer.ggml.token_type_count", 2)
		w.AddUint32("tokenizer.ggml.padding_token_id", 0)
		w.AddUint32("tokenizer.ggml.unknown_token_id", 1)
		w.AddUint32("tokenizer.ggml.bos_token_id", 2) // [CLS]
		w.AddUint32("tokenizer.ggml.seperator_token_id", 3)
		w.AddUint32("tokenizer.ggml.mask_token_id", 4)
		return len(tokens), w.err
	}
	f, err := gguf.ReadFile(from)
	if err != nil {
		return 0, fmt.Errorf("tiny bert vocabulary: %w", err)
	}
	if model, _ := f.String("tokenizer.ggml.model"); model != "bert" {
		return 0, fmt.Errorf("tiny bert vocabulary: %s has a %q tokenizer, not bert (WordPiece)", from, model)
	}
	tokens, _ := f.Strings("tokenizer.ggml.tokens")
	for _, key := range bertVocabKeys {
		if v, ok := f.Value(key); ok {
			w.AddValue(key, v)
		}
	}
	if _, ok := f.Value("tokenizer.ggml.token_type_count"); !ok {
		w.AddUint32("tokenizer.ggml.token_type_count", 2)
	}
	return len(tokens), w.err
}

// tinyWordPiece is a small WordPiece vocabulary in llama.cpp's GGUF form (a word's first piece
// starts with "▁", continuations have no "##"): the five specials, then punctuation, letters
// and words, so that every lowercase ASCII word tokenizes.
func tinyWordPiece() ([]string, []int32) {
	tokens := []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
	types := []int32{3, 3, 3, 3, 3} // LLAMA_TOKEN_TYPE_CONTROL
	seen := map[string]bool{}
	add := func(tok string) {
		if !seen[tok] {
			seen[tok] = true
			tokens = append(tokens, tok)
			types = append(types, 1) // LLAMA_TOKEN_TYPE_NORMAL
		}
	}
	const sp = "▁"
	for _, r := range ".,!?'\"-:;()0123456789" {
		add(sp + string(r))
	}
	for _, r := range "abcdefghijklmnopqrstuvwxyz" {
		add(sp + string(r))
		add(string(r))
	}
	for _, word := range strings.Fields(strings.ToLower(tinyWords)) {
		add(sp + word)
	}
	return tokens, types
}
