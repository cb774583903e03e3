package core

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/superfluid/superfluid/runtime/llm"
)

// MaxRequestAdapters is the most LoRA adapters one request may name: each is a separate
// adapter set the engine decodes under, so a long list is a mistake rather than a plan.
const MaxRequestAdapters = 8

// ParseAdapters reads a request's lora extension, the same in every dialect: an array of
// {"id": "...", "scale": 1.0} (scale optional, 1 when absent). Absent or null is nil (the
// model's active adapters); [] is an empty, non-nil list (none, the bare model). Paths are left
// empty: the core resolves the ids against the model's adapters when the request runs. The
// error's message is the dialect's to render with the parameter's name.
func ParseAdapters(raw json.RawMessage) ([]llm.AdapterRef, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	const shape = `lora must be an array of {"id": "...", "scale": 1.0} objects`
	if raw[0] != '[' {
		return nil, fmt.Errorf("%s", shape)
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, fmt.Errorf("%s", shape)
	}
	if len(elems) > MaxRequestAdapters {
		return nil, fmt.Errorf("lora names %d adapters; at most %d are taken in one request", len(elems), MaxRequestAdapters)
	}
	refs := make([]llm.AdapterRef, 0, len(elems))
	seen := map[string]bool{}
	for i, e := range elems {
		var obj struct {
			ID    json.RawMessage `json:"id"`
			Scale json.RawMessage `json:"scale"`
		}
		if b := bytes.TrimSpace(e); len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &obj) != nil {
			return nil, fmt.Errorf("lora[%d] must be an object {\"id\": \"...\", \"scale\": 1.0}", i)
		}
		var id string
		if len(obj.ID) == 0 || json.Unmarshal(obj.ID, &id) != nil || id == "" {
			return nil, fmt.Errorf("lora[%d].id must be a non-empty string naming a loaded adapter (GET /v1/lora lists them)", i)
		}
		if seen[id] {
			return nil, fmt.Errorf("lora[%d].id %q is named twice; name each adapter once", i, id)
		}
		seen[id] = true
		ref := llm.AdapterRef{ID: id, Scale: 1}
		if s := bytes.TrimSpace(obj.Scale); len(s) > 0 && !bytes.Equal(s, []byte("null")) {
			if json.Unmarshal(s, &ref.Scale) != nil {
				return nil, fmt.Errorf("lora[%d].scale must be a number (1 applies the adapter as trained, 0 turns it off)", i)
			}
		}
		refs = append(refs, ref)
	}
	return refs, nil
}
