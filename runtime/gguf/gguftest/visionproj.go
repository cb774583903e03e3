package gguftest

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/superfluid/superfluid/runtime/gguf"
)

// VisionProjectorOptions shapes a random-weight CLIP vision tower with a LLaVA-1.5 ("mlp")
// projector. Zero fields take the defaults noted.
type VisionProjectorOptions struct {
	TextEmbd  int   // output width: the text model's embedding length; default 64 (stories260K, WriteTinyLlama)
	ImageSize int   // the square every image is resized to; default 32
	PatchSize int   // patch side; default 8, so an image is (32/8)² = 16 embeddings
	Embd      int   // the tower's width; default 32
	FF        int   // the tower's feed-forward length; default 64
	Layers    int   // blocks; default 2 (LLaVA reads the second to last, so the last is loaded but not run)
	Heads     int   // attention heads; default 4
	Seed      int64 // weights are a pure function of the options, seed included
	Name      string
}

func (o *VisionProjectorOptions) defaults() error {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	def(&o.TextEmbd, 64)
	def(&o.ImageSize, 32)
	def(&o.PatchSize, 8)
	def(&o.Embd, 32)
	def(&o.FF, 64)
	def(&o.Layers, 2)
	def(&o.Heads, 4)
	if o.Name == "" {
		o.Name = "tiny-clip-vision"
	}
	switch {
	case o.TextEmbd < 0 || o.ImageSize < 0 || o.PatchSize < 0 || o.Embd < 0 || o.FF < 0 || o.Layers < 0 || o.Heads < 0:
		return fmt.Errorf("vision projector: negative size in %+v", *o)
	case o.ImageSize%o.PatchSize != 0:
		return fmt.Errorf("vision projector: image size %d is not a multiple of the patch size %d", o.ImageSize, o.PatchSize)
	case o.Embd%o.Heads != 0:
		return fmt.Errorf("vision projector: width %d is not a multiple of the %d heads", o.Embd, o.Heads)
	}
	return nil
}

// ImageTokens is the number of embeddings mtmd makes of any image with this projector: it
// resizes (and pads) every image to ImageSize², one embedding per patch, no class token.
func (o VisionProjectorOptions) ImageTokens() int {
	if o.defaults() != nil {
		return 0
	}
	n := o.ImageSize / o.PatchSize
	return n * n
}

// WriteVisionProjector writes a random-weight mmproj GGUF that llama.cpp's mtmd loads beside a
// text model of width TextEmbd and encodes images with: a CLIP ViT (pre-norm blocks, learned
// positions, no class token) and the two-layer GELU projector of LLaVA 1.5, linear positions.
// The weights are scaled by their fan-in so activations stay of order one: different images
// give different, finite embeddings.
func WriteVisionProjector(path string, opts VisionProjectorOptions) error {
	w, err := NewVisionProjector(opts)
	if err != nil {
		return err
	}
	return w.WriteFile(path)
}

// NewVisionProjector returns a Writer holding the file WriteVisionProjector writes.
func NewVisionProjector(opts VisionProjectorOptions) (*Writer, error) {
	o := opts
	if err := o.defaults(); err != nil {
		return nil, err
	}
	w := NewWriter()
	addClipHeader(w, o.Name, true)
	w.AddString("clip.projector_type", "mlp")
	addClipSizes(w, "vision", clipSizes{o.Embd, o.FF, o.Layers, o.Heads, o.TextEmbd})
	w.AddUint32("clip.vision.image_size", uint32(o.ImageSize))
	w.AddUint32("clip.vision.patch_size", uint32(o.PatchSize))
	// OpenAI CLIP's normalization, as LLaVA's preprocessor config has it.
	w.AddFloat32s("clip.vision.image_mean", []float32{0.48145466, 0.4578275, 0.40821073})
	w.AddFloat32s("clip.vision.image_std", []float32{0.26862954, 0.26130258, 0.27577711})

	t := &clipTensors{w: w, seed: uint64(o.Seed)}
	embd, patch := uint64(o.Embd), uint64(o.PatchSize)
	patches := uint64(o.ImageSize/o.PatchSize) * uint64(o.ImageSize/o.PatchSize)
	t.random("v.patch_embd.weight", patch, patch, 3, embd) // a conv kernel: KW, KH, channels in, out
	t.filled("v.patch_embd.bias", 0, embd)
	t.randomStd("v.position_embd.weight", 0.5, embd, patches)
	t.norm("v.pre_ln", embd)
	t.blocks("v", o.Layers, embd, uint64(o.FF), true)
	text := uint64(o.TextEmbd)
	t.random("mm.0.weight", embd, text)
	t.filled("mm.0.bias", 0, text)
	t.random("mm.2.weight", text, text)
	t.filled("mm.2.bias", 0, text)
	if w.err != nil {
		return nil, w.err
	}
	return w, nil
}

