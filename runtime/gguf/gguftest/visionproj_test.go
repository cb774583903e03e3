package gguftest

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf"
)

// TestVisionProjector: the file reads back strictly, says it is a clip vision encoder with an
// mlp projector, and its shapes follow the options (the projector's output is TextEmbd wide).
func TestVisionProjector(t *testing.T) {
	for _, o := range []VisionProjectorOptions{{}, {TextEmbd: 128, ImageSize: 64, PatchSize: 16, Layers: 1}} {
		path := filepath.Join(t.TempDir(), "mmproj.gguf")
		if err := WriteVisionProjector(path, o); err != nil {
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
		checkBool(t, f, "clip.has_vision_encoder", true)
		checkBool(t, f, "clip.has_audio_encoder", false)
		if p, _ := f.String("clip.projector_type"); p != "mlp" {
			t.Errorf("projector type %q", p)
		}
		for key, v := range map[string]int{
			"clip.vision.image_size": want.ImageSize, "clip.vision.patch_size": want.PatchSize,
			"clip.vision.embedding_length": want.Embd, "clip.vision.block_count": want.Layers,
			"clip.vision.attention.head_count": want.Heads, "clip.vision.feed_forward_length": want.FF,
		} {
			if got, ok := f.Uint(key); !ok || got != uint64(v) {
				t.Errorf("%+v: %s = %d, %v; want %d", o, key, got, ok, v)
			}
		}
		if mean, ok := f.Value("clip.vision.image_mean"); !ok || mean.Len() != 3 {
			t.Errorf("image mean %v", mean)
		}
		n := uint64(want.ImageSize / want.PatchSize)
		checkDims(t, f, "mm.2.weight", uint64(want.TextEmbd), uint64(want.TextEmbd))
		checkDims(t, f, "v.position_embd.weight", uint64(want.Embd), n*n)
		checkDims(t, f, "v.patch_embd.weight", uint64(want.PatchSize), uint64(want.PatchSize), 3, uint64(want.Embd))
		if _, ok := f.Tensor(blockName("v", want.Layers-1, "ffn_down.weight")); !ok {
			t.Errorf("%+v: the last block is missing", o)
		}
		if got := o.ImageTokens(); got != int(n*n) {
			t.Errorf("%+v: ImageTokens() = %d, want %d", o, got, n*n)
		}
	}
}

// TestVisionProjectorSeed: the weights are a pure function of the options.
func TestVisionProjectorSeed(t *testing.T) {
	write := func(seed int64) []byte {
		w, err := NewVisionProjector(VisionProjectorOptions{Seed: seed})
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

func TestVisionProjectorBadOptions(t *testing.T) {
	for _, o := range []VisionProjectorOptions{
		{ImageSize: 30, PatchSize: 8},
		{Embd: 30, Heads: 4},
		{TextEmbd: -1},
	} {
		if _, err := NewVisionProjector(o); err == nil {
			t.Errorf("%+v: no error", o)
		}
		if o.ImageTokens() != 0 {
			t.Errorf("%+v: ImageTokens() = %d for options that write no file", o, o.ImageTokens())
		}
	}
}

func checkBool(t *testing.T, f *gguf.File, key string, want bool) {
	t.Helper()
	if got, ok := f.Bool(key); !ok || got != want {
		t.Errorf("%s = %v, %v; want %v", key, got, ok, want)
	}
}

func checkDims(t *testing.T, f *gguf.File, name string, dims ...uint64) {
	t.Helper()
	info, ok := f.Tensor(name)
	if !ok {
		t.Errorf("no tensor %s", name)
		return
	}
	if len(info.Dims) != len(dims) {
		t.Errorf("%s dims %v, want %v", name, info.Dims, dims)
		return
	}
	for i := range dims {
		if info.Dims[i] != dims[i] {
			t.Errorf("%s dims %v, want %v", name, info.Dims, dims)
			return
		}
	}
}

func blockName(prefix string, i int, name string) string {
	return fmt.Sprintf("%s.blk.%d.%s", prefix, i, name)
}
