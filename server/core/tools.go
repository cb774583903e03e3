package core

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/schema"
)

// Tool choice modes (OpenAI's tool_choice; Anthropic's auto, any, tool and none map onto them).
const (
	ToolAuto     = "auto"     // the model decides (the default)
	ToolNone     = "none"     // the model sees the tools but its reply is served as text
	ToolRequired = "required" // the reply must be one or more calls (a grammar forces it)
	ToolFunction = "function" // the reply must call the named function
)

// ToolChoice says whether, and which, tool the model must call.
type ToolChoice struct {
	Mode string // "" means ToolAuto
	Name string // the function, for ToolFunction
}

// checkTools validates the request's tools and tool choice, and the tool calls in its history.
func checkTools(req *ChatRequest) error {
	if err := chat.CheckTools(req.Tools); err != nil {
		return invalidInput(err)
	}
	// The grammar engine's limits (schema.Check's caps on size, properties, depth) matter only
	// when a grammar is built from the tools' schemas: a forced call, or a response format
	// beside tools the model may call (not tool_choice none). Otherwise the schemas are only shown to the model, and any JSON Schema is
	// served, however large (the window decides).
	grammar := req.ToolChoice.forced() || req.Generation.Format == llm.FormatSchema && req.ToolChoice.Mode != ToolNone
	shown := 0
	for _, t := range req.Tools {
		if len(t.Parameters) == 0 {
			continue
		}
		// Together they go into one prompt, which holds no more than one schema may be.
		if shown += len(t.Parameters); shown > schema.MaxShownBytes {
			return fmt.Errorf("%w: the tools' parameters schemas are more than %d MiB together, more than a prompt of this server holds; send fewer tools or shorter schemas",
				llm.ErrInvalidInput, schema.MaxShownBytes>>20)
		}
		check := schema.Check
		if !grammar {
			check = schema.CheckShown
		}
		if err := check(t.Parameters); err != nil {
			return fmt.Errorf("%w: tool %s: parameters: %v", llm.ErrInvalidInput, t.Name, err)
		}
	}
	if err := chat.CheckMessages(req.Messages); err != nil {
		return invalidInput(err)
	}
	switch req.ToolChoice.Mode {
	case "", ToolAuto, ToolNone:
		return nil
	case ToolRequired:
		if len(req.Tools) == 0 {
			return fmt.Errorf("%w: tool_choice is required but no tools were given; add tools or use tool_choice auto", llm.ErrInvalidInput)
		}
	case ToolFunction:
		if !hasTool(req.Tools, req.ToolChoice.Name) {
			return fmt.Errorf("%w: tool_choice names the function %q, which is not in tools; name one of the tools given", llm.ErrInvalidInput, req.ToolChoice.Name)
		}
	default:
		return fmt.Errorf("%w: tool_choice %q is not one of auto, none, required or a function", llm.ErrInvalidInput, req.ToolChoice.Mode)
	}
	return nil
}

