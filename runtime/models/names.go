package models

import (
	"fmt"
	"strings"

	"github.com/superfluid/superfluid/runtime/llm"
)

// MaxNameLength bounds a model name a client may send.
const MaxNameLength = 256

// CheckName refuses a client's model name that could reach outside the catalog or that no
// catalog id can have: empty, too long, control characters or NUL, "..", or an absolute path.
// The error wraps llm.ErrInvalidInput (a 400 in every dialect).
func CheckName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: the model name is empty", llm.ErrInvalidInput)
	case len(name) > MaxNameLength:
		return fmt.Errorf("%w: the model name is %d bytes long; names are at most %d", llm.ErrInvalidInput, len(name), MaxNameLength)
	case strings.HasPrefix(name, "/") || strings.HasPrefix(name, `\`) || (len(name) > 2 && name[1] == ':' && strings.ContainsAny(name[2:3], `/\`)):
		return fmt.Errorf("%w: the model name %q is a path; name a model from GET /v1/models (superfluid add PATH registers a file)", llm.ErrInvalidInput, name)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w: the model name contains a control character", llm.ErrInvalidInput)
		}
	}
	for _, seg := range strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg == ".." || seg == "." {
			return fmt.Errorf("%w: the model name %q contains %q", llm.ErrInvalidInput, name, seg)
		}
	}
	return nil
}

// checkID is CheckName plus the characters an id this catalog creates may hold.
func checkID(id string) error {
	if err := CheckName(id); err != nil {
		return err
	}
	for _, r := range id {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-:/@+", r)
		if !ok {
			return fmt.Errorf("%w: the model name %q may hold only letters, digits and . _ - : / @ +", llm.ErrInvalidInput, id)
		}
	}
	return nil
}
