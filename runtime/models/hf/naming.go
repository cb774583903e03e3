package hf

import (
	"strings"

	"github.com/superfluid/superfluid/runtime/models/source"
)

// Spellings are the ids a client's name may also mean on the Hub: with or without an
// "hf.co/" or "huggingface.co/" prefix (the catalog's ids of pulled models start with
// "hf.co/"; clients write Ollama's "OWNER/REPO:QUANT").
func (s *Source) Spellings(name string) []string {
	var out []string
	for _, prefix := range []string{"hf.co/", "huggingface.co/"} {
		if rest, ok := strings.CutPrefix(name, prefix); ok {
			out = append(out, rest)
		} else if strings.Count(name, "/") == 1 {
			out = append(out, prefix+name)
		}
	}
	return out
}

// Repository reads name as a bare Hub repository ("OWNER/REPO", "hf.co/OWNER/REPO", the
// spec's own example): a reference with no quantization, file or revision.
func (s *Source) Repository(name string) (source.Reference, bool) {
	ref, err := ParseRef(name)
	if err != nil || ref.Quant != "" || ref.File != "" || ref.Revision != "" {
		return source.Reference{}, false
	}
	return source.Reference{Source: SourceName, Repo: ref.Repo}, true
}
