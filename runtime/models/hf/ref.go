// Package hf pulls GGUF models from a Hugging Face Hub endpoint: it parses
// the model references users type, resolves them against a repository's file
// tree, and downloads the files with HTTP Range resume, retries, stall
// detection and sha256 verification. Source makes the Hub one of the model
// manager's sources (runtime/models/source); app registers it.
package hf

import (
	"errors"
	"fmt"
	"strings"
)

// Errors callers can test for with errors.Is.
var (
	// ErrBadRef reports a reference that is malformed or unsafe.
	ErrBadRef = errors.New("invalid model reference; use hf.co/OWNER/REPO:QUANT or OWNER/REPO/FILE.gguf")
	// ErrNotHuggingFace reports a name without OWNER/REPO, such as an Ollama
	// library name ("llama3.2", "llama3.2:1b").
	ErrNotHuggingFace = errors.New("not a Hugging Face model reference; only Hugging Face references (hf.co/OWNER/REPO:QUANT) are pulled")
)

// maxRefLen is the longest reference ParseRef accepts, in bytes.
const maxRefLen = 512

// Ref is a model reference a user types.
type Ref struct {
	Repo     string // "owner/name"
	Quant    string // "Q4_K_M" (as typed), "" when not given
	File     string // a path inside the repo, "" when not given
	Revision string // "" means "main"
}

// String returns the reference in its canonical form,
// hf.co/OWNER/REPO[@REVISION][:QUANT | /FILE].
func (r Ref) String() string {
	var b strings.Builder
	b.WriteString("hf.co/")
	b.WriteString(r.Repo)
	if r.Revision != "" {
		b.WriteString("@")
		b.WriteString(r.Revision)
	}
	switch {
	case r.File != "":
		b.WriteString("/")
		b.WriteString(r.File)
	case r.Quant != "":
		b.WriteString(":")
		b.WriteString(r.Quant)
	}
	return b.String()
}

// revision returns the revision to request: Revision, or "main".
func (r Ref) revision() string {
	if r.Revision == "" {
		return "main"
	}
	return r.Revision
}

// hostPrefixes are the Hub hosts a reference may start with (lower case).
var hostPrefixes = []string{"hf.co/", "huggingface.co/", "www.huggingface.co/"}

// ParseRef parses a reference in one of the forms
//
//	hf.co/OWNER/REPO[:QUANT]            huggingface.co/OWNER/REPO[:QUANT]
//	https://huggingface.co/OWNER/REPO   (also .../resolve/REV/FILE, .../blob/REV/FILE, .../tree/REV)
//	OWNER/REPO[:QUANT]                  OWNER/REPO/path/to/file.gguf
//
// with an optional @REVISION after REPO. A name without a slash (an Ollama
// library name) gives ErrNotHuggingFace; anything malformed or unsafe gives
// an error wrapping ErrBadRef.
func ParseRef(s string) (Ref, error) {
	orig := s
	bad := func(why string) error {
		return fmt.Errorf("model reference %s: %s: %w", quoteShort(orig), why, ErrBadRef)
	}
	if len(s) > maxRefLen {
		return Ref{}, bad(fmt.Sprintf("longer than %d bytes", maxRefLen))
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return Ref{}, bad("empty")
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c == 0x7f:
			return Ref{}, bad("control character")
		case c >= 0x80:
			return Ref{}, bad("non-ASCII character")
		case c == '\\':
			return Ref{}, bad("backslash")
		case c == ' ':
			return Ref{}, bad("space")
		}
	}

	hadScheme, hadHost := false, false
	lower := strings.ToLower(s)
	for _, scheme := range []string{"https://", "http://"} {
		if strings.HasPrefix(lower, scheme) {
			s, lower, hadScheme = s[len(scheme):], lower[len(scheme):], true
			break
		}
	}
	for _, h := range hostPrefixes {
		if strings.HasPrefix(lower, h) {
			s, hadHost = s[len(h):], true
			break
		}
	}
	if hadScheme && !hadHost {
		return Ref{}, bad("only huggingface.co URLs are supported")
	}
	if strings.HasPrefix(s, "/") {
		return Ref{}, bad("absolute path")
	}
	if hadScheme {
		// A URL copied from the browser: drop a query or fragment.
		if i := strings.IndexAny(s, "?#"); i >= 0 {
			s = s[:i]
		}
		s = strings.TrimSuffix(s, "/")
	}

	var r Ref
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		r.Quant, s = s[i+1:], s[:i]
		if !validName(r.Quant) {
			return Ref{}, bad("quantization tag must be letters, digits, '.', '_' or '-'")
		}
		if strings.EqualFold(r.Quant, "latest") {
			r.Quant = "" // Ollama's default tag: pick the default quant
		}
	}
	if s == "" {
		return Ref{}, bad("missing OWNER/REPO")
	}
	if !strings.Contains(s, "/") {
		if hadHost {
			return Ref{}, bad("missing OWNER/REPO")
		}
		return Ref{}, fmt.Errorf("model %s: %w", quoteShort(orig), ErrNotHuggingFace)
	}

	segs := strings.Split(s, "/")
	for _, seg := range segs {
		switch seg {
		case "":
			return Ref{}, bad("empty path segment")
		case ".", "..":
			return Ref{}, bad(fmt.Sprintf("%q path segments are not allowed", seg))
		}
	}
	owner, name := segs[0], segs[1]
	if i := strings.IndexByte(name, '@'); i >= 0 {
		name, r.Revision = name[:i], name[i+1:]
		if !validName(r.Revision) {
			return Ref{}, bad("revision must be letters, digits, '.', '_' or '-'")
		}
	}
	if !validName(owner) || !validName(name) {
		return Ref{}, bad("OWNER and REPO must be letters, digits, '.', '_' or '-'")
	}
	r.Repo = owner + "/" + name

	rest := segs[2:]
	if hadHost && len(rest) >= 2 && r.Revision == "" {
		switch rest[0] {
		case "resolve", "blob":
			if len(rest) < 3 {
				return Ref{}, bad("URL names no file")
			}
			r.Revision, rest = rest[1], rest[2:]
		case "tree":
			if len(rest) > 2 {
				return Ref{}, bad("URL names a folder, not a .gguf file")
			}
			r.Revision, rest = rest[1], nil
		}
		if r.Revision != "" && !validName(r.Revision) {
			return Ref{}, bad("revision must be letters, digits, '.', '_' or '-'")
		}
	}
	if len(rest) > 0 {
		r.File = strings.Join(rest, "/")
		if !strings.HasSuffix(strings.ToLower(r.File), ".gguf") {
			return Ref{}, bad("file must end in .gguf")
		}
		if r.Quant != "" {
			return Ref{}, bad("give a quant or a file, not both")
		}
	}
	if r.Revision == "main" {
		r.Revision = ""
	}
	return r, nil
}

// validName reports whether s is a non-empty name of [A-Za-z0-9._-], other
// than "." and "..", at most 96 bytes long.
func validName(s string) bool {
	if s == "" || s == "." || s == ".." || len(s) > 96 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// quoteShort quotes s for an error message, cut to 64 bytes.
func quoteShort(s string) string {
	if len(s) > 64 {
		return fmt.Sprintf("%q...", s[:64])
	}
	return fmt.Sprintf("%q", s)
}
