package gguftest

import "fmt"

// whisperFrames is the length of the window mtmd's audio encoders take: 30 s of log-mel
// frames at a 10 ms hop. Whisper's two convolutions halve it and Voxtral's pooling halves it
// again, so one window is 750 positions before the projector stacks them.
const (
	whisperFrames    = 3000
	whisperPositions = whisperFrames / 2
	voxtralPooled    = whisperPositions / 2
)

// AudioProjectorOptions shapes a random-weight Whisper-style audio encoder with a Voxtral
// projector. Zero fields take the defaults noted.
type AudioProjectorOptions struct {
	TextEmbd int // output width: the text model's embedding length; default 64 (stories260K, WriteTinyLlama)
	MelBins  int // log-mel bins mtmd computes (it builds the filter bank itself); default 80, Whisper's
	Embd     int // the encoder's width; default 32
	FF       int // the encoder's feed-forward length; default 64
	Layers   int // blocks; default 2
	Heads    int // attention heads; default 4
	// StackFactor is how many pooled positions the projector stacks into one embedding; it
	// must divide 750, so that mtmd's count of embeddings and its graph's agree. Default 15:
	// 50 embeddings a window.
	StackFactor int
	Seed        int64 // weights are a pure function of the options, seed included
	Name        string
}

func (o *AudioProjectorOptions) defaults() error {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	def(&o.TextEmbd, 64)
	def(&o.MelBins, 80)
	def(&o.Embd, 32)
	def(&o.FF, 64)
	def(&o.Layers, 2)
	def(&o.Heads, 4)
	def(&o.StackFactor, 15)
	if o.Name == "" {
		o.Name = "tiny-whisper-voxtral"
	}
	switch {
	case o.TextEmbd < 0 || o.MelBins < 0 || o.Embd < 0 || o.FF < 0 || o.Layers < 0 || o.Heads < 0 || o.StackFactor < 0:
		return fmt.Errorf("audio projector: negative size in %+v", *o)
	case o.Embd%o.Heads != 0:
		return fmt.Errorf("audio projector: width %d is not a multiple of the %d heads", o.Embd, o.Heads)
	case voxtralPooled%o.StackFactor != 0:
		// mtmd counts ⌊⌈3000/s⌉/4⌋ embeddings, its graph makes ⌈750/s⌉ and aborts when they differ.
		return fmt.Errorf("audio projector: stack factor %d does not divide %d", o.StackFactor, voxtralPooled)
	}
	return nil
}

// WindowTokens is the number of embeddings mtmd makes of each 30-second window of audio with
// this projector. mtmd pads a clip shorter than 31 s with silence to 31 s, computes one mel
// frame every 10 ms and keeps only whole 3000-frame windows, each its own chunk: a clip of
// up to 60 s is one window (its audio past 30 s dropped), up to 90 s two, and so on.
func (o AudioProjectorOptions) WindowTokens() int {
	if o.defaults() != nil {
		return 0
	}
	return voxtralPooled / o.StackFactor
}

// WriteAudioProjector writes a random-weight mmproj GGUF that llama.cpp's mtmd loads beside a
// text model of width TextEmbd and encodes 16 kHz audio with: a Whisper encoder (two 1-D
// convolutions, learned positions, pre-norm blocks) and Voxtral's projector (pooling, frame
// stacking, a two-layer GELU MLP), which, unlike Ultravox and Qwen2-Audio, wraps the audio in no
// special tokens a plain llama vocabulary lacks. Weights are scaled by their fan-in.
func WriteAudioProjector(path string, opts AudioProjectorOptions) error {
	w, err := NewAudioProjector(opts)
	if err != nil {
		return err
	}
	return w.WriteFile(path)
}

// NewAudioProjector returns a Writer holding the file WriteAudioProjector writes.
func NewAudioProjector(opts AudioProjectorOptions) (*Writer, error) {
	o := opts
	if err := o.defaults(); err != nil {
		return nil, err
	}
	w := NewWriter()
	addClipHeader(w, o.Name, false)
	w.AddString("clip.projector_type", "voxtral")
	addClipSizes(w, "audio", clipSizes{o.Embd, o.FF, o.Layers, o.Heads, o.TextEmbd})
	w.AddUint32("clip.audio.num_mel_bins", uint32(o.MelBins))
	w.AddUint32("clip.audio.projector.stack_factor", uint32(o.StackFactor))

	t := &clipTensors{w: w, seed: uint64(o.Seed)}
	embd, text := uint64(o.Embd), uint64(o.TextEmbd)
	// Kernels are width, channels in, channels out, in F16 as ggml's 1-D convolution needs; a
	// bias is one value a channel, shaped to broadcast over the frames.
	t.randomF16("a.conv1d.1.weight", 3, uint64(o.MelBins), embd)
	t.filled("a.conv1d.1.bias", 0, 1, embd)
	t.randomF16("a.conv1d.2.weight", 3, embd, embd)
	t.filled("a.conv1d.2.bias", 0, 1, embd)
	t.randomStd("a.position_embd.weight", 0.5, embd, whisperPositions)
	t.blocks("a", o.Layers, embd, uint64(o.FF), false)
	t.norm("a.post_ln", embd)
	t.random("mm.a.mlp.1.weight", embd*uint64(o.StackFactor), text)
	t.random("mm.a.mlp.2.weight", text, text)
	if w.err != nil {
		return nil, w.err
	}
	return w, nil
}
