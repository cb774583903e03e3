package ollama

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
)

// optionKind is the JSON type an Ollama option takes.
type optionKind int

const (
	kindInt optionKind = iota
	kindFloat
	kindBool
	kindStrings
)

// optionKinds lists every option Ollama's api.Options knows. All are type-checked; the ones
// applied are in applyOption, the rest are accepted and ignored (see the package doc).
var optionKinds = map[string]optionKind{
	// applied
	"temperature": kindFloat, "top_p": kindFloat, "top_k": kindInt, "min_p": kindFloat, "seed": kindInt,
	"num_predict": kindInt, "stop": kindStrings, "repeat_penalty": kindFloat,
	"presence_penalty": kindFloat, "frequency_penalty": kindFloat,
	"ignore_eos": kindBool, // an extension, as llama.cpp's and the OpenAI routes' ignore_eos
	// accepted, ignored: the window and the runtime are fixed when the server loads the model
	"num_ctx": kindInt, "num_batch": kindInt, "num_gpu": kindInt, "main_gpu": kindInt, "use_mmap": kindBool,
	"num_thread": kindInt, "num_keep": kindInt, "typical_p": kindFloat, "repeat_last_n": kindInt,
}

// kindNames are the words the type errors use.
var kindNames = map[optionKind]string{kindInt: "an integer", kindFloat: "a number", kindBool: "a boolean", kindStrings: "an array of strings"}

// applyOptions type-checks opts and sets the ones this server honours on gen. Unknown keys
// are ignored, as Ollama ignores them.
func applyOptions(opts map[string]json.RawMessage, gen *llm.Request) error {
	for key, raw := range opts {
		kind, known := optionKinds[key]
		if !known || isNull(raw) {
			continue
		}
		v, err := parseOption(raw, kind)
		if err != nil {
			return badRequest("option %q must be %s, got %s", key, kindNames[kind], describe(raw))
		}
		applyOption(key, v, gen)
	}
	return nil
}

// parseOption decodes raw as kind: a float64 for numbers (integers are truncated, as Ollama
// does), a bool, or a []string (one string counts as a list of one).
func parseOption(raw json.RawMessage, kind optionKind) (any, error) {
	switch kind {
	case kindInt, kindFloat:
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil {
			return nil, err
		}
		if kind == kindInt {
			f = math.Trunc(f)
		}
		return f, nil
	case kindBool:
		var b bool
		err := json.Unmarshal(raw, &b)
		return b, err
	default:
		var list []string
		if err := json.Unmarshal(raw, &list); err == nil {
			return list, nil
		}
		var one string
		if err := json.Unmarshal(raw, &one); err != nil {
			return nil, err
		}
		return []string{one}, nil
	}
}

func applyOption(key string, v any, gen *llm.Request) {
	s := &gen.Sampling
	f, _ := v.(float64)
	switch key {
	case "temperature":
		s.Temperature = &f
	case "top_p":
		s.TopP = &f
	case "min_p":
		s.MinP = &f
	case "repeat_penalty":
		s.RepeatPenalty = &f
	case "presence_penalty":
		s.PresencePenalty = f
	case "frequency_penalty":
		s.FrequencyPenalty = f
	case "top_k":
		k := int(max(min(f, math.MaxInt32), 0)) // 0 (or less): the whole vocabulary
		s.TopK = &k
	case "seed":
		if f > 0 && f <= math.MaxInt64 {
			s.Seed = uint64(f)
		} // -1 (Ollama's "random") and 0 leave a fresh seed
	case "num_predict":
		if f > 0 {
			gen.MaxTokens = int(min(f, math.MaxInt32))
		} // -1 (no limit), -2 (fill the context) and 0: no cap of the request's own
	case "stop":
		gen.Stop = v.([]string)
	case "ignore_eos":
		gen.IgnoreEOS = v.(bool)
	}
}

