package gguftest

import "fmt"

// WriteTinyMamba writes a random-weight Mamba (recurrent) model with the tiny llama
// vocabulary: llama.cpp loads it and generates with it. Its memory cannot drop the tail of a
// sequence (llama_memory_seq_rm returns false), unlike a KV cache.
func WriteTinyMamba(path string, opts TinyLlamaOptions) error {
	o := opts
	if err := o.defaults(); err != nil {
		return err
	}
	w := NewWriter()
	w.AddString("general.architecture", "mamba")
	w.AddString("general.name", "tiny-mamba")
	w.AddUint32("general.file_type", 0) // LLAMA_FTYPE_ALL_F32
	writeTinyTokenizer(w, o)
	embd, vocab := uint64(o.Embd), uint64(o.Vocab)
	inner, state, rank, conv := 2*embd, uint64(16), uint64(4), uint64(4)
	w.AddUint32("mamba.context_length", uint32(o.ContextLength))
	w.AddUint32("mamba.embedding_length", uint32(embd))
	w.AddUint32("mamba.block_count", uint32(o.Layers))
	w.AddUint32("mamba.feed_forward_length", 0)
	w.AddUint32("mamba.attention.head_count", 0)
	w.AddUint32("mamba.ssm.conv_kernel", uint32(conv))
	w.AddUint32("mamba.ssm.inner_size", uint32(inner))
	w.AddUint32("mamba.ssm.state_size", uint32(state))
	w.AddUint32("mamba.ssm.time_step_rank", uint32(rank))
	w.AddFloat32("mamba.attention.layer_norm_rms_epsilon", 1e-5)
	seed, index := uint64(o.Seed), uint64(0)
	matrix := func(name string, dims ...uint64) {
		index++
		addRandomTensor(w, name, dims, false, seed, index)
	}
	fill := func(name string, v float32, dims ...uint64) {
		n := uint64(1)
		for _, d := range dims {
			n *= d
		}
		data := make([]float32, n)
		for i := range data {
			data[i] = v
		}
		w.AddTensorF32(name, dims, data)
	}
	matrix("token_embd.weight", embd, vocab)
	for i := range o.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		fill(p+"attn_norm.weight", 1, embd)
		matrix(p+"ssm_in.weight", embd, 2*inner)
		matrix(p+"ssm_conv1d.weight", conv, inner)
		fill(p+"ssm_conv1d.bias", 0, inner)
		matrix(p+"ssm_x.weight", inner, rank+2*state)
		matrix(p+"ssm_dt.weight", rank, inner)
		fill(p+"ssm_dt.bias", 0, inner)
		fill(p+"ssm_a", -1, state, inner)
		fill(p+"ssm_d", 1, inner)
		matrix(p+"ssm_out.weight", inner, embd)
	}
	fill("output_norm.weight", 1, embd)
	matrix("output.weight", embd, vocab)
	if w.err != nil {
		return w.err
	}
	return w.WriteFile(path)
}
