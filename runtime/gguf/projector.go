package gguf

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// A multimodal projector (an "mmproj" GGUF, llama.cpp's tools/mtmd) turns an image or an audio
// clip into embeddings the text model reads in place of tokens. mtmd refuses one whose output
// width differs from the text model's input width; this file reads both from the headers, so
// the mismatch is found (and named) before a worker starts.

var (
	// ErrNotProjector means a file is not a multimodal projector (general.architecture is not
	// "clip", or it encodes neither images nor audio).
	ErrNotProjector = errors.New("not a multimodal projector (mmproj) GGUF")
	// ErrMismatch means a projector or an adapter does not fit the model it was given for.
	ErrMismatch = errors.New("does not fit the model")
)

// ProjectorFacts is what a projector's header says.
type ProjectorFacts struct {
	// Vision and Audio report whether it has an image encoder (clip.has_vision_encoder) and an
	// audio encoder (clip.has_audio_encoder).
	Vision, Audio bool
	// VisionType and AudioType are the projector types of each encoder (clip.projector_type,
	// else clip.vision.projector_type / clip.audio.projector_type; a vision encoder without
	// one is "mlp", as mtmd assumes). "" for an encoder it lacks.
	VisionType, AudioType string
	// Width is the width of the embeddings it produces: what mtmd compares (clip_n_mmproj_embd)
	// with the text model's InputWidth.
	Width int
}

// IsProjector reports whether the file is a multimodal projector: general.architecture "clip".
func (f *File) IsProjector() bool { return f.Architecture() == "clip" }

// Projector reads the projector's facts. An error says what the engine would refuse: not a
// clip file, no encoder, a projector type the pinned mtmd does not know, a missing output
// tensor, or a vision and an audio encoder of different widths.
func (f *File) Projector() (ProjectorFacts, error) {
	if !f.IsProjector() {
		arch := f.Architecture()
		if arch == "" {
			arch = "none"
		}
		return ProjectorFacts{}, fmt.Errorf("general.architecture is %q, not \"clip\": %w", arch, ErrNotProjector)
	}
	var p ProjectorFacts
	p.Vision, _ = f.Bool("clip.has_vision_encoder")
	p.Audio, _ = f.Bool("clip.has_audio_encoder")
	if !p.Vision && !p.Audio {
		return ProjectorFacts{}, fmt.Errorf("it has neither clip.has_vision_encoder nor clip.has_audio_encoder: %w", ErrNotProjector)
	}
	common, _ := f.String("clip.projector_type")
	widths := map[string]int{}
	for _, m := range []struct {
		on   bool
		name string
		typ  *string
	}{{p.Vision, "vision", &p.VisionType}, {p.Audio, "audio", &p.AudioType}} {
		if !m.on {
			continue
		}
		t := common
		if t == "" {
			t, _ = f.String("clip." + m.name + ".projector_type")
		}
		if t == "" && m.name == "vision" {
			t = "mlp"
		}
		if t == "qwen2.5o" { // the legacy omni type, split by modality as mtmd does
			t = map[string]string{"vision": "qwen2.5vl_merger", "audio": "qwen2a"}[m.name]
		}
		*m.typ = t
		if err := f.encoderSizes(m.name); err != nil {
			return ProjectorFacts{}, fmt.Errorf("%s encoder: %w", m.name, err)
		}
		w, err := f.projectionWidth(t)
		if err != nil {
			return ProjectorFacts{}, fmt.Errorf("%s encoder: %w", m.name, err)
		}
		widths[m.name] = w
	}
	if p.Vision && p.Audio && widths["vision"] != widths["audio"] {
		return ProjectorFacts{}, fmt.Errorf("its vision encoder gives %d-wide embeddings and its audio encoder %d: %w",
			widths["vision"], widths["audio"], ErrNotProjector)
	}
	p.Width = max(widths["vision"], widths["audio"])
	return p, nil
}

// encoderSizes says why an encoder's sizes would crash mtmd, nil when they would not: it warms
// the encoder up at load with them, and a zero patch or width, heads that do not divide the
// width or an image smaller than a patch fail a GGML_ASSERT there (or divide by zero). Each is
// checked when present; clip.cpp refuses a missing one itself.
func (f *File) encoderSizes(modality string) error {
	key := func(name string) string { return "clip." + modality + "." + name }
	embd, hasEmbd := f.Uint(key("embedding_length"))
	heads, hasHeads := f.Uint(key("attention.head_count"))
	switch {
	case hasEmbd && embd == 0:
		return fmt.Errorf("%s is 0: %w", key("embedding_length"), ErrNotProjector)
	case hasHeads && heads == 0:
		return fmt.Errorf("%s is 0: %w", key("attention.head_count"), ErrNotProjector)
	case hasEmbd && hasHeads && embd%heads != 0:
		return fmt.Errorf("%s %d is not a multiple of its %d attention heads: %w", key("embedding_length"), embd, heads, ErrNotProjector)
	}
	if modality != "vision" {
		return nil
	}
	patch, hasPatch := f.Uint(key("patch_size"))
	image, hasImage := f.Uint(key("image_size"))
	switch {
	case hasPatch && patch == 0:
		return fmt.Errorf("%s is 0: %w", key("patch_size"), ErrNotProjector)
	case hasImage && hasPatch && image < patch:
		return fmt.Errorf("%s %d is smaller than a patch (%d): %w", key("image_size"), image, patch, ErrNotProjector)
	}
	return nil
}

// projectionOutput says which tensor holds a projector type's output width: the dimension dim
// (ggml order) of tensor, as clip.cpp's clip_n_mmproj_embd reads it.
type projectionOutput struct {
	tensor string
	dim    int
}

