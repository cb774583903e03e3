package core

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/llm"
)

// Checking an adapter file against a model before any engine sees it, so a bad one is a 400
// naming both files instead of a failed generation. Paths arrive from the network (an admin's
// /v1/lora/load), so the messages name files and facts from their headers, never their bytes.
//
// adapterFits is the minimal check the core needs until runtime/gguf has CheckAdapter (the
// catalog's; fold this into it then): the header llama.cpp's llama_adapter_lora_init reads
// (general.type, adapter.type, general.architecture) and each lora_a/lora_b pair's shape
// against the model's tensor of that name.

type adapterPair struct{ model, adapter string }

type fileStamps struct {
	modelSize, adapterSize int64
	modelTime, adapterTime time.Time
}

// checkAdapterPath refuses a path that is not an existing regular .gguf file.
func checkAdapterPath(path string) error {
	if !strings.EqualFold(fileExt(path), ".gguf") {
		return fmt.Errorf("%w: the adapter %s is not a .gguf file; LoRA adapters are GGUF files", llm.ErrInvalidInput, path)
	}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: the adapter file %s does not exist", llm.ErrInvalidInput, path)
	case err != nil:
		return fmt.Errorf("%w: the adapter file %s cannot be read", llm.ErrInvalidInput, path)
	case !st.Mode().IsRegular():
		return fmt.Errorf("%w: the adapter %s is not a regular file", llm.ErrInvalidInput, path)
	}
	return nil
}

func fileExt(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 && !strings.ContainsAny(path[i:], `/\`) {
		return path[i:]
	}
	return ""
}

// checkAdapter checks the adapter file at path against m's model file, once per pair of
// unchanged files.
func (s *Service) checkAdapter(m *Model, path string) error {
	if err := checkAdapterPath(path); err != nil {
		return err
	}
	stamps, ok := stampsOf(m.Path, path)
	key := adapterPair{m.Path, path}
	r := &s.lora
	r.mu.Lock()
	seen, hit := r.checked[key]
	r.mu.Unlock()
	if ok && hit && seen == stamps {
		return nil
	}
	if err := adapterFits(m.ID, m.Path, path); err != nil {
		return err
	}
	if ok {
		r.mu.Lock()
		if r.checked == nil {
			r.checked = map[adapterPair]fileStamps{}
		}
		r.checked[key] = stamps
		r.mu.Unlock()
	}
	return nil
}

func stampsOf(model, adapter string) (fileStamps, bool) {
	ms, err1 := os.Stat(model)
	as, err2 := os.Stat(adapter)
	if err1 != nil || err2 != nil {
		return fileStamps{}, false
	}
	return fileStamps{ms.Size(), as.Size(), ms.ModTime(), as.ModTime()}, true
}

// adapterFits checks that the adapter at adapterPath is a LoRA GGUF llama.cpp can apply to the
// model id whose file is modelPath.
func adapterFits(id, modelPath, adapterPath string) error {
	ad, err := gguf.ReadFile(adapterPath)
	if err != nil {
		return fmt.Errorf("%w: the adapter %s is not a readable GGUF file", llm.ErrInvalidInput, adapterPath)
	}
	if t, _ := ad.String("general.type"); t != "adapter" {
		return fmt.Errorf("%w: %s is not a LoRA adapter (its general.type is %q, not \"adapter\")", llm.ErrInvalidInput, adapterPath, clip(t))
	}
	if t, _ := ad.String("adapter.type"); t != "lora" {
		return fmt.Errorf("%w: %s is not a LoRA adapter (its adapter.type is %q, not \"lora\")", llm.ErrInvalidInput, adapterPath, clip(t))
	}
	base, err := gguf.ReadFile(modelPath)
	if err != nil {
		return fmt.Errorf("%w: the model %s's file %s cannot be read to check the adapter %s against it", llm.ErrInvalidInput, id, modelPath, adapterPath)
	}
	if a, b := ad.Architecture(), base.Architecture(); a != b {
		return fmt.Errorf("%w: the adapter %s is for the architecture %q; the model %s (%s) is %q",
			llm.ErrInvalidInput, adapterPath, clip(a), id, modelPath, b)
	}
	split, _ := base.Uint("split.count")
	pairs := 0
	for _, t := range ad.Tensors {
		name, ok := strings.CutSuffix(t.Name, ".lora_a")
		if !ok {
			if name, isB := strings.CutSuffix(t.Name, ".lora_b"); isB {
				if _, paired := ad.Tensor(name + ".lora_a"); !paired {
					return fmt.Errorf("%w: the adapter %s has lora_b but no lora_a for the tensor %q", llm.ErrInvalidInput, adapterPath, clip(name))
				}
			}
			continue
		}
		pairs++
		b, ok := ad.Tensor(name + ".lora_b")
		if !ok || len(t.Dims) < 2 || len(b.Dims) < 2 {
			return fmt.Errorf("%w: the adapter %s has a malformed pair for the tensor %q", llm.ErrInvalidInput, adapterPath, clip(name))
		}
		w, ok := base.Tensor(name)
		if !ok {
			if split > 1 {
				continue // in another part of a split model
			}
			return fmt.Errorf("%w: the adapter %s changes the tensor %q, which the model %s (%s) does not have: it is an adapter of another model",
				llm.ErrInvalidInput, adapterPath, clip(name), id, modelPath)
		}
		if len(w.Dims) < 2 || !pairFits(name, w.Dims, t.Dims, b.Dims) {
			return fmt.Errorf("%w: the adapter %s is for %s %v; the model %s (%s) has it %v: it is an adapter of another model",
				llm.ErrInvalidInput, adapterPath, clip(name), dims2(t.Dims, b.Dims, name), id, modelPath, w.Dims)
		}
	}
	if pairs == 0 {
		return fmt.Errorf("%w: the adapter %s holds no LoRA tensors", llm.ErrInvalidInput, adapterPath)
	}
	return nil
}

// pairFits is llama.cpp's shape rule: a weight W [n0, n1] takes A [n0, r] and B [r, n1]; the
// token embedding takes them the other way round (B's n1 is W's n0, A's n1 is W's n1).
func pairFits(name string, w, a, b []uint64) bool {
	if strings.HasSuffix(name, "token_embd.weight") {
		return w[0] == b[1] && w[1] == a[1]
	}
	return w[0] == a[0] && w[1] == b[1] && a[1] == b[0]
}

// dims2 is the shape of the weight an adapter pair was made for.
func dims2(a, b []uint64, name string) []uint64 {
	if strings.HasSuffix(name, "token_embd.weight") {
		return []uint64{b[1], a[1]}
	}
	return []uint64{a[0], b[1]}
}

// clip bounds a string from a file's header in a message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
