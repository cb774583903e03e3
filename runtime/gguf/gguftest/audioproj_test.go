package gguftest

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf"
)

// TestAudioProjector: the file reads back strictly, says it is a clip audio encoder with a
// voxtral projector, and its shapes follow the options (the projector's output is TextEmbd
// wide, its input StackFactor encoder positions).
func TestAudioProjector(t *testing.T) {
	for _, o := range []AudioProjectorOptions{{}, {TextEmbd: 128, MelBins: 128, StackFactor: 25, Layers: 1}} {
		path := filepath.Join(t.TempDir(), "mmproj.gguf")
		if err := WriteAudioProjector(path, o); err != nil {
			t.Fatal(err)
		}
		f, err := gguf.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want := o
		if err := want.defaults(); err != nil {
			t.Fatal(err)
		}
		if arch := f.Architecture(); arch != "clip" {
			t.Errorf("%+v: architecture %q", o, arch)
		}
		checkBool(t, f, "clip.has_vision_encoder", false)
		checkBool(t, f, "clip.has_audio_encoder", true)
		if p, _ := f.String("clip.projector_type"); p != "voxtral" {
			t.Errorf("projector type %q", p)
		}
		for key, v := range map[string]int{
			"clip.audio.num_mel_bins": want.MelBins, "clip.audio.projector.stack_factor": want.StackFactor,
			"clip.audio.embedding_length": want.Embd, "clip.audio.block_count": want.Layers,
			"clip.audio.attention.head_count": want.Heads, "clip.audio.feed_forward_length": want.FF,
		} {
			if got, ok := f.Uint(key); !ok || got != uint64(v) {
				t.Errorf("%+v: %s = %d, %v; want %d", o, key, got, ok, v)
			}
		}
		embd := uint64(want.Embd)
		checkDims(t, f, "a.conv1d.1.weight", 3, uint64(want.MelBins), embd)
		checkDims(t, f, "a.position_embd.weight", embd, 1500)
		checkDims(t, f, "mm.a.mlp.1.weight", embd*uint64(want.StackFactor), uint64(want.TextEmbd))
		checkDims(t, f, "mm.a.mlp.2.weight", uint64(want.TextEmbd), uint64(want.TextEmbd))
		if _, ok := f.Tensor(blockName("a", want.Layers-1, "attn_k.bias")); ok {
			t.Errorf("%+v: a key bias, which Whisper has not (mtmd asserts there is none)", o)
		}
		if _, ok := f.Tensor(blockName("a", want.Layers-1, "attn_q.bias")); !ok {
			t.Errorf("%+v: no query bias", o)
		}
		if got := o.WindowTokens(); got != 750/want.StackFactor {
			t.Errorf("%+v: WindowTokens() = %d, want %d", o, got, 750/want.StackFactor)
		}
	}
}

// TestAudioProjectorSeed: the weights are a pure function of the options.
func TestAudioProjectorSeed(t *testing.T) {
	write := func(seed int64) []byte {
		w, err := NewAudioProjector(AudioProjectorOptions{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		return writeBytes(t, w)
	}
	if !bytes.Equal(write(1), write(1)) {
		t.Error("the same options wrote different files")
	}
	if bytes.Equal(write(1), write(2)) {
		t.Error("different seeds wrote the same file")
	}
}

// TestAudioProjectorBadOptions: a stack factor that does not divide 750 would make mtmd abort
// the process at the first clip, so it is refused here.
func TestAudioProjectorBadOptions(t *testing.T) {
	for _, o := range []AudioProjectorOptions{
		{StackFactor: 8},
		{Embd: 30, Heads: 4},
		{MelBins: -1},
	} {
		if _, err := NewAudioProjector(o); err == nil {
			t.Errorf("%+v: no error", o)
		}
		if o.WindowTokens() != 0 {
			t.Errorf("%+v: WindowTokens() = %d for options that write no file", o, o.WindowTokens())
		}
	}
}
