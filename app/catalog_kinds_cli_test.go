package app

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
)

// stubProjector writes gguftest's vision projector for a text model of width embd.
func stubProjector(t *testing.T, path string, embd int) {
	t.Helper()
	if err := gguftest.WriteVisionProjector(path, gguftest.VisionProjectorOptions{TextEmbd: embd}); err != nil {
		t.Fatal(err)
	}
}

// stubAdapter writes a rank-2 LoRA adapter of a llama's blk.0.attn_q.weight (width embd).
func stubAdapter(t *testing.T, path string, embd int) {
	t.Helper()
	w := gguftest.NewWriter()
	w.AddString("general.architecture", "llama")
	w.AddString("general.type", "adapter")
	w.AddString("adapter.type", "lora")
	n := uint64(embd)
	w.AddTensorF32("blk.0.attn_q.weight.lora_a", []uint64{n, 2}, make([]float32, 2*embd))
	w.AddTensorF32("blk.0.attn_q.weight.lora_b", []uint64{2, n}, make([]float32, 2*embd))
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
}

// TestAddProjectorsAndAdapters: superfluid add finds a projector beside the model, refuses one
// for another text model (naming both), refuses a projector as a model, registers an adapter
// under the model it fits (or refuses the --base it does not fit), and list shows each model's
// inputs with its adapters under it; serve --mmproj checks the same way, and an adapter is no
// model to serve.
func TestAddProjectorsAndAdapters(t *testing.T) {
	// 96 wide: the bundled model (64 wide) fits none of these files.
	data, files := t.TempDir(), t.TempDir()
	model, wide := filepath.Join(files, "seer.gguf"), filepath.Join(files, "wide.gguf")
	for path, embd := range map[string]int{model: 96, wide: 128} {
		if err := gguftest.WriteTinyLlama(path, gguftest.TinyLlamaOptions{Embd: embd}); err != nil {
			t.Fatal(err)
		}
	}
	beside := filepath.Join(files, "mmproj-seer-F16.gguf")
	stubProjector(t, beside, 96)
	other := filepath.Join(t.TempDir(), "mmproj-other.gguf")
	stubProjector(t, other, 128)
	lora, lora2 := filepath.Join(files, "style.gguf"), filepath.Join(files, "tone.gguf")
	stubAdapter(t, lora, 96)
	stubAdapter(t, lora2, 96)

	steps := []struct {
		name string
		args []string
		code int
		want []string // in stdout (code 0) or stderr
	}{
		{"a projector for another model", []string{"add", "--mmproj", other, model}, 2, []string{other, model, "128-wide", "96-wide"}},
		{"the projector found beside", []string{"add", model}, 0, []string{"added seer", "projector " + beside + ": text+vision"}},
		{"a projector as a model", []string{"add", beside}, 2, []string{"multimodal projector", "--mmproj"}},
		{"another model", []string{"add", wide}, 0, []string{"added wide"}},
		{"an adapter finds its base", []string{"add", lora}, 0, []string{"added LoRA adapter style", "of seer"}},
		{"an adapter for another base", []string{"add", "--base", "wide", lora2}, 2, []string{lora2, wide, "blk.0.attn_q.weight"}},
		{"a base for a model", []string{"add", "--base", "seer", "--name", "again", wide}, 2, []string{"not a LoRA adapter"}},
		{"serve --mmproj for another model", []string{"serve", "--port", "0", "--mmproj", other, model}, 2, []string{other, model}},
		{"serve --mmproj without a model", []string{"serve", "--port", "0", "--mmproj", other}, 2, []string{"--mmproj is the projector of the model serve loads"}},
		{"serve an adapter", []string{"serve", "--port", "0", "style"}, 2, []string{"LoRA adapter of seer"}},
	}
	for _, s := range steps {
		code, out, errOut := cli(append(s.args, "--data-dir", data)...)
		where := out
		if s.code != 0 {
			where = errOut
		}
		if code != s.code {
			t.Fatalf("%s: exit %d, want %d; stdout %q stderr %q", s.name, code, s.code, out, errOut)
		}
		for _, w := range s.want {
			if !strings.Contains(where, w) {
				t.Errorf("%s: %q lacks %q", s.name, where, w)
			}
		}
	}
	code, out, errOut := cli("list", "--data-dir", data)
	if code != 0 {
		t.Fatalf("list: %d %s", code, errOut)
	}
	// The adapter's row follows its base's; each model says what it takes.
	for _, re := range []string{`(?m)^seer\s.*\stext\+vision\s.*\n  └ style\s.*\slora\s`, `(?m)^wide\s.*\stext\s`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("list does not match %s:\n%s", re, out)
		}
	}
	if strings.Contains(out, "mmproj") || strings.Contains(out, "tone") {
		t.Errorf("list shows a projector or the refused adapter:\n%s", out)
	}
	if code, out, errOut := cli("rm", "style", "--data-dir", data); code != 0 || !strings.Contains(out, "removed style") {
		t.Errorf("rm an adapter: %d %q %q", code, out, errOut)
	}
}
