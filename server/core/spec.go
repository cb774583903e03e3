package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"github.com/superfluid/superfluid/runtime/llm"
)

// SpeculativeModes are the values of a request's and a model's speculative setting, in the
// order error messages list them.
var SpeculativeModes = []string{llm.SpecOff, llm.SpecNgram, llm.SpecDraft}

// CheckSpeculativeMode refuses a mode that is not one of SpeculativeModes ("" is none: the
// default applies).
func CheckSpeculativeMode(mode string) error {
	if mode == "" || knownMode(mode) {
		return nil
	}
	return fmt.Errorf("speculative mode %q is unknown; use off, ngram or draft", mode)
}

func knownMode(mode string) bool {
	return mode == llm.SpecOff || mode == llm.SpecNgram || mode == llm.SpecDraft
}

// CheckDraftTokens refuses a draft length outside 1-llm.MaxDraftTokens (0 is none: the default
// applies).
func CheckDraftTokens(n int) error {
	if n == 0 || (n >= 1 && n <= llm.MaxDraftTokens) {
		return nil
	}
	return fmt.Errorf("draft_tokens must be between 1 and %d, got %d", llm.MaxDraftTokens, n)
}

// ParseSpeculative reads a request's speculative field: a mode string ("off", "ngram",
// "draft") or an object {"mode": "...", "draft_tokens": N}. Absent or null is nil (the model's
// default). The error's message is the dialect's to render with the parameter's name.
func ParseSpeculative(raw json.RawMessage) (*llm.Speculative, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var spec llm.Speculative
	named := true // a mode was written, so it must be one of the modes ("" is not)
	switch raw[0] {
	case '"':
		if err := json.Unmarshal(raw, &spec.Mode); err != nil {
			return nil, fmt.Errorf("speculative must be a mode string (off, ngram or draft) or an object {\"mode\", \"draft_tokens\"}")
		}
	case '{':
		var obj struct {
			Mode        *json.RawMessage `json:"mode"`
			DraftTokens *json.RawMessage `json:"draft_tokens"`
		}
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("speculative must be a mode string (off, ngram or draft) or an object {\"mode\", \"draft_tokens\"}")
		}
		named = obj.Mode != nil
		if named && json.Unmarshal(*obj.Mode, &spec.Mode) != nil {
			return nil, fmt.Errorf("speculative.mode must be a string: off, ngram or draft")
		}
		if obj.DraftTokens != nil {
			var n float64
			if json.Unmarshal(*obj.DraftTokens, &n) != nil || n != math.Trunc(n) {
				return nil, fmt.Errorf("speculative.draft_tokens must be an integer between 1 and %d", llm.MaxDraftTokens)
			}
			if n < 1 || n > llm.MaxDraftTokens {
				return nil, fmt.Errorf("speculative.draft_tokens must be between 1 and %d, got %g", llm.MaxDraftTokens, n)
			}
			spec.DraftTokens = int(n)
		}
	default:
		return nil, fmt.Errorf("speculative must be a mode string (off, ngram or draft) or an object {\"mode\", \"draft_tokens\"}")
	}
	if named && !knownMode(spec.Mode) {
		return nil, fmt.Errorf("speculative mode %q is unknown; use off, ngram or draft", spec.Mode)
	}
	if spec.Mode == "" && spec.DraftTokens == 0 {
		return nil, nil // {}: the defaults
	}
	return &spec, nil
}

// SpecReport is the reply's superfluid.spec object, the same in every dialect: what
// speculative decoding drafted and kept. Present only when speculation ran (Done.Spec).
type SpecReport struct {
	Proposed       int     `json:"proposed"`
	Accepted       int     `json:"accepted"`
	AcceptanceRate float64 `json:"acceptance_rate"`
	Note           string  `json:"note,omitempty"`
}

// SpecReportOf sums the choices' speculation stats into the reply's report; nil when none ran.
// Notes repeat per choice, so the first non-empty one stands for all.
func SpecReportOf(dones ...llm.Done) *SpecReport {
	var sum *llm.SpecStats
	for _, d := range dones {
		if d.Spec == nil {
			continue
		}
		if sum == nil {
			sum = &llm.SpecStats{}
		}
		sum.Proposed += d.Spec.Proposed
		sum.Accepted += d.Spec.Accepted
		if sum.Note == "" {
			sum.Note = d.Spec.Note
		}
	}
	if sum == nil {
		return nil
	}
	return &SpecReport{Proposed: sum.Proposed, Accepted: sum.Accepted,
		AcceptanceRate: math.Round(sum.AcceptanceRate()*1000) / 1000, Note: sum.Note}
}
