package anthropic

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
)

// warnings collects what the conversion dropped or ignored (a server tool, an image in a tool
// result, a context edit not applied), for the reply's superfluid.warnings: the request is
// served, and the client can still see what the model did not get.
type warnings []string

func (w *warnings) add(format string, args ...any) { *w = append(*w, fmt.Sprintf(format, args...)) }

// efforts are the values of output_config.effort.
var efforts = []string{"low", "medium", "high", "xhigh", "max"}

// checkOutputConfig validates output_config.effort; the format is read by toFormat.
func checkOutputConfig(oc *outputConfig) error {
	if oc == nil || oc.Effort == nil || slices.Contains(efforts, *oc.Effort) {
		return nil
	}
	return invalid("output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max', got %q", *oc.Effort)
}

// toFormat reads output_config.format (or the beta's top-level output_format): {"type":
// "json_schema", "schema": {...}} constrains the reply to JSON matching the schema.
func (c *conversation) toFormat() (string, json.RawMessage, error) {
	path, raw := "output_format", c.OutputFormat
	if c.OutputConfig != nil && isSet(c.OutputConfig.Format) {
		path, raw = "output_config.format", c.OutputConfig.Format
	}
	if !isSet(raw) {
		return "", nil, nil
	}
	var f struct {
		Type   string          `json:"type"`
		Schema json.RawMessage `json:"schema"`
	}
	if kind(raw) != "an object" || json.Unmarshal(raw, &f) != nil {
		return "", nil, invalid(`%s: Input should be a valid dictionary like {"type":"json_schema","schema":{...}}, got %s`, path, kind(raw))
	}
	switch {
	case f.Type == "":
		return "", nil, invalid("%s.type: Field required; use json_schema", path)
	case f.Type != "json_schema":
		return "", nil, invalid("%s.type: Input should be 'json_schema', got %q", path, f.Type)
	case !isSet(f.Schema):
		return "", nil, invalid("%s.schema: Field required; send the JSON Schema the reply must match", path)
	case kind(f.Schema) != "an object":
		return "", nil, invalid("%s.schema: Input should be a valid dictionary (a JSON Schema object), got %s", path, kind(f.Schema))
	}
	return llm.FormatSchema, f.Schema, nil
}

// Context edits.
const (
	editClearThinking = "clear_thinking_20251015"
	thinkingTurns     = "thinking_turns"
)

// contextEdits applies context_management's edits to the rendered history. clear_thinking is
// served (old thinking leaves the prompt: keep "all", or the last N turns with thinking, 1 by
// default, as Anthropic's default); any other edit (clear_tool_uses_*, compaction) is not
// applied, with a warning: the whole history reaches the model.
func (c *conversation) contextEdits(msgs []chat.Message, warn *warnings) error {
	if c.ContextManagement == nil {
		return nil
	}
	for i, raw := range c.ContextManagement.Edits {
		path := fmt.Sprintf("context_management.edits.%d", i)
		var e struct {
			Type string          `json:"type"`
			Keep json.RawMessage `json:"keep"`
		}
		if kind(raw) != "an object" || json.Unmarshal(raw, &e) != nil {
			return invalid(`%s: Input should be a valid dictionary like {"type":"%s"}, got %s`, path, editClearThinking, kind(raw))
		}
		switch e.Type {
		case "":
			return invalid("%s.type: Field required", path)
		case editClearThinking:
			keep, err := keptTurns(path, e.Keep)
			if err != nil {
				return err
			}
			clearThinking(msgs, keep)
		default:
			warn.add("%s: %q is not applied by this server; the whole history was sent to the model", path, e.Type)
		}
	}
	return nil
}

// keptTurns reads clear_thinking's keep: "all" (-1), {"type":"thinking_turns","value":N}, or
// absent (1).
func keptTurns(path string, raw json.RawMessage) (int, error) {
	if !isSet(raw) {
		return 1, nil
	}
	if string(raw) == `"all"` {
		return -1, nil
	}
	var k struct {
		Type  string `json:"type"`
		Value *int   `json:"value"`
	}
	if kind(raw) != "an object" || json.Unmarshal(raw, &k) != nil || k.Type != thinkingTurns || k.Value == nil || *k.Value < 0 {
		return 0, invalid(`%s.keep: Input should be "all" or {"type":"%s","value":N} with N >= 0, got %s`, path, thinkingTurns, raw)
	}
	return *k.Value, nil
}

// clearThinking drops the reasoning of all assistant turns but the last keep that have any
// (keep < 0 keeps all).
func clearThinking(msgs []chat.Message, keep int) {
	if keep < 0 {
		return
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		m := &msgs[i]
		if m.Role != "assistant" || m.Reasoning == "" {
			continue
		}
		if keep > 0 {
			keep--
			continue
		}
		m.Reasoning = ""
	}
}