// addClipHeader adds what every mmproj file has: the clip architecture and which encoders it
// holds (the catalog reads these to say vision or audio).
func addClipHeader(w *Writer, name string, vision bool) {
	w.AddString("general.architecture", "clip")
	w.AddString("general.name", name)
	w.AddUint32("general.file_type", 0) // F32, but for the F16 kernels an audio encoder's convolutions need
	w.AddBool("clip.has_vision_encoder", vision)
	w.AddBool("clip.has_audio_encoder", !vision)
}

// clipSizes are an encoder's hyperparameters that clip.cpp requires under clip.vision.* or
// clip.audio.*.
type clipSizes struct{ embd, ff, layers, heads, projection int }

func addClipSizes(w *Writer, modality string, s clipSizes) {
	p := "clip." + modality + "."
	w.AddUint32(p+"embedding_length", uint32(s.embd))
	w.AddUint32(p+"feed_forward_length", uint32(s.ff))
	w.AddUint32(p+"block_count", uint32(s.layers))
	w.AddUint32(p+"attention.head_count", uint32(s.heads))
	w.AddFloat32(p+"attention.layer_norm_epsilon", 1e-5)
	w.AddUint32(p+"projection_dim", uint32(s.projection))
}

// clipTensors adds an encoder's tensors, each random one from its own stream of the seed.
type clipTensors struct {
	w     *Writer
	seed  uint64
	index uint64
}

// random adds a weight of approximately normal values with std 1/√fan-in, the fan-in being
// every dimension but the last (a matrix's row length, a kernel's window times its channels).
func (t *clipTensors) random(name string, dims ...uint64) {
	t.randomStd(name, float32(1/math.Sqrt(float64(fanIn(dims)))), dims...)
}

func fanIn(dims []uint64) uint64 {
	n := uint64(1)
	for _, d := range dims[:len(dims)-1] {
		n *= d
	}
	return n
}

func (t *clipTensors) randomStd(name string, std float32, dims ...uint64) {
	t.w.AddTensorF32(name, dims, t.normals(std, dims))
}

// randomF16 is random stored as F16, for the kernels of ggml_conv_1d, which needs them so.
func (t *clipTensors) randomF16(name string, dims ...uint64) {
	x := t.normals(float32(1/math.Sqrt(float64(fanIn(dims)))), dims)
	b := make([]byte, 2*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint16(b[2*i:], f32ToF16(v))
	}
	t.w.AddTensor(name, gguf.TypeF16, dims, b)
}

// normals returns the next tensor's values: approximately normal with the given std.
func (t *clipTensors) normals(std float32, dims []uint64) []float32 {
	t.index++
	n := uint64(1)
	for _, d := range dims {
		n *= d
	}
	rng := newRNG(t.seed, t.index, 0)
	data := make([]float32, n)
	for i := range data {
		data[i] = rng.normal() * std
	}
	return data
}

func (t *clipTensors) filled(name string, v float32, dims ...uint64) {
	n := uint64(1)
	for _, d := range dims {
		n *= d
	}
	data := make([]float32, n)
	for i := range data {
		data[i] = v
	}
	t.w.AddTensorF32(name, dims, data)
}

// norm adds a layer norm that starts as the identity: weight one, bias zero.
func (t *clipTensors) norm(name string, n uint64) {
	t.filled(name+".weight", 1, n)
	t.filled(name+".bias", 0, n)
}

// blocks adds layers pre-norm transformer blocks under prefix ("v" or "a") in clip.cpp's
// names. Whisper's key projection has no bias, so kBias says whether to write one.
func (t *clipTensors) blocks(prefix string, layers int, embd, ff uint64, kBias bool) {
	for i := range layers {
		p := fmt.Sprintf("%s.blk.%d.", prefix, i)
		t.norm(p+"ln1", embd)
		for _, m := range []string{"attn_q", "attn_k", "attn_v", "attn_out"} {
			t.random(p+m+".weight", embd, embd)
			if m != "attn_k" || kBias {
				t.filled(p+m+".bias", 0, embd)
			}
		}
		t.norm(p+"ln2", embd)
		t.random(p+"ffn_up.weight", embd, ff)
		t.filled(p+"ffn_up.bias", 0, ff)
		t.random(p+"ffn_down.weight", ff, embd)
		t.filled(p+"ffn_down.bias", 0, embd)
	}
}
