package anthropic

import (
	"bytes"
	"encoding/json"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
)

// Endpoint names the route in request records.
const Endpoint = "/v1/messages"

// toCore validates a Messages request and converts it to the core's form, with warnings about
// what it dropped or ignored. A max_tokens beyond what the window leaves after the prompt is
// not refused: the engine stops where the window ends (the spec's "fill the context"), with
// stop_reason max_tokens.
func toCore(req *messagesRequest, modelOptional bool) (*core.ChatRequest, warnings, error) {
	if err := req.conversation.check(modelOptional); err != nil {
		return nil, nil, err
	}
	if req.MaxTokens == nil {
		return nil, nil, invalid("max_tokens: Field required")
	}
	if *req.MaxTokens < 1 {
		return nil, nil, invalid("max_tokens: Input should be greater than or equal to 1, got %d", *req.MaxTokens)
	}
	gen := llm.Request{MaxTokens: *req.MaxTokens, Stop: req.StopSequences, IgnoreEOS: req.IgnoreEOS}
	s := &gen.Sampling
	for _, p := range []struct {
		name string
		v    *float64
		dst  **float64
	}{{"temperature", req.Temperature, &s.Temperature}, {"top_p", req.TopP, &s.TopP}} {
		if p.v == nil {
			continue
		}
		if *p.v < 0 || *p.v > 1 {
			return nil, nil, invalid("%s: Input should be between 0 and 1, got %g", p.name, *p.v)
		}
		*p.dst = p.v
	}
	if req.TopK != nil {
		if *req.TopK < 0 {
			return nil, nil, invalid("top_k: Input should be greater than or equal to 0, got %d", *req.TopK)
		}
		s.TopK = req.TopK
	}
	if req.Seed != nil {
		s.Seed = uint64(*req.Seed) // 0 stays "unseeded", as on the OpenAI routes
	}
	var err error
	if gen.Speculative, err = core.ParseSpeculative(req.Speculative); err != nil {
		return nil, nil, invalid("speculative: %v", err)
	}
	if gen.Adapters, err = core.ParseAdapters(req.Lora); err != nil {
		return nil, nil, invalid("lora: %v", err)
	}
	if gen.Format, gen.Schema, err = req.toFormat(); err != nil {
		return nil, nil, err
	}
	if th := req.Thinking; th != nil && th.Type == "enabled" && *th.BudgetTokens >= *req.MaxTokens {
		return nil, nil, invalid("max_tokens: must be greater than thinking.budget_tokens (%d); raise max_tokens or lower the budget", *th.BudgetTokens)
	}
	conv, warn, err := req.conversation.toCore()
	if err != nil {
		return nil, nil, err
	}
	ka, err := core.ParseKeepAlive(req.KeepAlive)
	if err != nil {
		return nil, nil, invalid("keep_alive: %v", err)
	}
	conv.ID, conv.Endpoint, conv.Stream = newID("msg_"), Endpoint, req.Stream
	conv.Generation, conv.KeepAlive = gen, ka
	return conv, warn, nil
}

// toCore converts what both routes share: the model, the conversation (with its context
// edits), tools and thinking, with warnings about what it dropped or ignored.
func (c *conversation) toCore() (*core.ChatRequest, warnings, error) {
	var warn warnings
	if len(c.MCPServers) > 0 {
		warn.add("mcp_servers: this server connects to no MCP servers; the tools of %d were not offered to the model", len(c.MCPServers))
	}
	declared, searchDropped, err := toTools(c.Tools, &warn)
	if err != nil {
		return nil, nil, err
	}
	h := &history{warn: &warn}
	msgs, err := h.messages(c)
	if err != nil {
		return nil, nil, err
	}
	if err := c.contextEdits(msgs, &warn); err != nil {
		return nil, nil, err
	}
	tools := offered(declared, h.loaded, searchDropped)
	choice, parallel, err := toToolChoice(c.ToolChoice)
	if err != nil {
		return nil, nil, err
	}
	if err := checkToolChoice(choice, tools); err != nil {
		return nil, nil, err
	}
	return &core.ChatRequest{
		Model: *c.Model, Messages: msgs, TemplateKwargs: c.kwargs(),
		Tools: tools, ToolChoice: choice, ParallelToolCalls: parallel,
	}, warn, nil
}

// check validates what both routes need: a model (which modelOptional lets be empty, team mode:
// needsModel), messages, and a thinking config.
func (c *conversation) check(modelOptional bool) error {
	if needsModel(&c.Model, modelOptional) {
		return invalid("model: Field required; GET /v1/models lists the served models")
	}
	if c.Messages == nil {
		return invalid("messages: Field required")
	}
	if len(c.Messages) == 0 {
		return invalid("messages: at least one message is required")
	}
	if err := checkOutputConfig(c.OutputConfig); err != nil {
		return err
	}
	return checkThinking(c.Thinking)
}

// isSet reports whether a raw field is present and not null.
func isSet(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}
