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
// model id whose file is modelPath (gguf.CheckAdapter). A file that does not parse as GGUF is
// refused in words of ours: the reader's message may quote the file's first bytes.
func adapterFits(id, modelPath, adapterPath string) error {
	if _, err := gguf.ReadFile(adapterPath); err != nil {
		return fmt.Errorf("%w: the adapter %s is not a readable GGUF file", llm.ErrInvalidInput, adapterPath)
	}
	if err := gguf.CheckAdapter(modelPath, adapterPath); err != nil {
		return fmt.Errorf("%w: %v (the model %s)", llm.ErrInvalidInput, err, id)
	}
	return nil
}
