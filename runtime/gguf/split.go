package gguf

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
)

// splitName matches the first part of a split GGUF as llama.cpp names the parts
// (llama_split_path): NAME-00001-of-00003.gguf.
var splitName = regexp.MustCompile(`^(.*)-(\d{5})-of-(\d{5})\.gguf$`)

// SplitParts lists every part of a split model given its first part, in order, checking they
// exist; a file not named as a split part is its own one part.
func SplitParts(path string) ([]string, error) {
	m := splitName.FindStringSubmatch(filepath.Base(path))
	if m == nil {
		return []string{path}, nil
	}
	n, _ := strconv.Atoi(m[3])
	if m[2] != "00001" {
		return nil, fmt.Errorf("%s is part %s of a split model; name its first part (-00001-of-%s)", path, m[2], m[3])
	}
	parts := make([]string, n)
	for i := range n {
		parts[i] = filepath.Join(filepath.Dir(path), fmt.Sprintf("%s-%05d-of-%s.gguf", m[1], i+1, m[3]))
		if _, err := os.Stat(parts[i]); err != nil {
			return nil, fmt.Errorf("split model %s: part %d of %d is missing: %w", path, i+1, n, err)
		}
	}
	return parts, nil
}

// ReadParts reads every part of the model whose first part is path (SplitParts).
func ReadParts(path string) ([]*File, error) {
	paths, err := SplitParts(path)
	if err != nil {
		return nil, err
	}
	out := make([]*File, len(paths))
	for i, p := range paths {
		if out[i], err = ReadFile(p); err != nil {
			return nil, err
		}
	}
	return out, nil
}