// speculative reads the speculative extension from the top level, else from options.
func speculative(top, option json.RawMessage) (*llm.Speculative, error) {
	where, raw := "speculative", top
	if len(raw) == 0 || isNull(raw) {
		where, raw = `option "speculative"`, option
	}
	spec, err := core.ParseSpeculative(raw)
	if err != nil {
		return nil, badRequest("%s: %v", where, err)
	}
	return spec, nil
}

// adapters reads the lora extension from the top level, else from options.
func adapters(top, option json.RawMessage) ([]llm.AdapterRef, error) {
	where, raw := "lora", top
	if len(raw) == 0 || isNull(raw) {
		where, raw = `option "lora"`, option
	}
	refs, err := core.ParseAdapters(raw)
	if err != nil {
		return nil, badRequest("%s: %v", where, err)
	}
	return refs, nil
}

// applyFormat sets the structured-output constraint from Ollama's format: "json", a JSON
// schema object, or nothing (absent, null or "").
func applyFormat(raw json.RawMessage, gen *llm.Request) error {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || isNull(raw) || string(raw) == `""`:
		return nil
	case string(raw) == `"json"`:
		gen.Format = llm.FormatJSON
		return nil
	case raw[0] == '{':
		gen.Format, gen.Schema = llm.FormatSchema, append(json.RawMessage(nil), raw...)
		return nil
	default:
		return badRequest(`invalid format: %s; expected "json" or a valid JSON Schema object`, describe(raw))
	}
}

// think is what Ollama's think asks for: absent (the model's default), false, true, or a
// level ("high", "medium", "low", "max").
type think struct {
	set, on bool
	level   string
}

// parseThink reads think: a boolean or a level.
func parseThink(raw json.RawMessage) (think, error) {
	if len(raw) == 0 || isNull(raw) {
		return think{}, nil
	}
	var on bool
	if json.Unmarshal(raw, &on) == nil {
		return think{set: true, on: on}, nil
	}
	var level string
	if json.Unmarshal(raw, &level) == nil && (level == "high" || level == "medium" || level == "low" || level == "max") {
		return think{set: true, on: true, level: level}, nil
	}
	return think{}, badRequest(`invalid think value %s; use true, false, "high", "medium", "low" or "max"`, describe(raw))
}

// kwargs are the chat template variables think sets: enable_thinking, and reasoning_effort
// for a level ("max" is sent as "high", as Ollama does for the templates that read a level,
// which know low, medium and high). Thinking asked of a model whose template cannot think is
// Ollama's 400 "does not support thinking".
func (t think) kwargs(m *core.Model, model string) (map[string]any, error) {
	switch {
	case !t.set:
		return nil, nil
	case !t.on:
		return map[string]any{"enable_thinking": false}, nil
	case !m.Capabilities().Thinking: // the template's, or a chat-level engine's own say
		return nil, unsupported(model, "thinking", "send think: false or leave it out")
	case t.level == "":
		return map[string]any{"enable_thinking": true}, nil
	case t.level == "max":
		return map[string]any{"enable_thinking": true, "reasoning_effort": "high"}, nil
	default:
		return map[string]any{"enable_thinking": true, "reasoning_effort": t.level}, nil
	}
}

// dropsThinking reports whether the reply's reasoning is left out: think false asked for none,
// and Ollama then returns no thinking.
func (t think) dropsThinking() bool { return t.set && !t.on }

// keepAlive reads keep_alive with the syntax every dialect shares (core.ParseKeepAlive:
// Ollama's duration strings and numbers of seconds; nil is the server's default, negative keeps
// the model loaded), refusing a bad value in Ollama's words.
func keepAlive(raw json.RawMessage) (*time.Duration, error) {
	d, err := core.ParseKeepAlive(raw)
	if err != nil {
		return nil, badRequest(`invalid keep_alive %s: use a duration such as "5m" or "1h30m", a number of seconds, 0 to unload the model after the reply or -1 to keep it loaded`, describe(raw))
	}
	return d, nil
}

// isNull reports whether raw is the JSON null.
func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// describe quotes a raw value in a message, shortened.
func describe(raw json.RawMessage) string {
	return fmt.Sprintf("%.40s", bytes.TrimSpace(raw))
}