// projectionOutputs covers every projector type of the pinned mtmd (clip-impl.h's names).
var projectionOutputs = map[string]projectionOutput{
	"mlp":              {"mm.2.weight", 1}, // "mm.3.bias" when mm.3.weight exists (Yi-style)
	"ldp":              {"mm.model.mb_block.1.block.2.1.bias", 0},
	"ldpv2":            {"mm.model.peg.0.bias", 0},
	"resampler":        {"resampler.proj.weight", 0},
	"adapter":          {"adapter.linear.dense_4h_to_h.weight", 1},
	"qwen2vl_merger":   {"mm.2.bias", 0},
	"qwen2.5vl_merger": {"mm.2.bias", 0},
	"qwen3vl_merger":   {"mm.2.bias", 0}, // times 1 + the deepstack layers
	"gemma3":           {"mm.input_projection.weight", 0},
	"idefics3":         {"mm.model.fc.weight", 1},
	"pixtral":          {"mm.2.weight", 1},
	"lightonocr":       {"mm.2.weight", 1},
	"lfm2":             {"mm.2.weight", 1},
	"kimivl":           {"mm.2.weight", 1},
	"ultravox":         {"mm.a.mlp.2.weight", 1},
	"voxtral":          {"mm.a.mlp.2.weight", 1},
	"glma":             {"mm.a.mlp.2.weight", 1},
	"internvl":         {"mm.model.mlp.3.weight", 1},
	"llama4":           {"mm.model.fc.weight", 1},
	"qwen2a":           {"mm.a.fc.weight", 1},
	"cogvlm":           {"mm.down.weight", 1},
	"glm4v":            {"mm.down.weight", 1},
	"janus_pro":        {"mm.1.bias", 0},
}

// projectionWidth is the output width of a projector of type typ.
func (f *File) projectionWidth(typ string) (int, error) {
	out, ok := projectionOutputs[typ]
	if !ok {
		return 0, fmt.Errorf("projector type %q is not one the engine knows: %w", typ, ErrNotProjector)
	}
	if typ == "mlp" {
		if _, yi := f.Tensor("mm.3.weight"); yi {
			out = projectionOutput{"mm.3.bias", 0}
		}
	}
	t, ok := f.Tensor(out.tensor)
	if !ok || len(t.Dims) <= out.dim {
		return 0, fmt.Errorf("projector type %s needs the tensor %s, which it lacks: %w", typ, out.tensor, ErrNotProjector)
	}
	w := t.Dims[out.dim]
	if typ == "qwen3vl_merger" {
		w *= uint64(1 + f.deepstackLayers())
	}
	if w == 0 || w > math.MaxInt32 {
		return 0, fmt.Errorf("tensor %s gives an output width of %d: %w", out.tensor, w, ErrNotProjector)
	}
	return int(w), nil
}

// deepstackLayers counts the vision blocks with a deepstack merger (Qwen3-VL), whose outputs
// widen the projection.
func (f *File) deepstackLayers() int {
	n := 0
	for _, t := range f.Tensors {
		if strings.HasPrefix(t.Name, "v.deepstack.") && strings.HasSuffix(t.Name, ".fc1.weight") {
			n++
		}
	}
	return n
}

// InputWidth is the width of the embeddings a text model takes in (llama_model_n_embd_inp):
// <arch>.embedding_length, widened by <arch>.n_deepstack_layers; 0 when absent.
func (f *File) InputWidth() int {
	arch := f.Architecture()
	n, ok := f.Uint(arch + ".embedding_length")
	if !ok || n > math.MaxInt32 {
		return 0
	}
	if deep, ok := f.Uint(arch + ".n_deepstack_layers"); ok && deep < 1<<10 {
		n += n * deep
	}
	if n > math.MaxInt32 {
		return 0
	}
	return int(n)
}

// FitProjector says why the projector proj does not fit the text model (nil when it does):
// what mtmd checks when it loads them together.
func FitProjector(model, proj *File) error {
	if model.IsProjector() {
		return mismatch("the model is itself a projector; pass the text model it belongs to")
	}
	p, err := proj.Projector()
	if err != nil {
		return err
	}
	in := model.InputWidth()
	if in == 0 {
		return mismatch("the model (%s) has no %s.embedding_length to compare with",
			model.Architecture(), model.Architecture())
	}
	if in != p.Width {
		return mismatch("the projector gives %d-wide embeddings but the model (%s) takes %d-wide ones",
			p.Width, model.Architecture(), in)
	}
	return nil
}

// CheckProjector reads the text model at modelPath and the projector at projPath and says why
// they cannot load together, naming both files; nil when they can.
func CheckProjector(modelPath, projPath string) error {
	model, err := ReadFile(modelPath)
	if err != nil {
		return fmt.Errorf("the model of the projector %s: %w", projPath, err)
	}
	proj, err := ReadFile(projPath)
	if err != nil {
		return fmt.Errorf("the projector of the model %s: %w", modelPath, err)
	}
	err = FitProjector(model, proj)
	switch {
	case errors.Is(err, ErrNotProjector):
		return fmt.Errorf("%s cannot be the projector of the model %s: %w", projPath, modelPath, err)
	case err != nil:
		return fmt.Errorf("the projector %s does not fit the model %s: %w", projPath, modelPath, err)
	}
	return nil
}

// mismatchError says how a file does not fit a model; it is ErrMismatch without repeating it.
type mismatchError struct{ msg string }

func (e *mismatchError) Error() string        { return e.msg }
func (e *mismatchError) Is(target error) bool { return target == ErrMismatch }

func mismatch(format string, args ...any) error {
	return &mismatchError{msg: fmt.Sprintf(format, args...)}
}