func hasTool(tools []chat.Tool, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

func invalidInput(err error) error {
	if errors.Is(err, llm.ErrInvalidInput) {
		return err
	}
	return fmt.Errorf("%w: %v", llm.ErrInvalidInput, err)
}

// forced reports whether the reply must be a tool call.
func (c ToolChoice) forced() bool { return c.Mode == ToolRequired || c.Mode == ToolFunction }

// forceCall constrains gen to the generic JSON call shape, which GenericToolParser reads, so
// a call comes back even from a model that was never trained to make one. It replaces any
// response format. What of the tools' parameters the grammar cannot express is checked on the
// arguments afterwards (the returned check, nil when there is nothing to check).
func forceCall(gen *llm.Request, req *ChatRequest, n int) (*outputCheck, error) {
	tools := make([]schema.Tool, len(req.Tools))
	params := map[string]json.RawMessage{}
	for i, t := range req.Tools {
		tools[i] = schema.Tool{Name: t.Name, Parameters: t.Parameters}
		params[t.Name] = t.Parameters
	}
	name := ""
	if req.ToolChoice.Mode == ToolFunction {
		name = req.ToolChoice.Name
	}
	parallel := req.ParallelToolCalls == nil || *req.ParallelToolCalls
	s, relaxed, err := schema.ToolCallGrammar(tools, name, parallel)
	if err != nil {
		return nil, invalidInput(err)
	}
	gen.Format, gen.Schema, gen.CompactJSON = llm.FormatSchema, s, true
	return checkCalls(relaxed, params, n), nil
}

// formatOrCall serves a response format beside tools the model may call (tool_choice auto):
// the grammar takes the format's JSON or a call in the generic shape (which every parser reads
// when its family's markers are absent), so that a reply after a tool result follows the format
// and the model can still call a tool. The check covers both (nil when nothing was relaxed).
func formatOrCall(gen *llm.Request, req *ChatRequest, n int) (*outputCheck, error) {
	tools := make([]schema.Tool, len(req.Tools))
	params := map[string]json.RawMessage{}
	for i, t := range req.Tools {
		tools[i] = schema.Tool{Name: t.Name, Parameters: t.Parameters}
		params[t.Name] = t.Parameters
	}
	parallel := req.ParallelToolCalls == nil || *req.ParallelToolCalls
	s, relaxed, err := schema.FormatOrCall(gen.Schema, tools, parallel)
	if err != nil {
		return nil, invalidInput(err)
	}
	var forFormat, forCalls []schema.Relaxation
	for _, r := range relaxed {
		if r.Tool == "" {
			forFormat = append(forFormat, r)
		} else {
			forCalls = append(forCalls, r)
		}
	}
	check := checkCalls(forCalls, params, n)
	if len(forFormat) > 0 {
		if check == nil {
			check = &outputCheck{tools: map[string]json.RawMessage{}, text: make([]strings.Builder, n)}
		}
		check.full = gen.Schema
		for _, r := range forFormat {
			check.noteUnchecked(r)
		}
	}
	if check != nil {
		check.calls = params
	}
	gen.Schema = s
	return check, nil
}

// shapingFor decides how the replies to req are split into reasoning, content and calls.
func shapingFor(m *Model, req *ChatRequest, prompt string) *shaping {
	open, close := m.Template.ThinkingMarkers()
	sh := &shaping{
		open: open, close: close,
		startInside: chat.PromptOpensReasoning(prompt, open, close),
		single:      req.ParallelToolCalls != nil && !*req.ParallelToolCalls,
	}
	switch {
	case len(req.Tools) == 0 || req.ToolChoice.Mode == ToolNone:
	case req.ToolChoice.forced():
		sh.parser = chat.GenericToolParser{}
		for _, t := range req.Tools {
			if req.ToolChoice.Mode == ToolRequired || t.Name == req.ToolChoice.Name {
				sh.forced = append(sh.forced, t.Name)
			}
		}
	default:
		sh.parser = chat.ToolParserFor(m.Template.Source())
	}
	return sh
}

// Capabilities is what a model's chat template supports.
type Capabilities struct {
	// Tools reports whether the model can be given tools: its template renders them, or has no
	// tool syntax of its own and gets them through the prompt.
	Tools bool
	// NativeTools reports whether the template has its own tool syntax.
	NativeTools bool
	// Thinking reports whether the template knows reasoning (enable_thinking, <think>).
	Thinking bool
	// ReasoningEffort reports whether the template reads reasoning_effort.
	ReasoningEffort bool
}

// Capabilities says what the model's template supports; tools count only when a probe
// conversation with a tool call renders. It is worked out once per model (listings ask often).
func (m *Model) Capabilities() Capabilities {
	m.caps.once.Do(func() { m.caps.v = m.probeCapabilities() })
	return m.caps.v
}

func (m *Model) probeCapabilities() Capabilities {
	if r, ok := m.Requests.(CapabilityReporter); ok {
		return r.Capabilities() // the engine, not a template, knows (engine.go)
	}
	t := m.Template
	probe := []chat.Message{
		{Role: "user", Content: "What is the weather?"},
		{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: "call_0", Name: "weather", Arguments: []byte(`{}`)}}},
		{Role: "tool", ToolCallID: "call_0", Content: "sunny"},
	}
	_, err := t.Render(probe, chat.Options{BOSToken: m.BOS, EOSToken: m.EOS, AddGenerationPrompt: true,
		Tools: []chat.Tool{{Name: "weather", Parameters: []byte(`{"type":"object","properties":{}}`)}}})
	return Capabilities{
		Tools: err == nil, NativeTools: err == nil && t.NativeTools(), Thinking: t.Thinking(),
		ReasoningEffort: strings.Contains(t.Source(), "reasoning_effort"),
	}
}
