package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server/core"
)

// Endpoint names the route in request records.
const Endpoint = "/v1/messages"

// toCore validates a Messages request and converts it to the core's form.
func toCore(req *messagesRequest) (*core.ChatRequest, error) {
	if err := req.conversation.check(); err != nil {
		return nil, err
	}
	if req.MaxTokens == nil {
		return nil, invalid("max_tokens: Field required")
	}
	if *req.MaxTokens < 1 {
		return nil, invalid("max_tokens: Input should be greater than or equal to 1, got %d", *req.MaxTokens)
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
			return nil, invalid("%s: Input should be between 0 and 1, got %g", p.name, *p.v)
		}
		*p.dst = p.v
	}
	if req.TopK != nil {
		if *req.TopK < 0 {
			return nil, invalid("top_k: Input should be greater than or equal to 0, got %d", *req.TopK)
		}
		s.TopK = req.TopK
	}
	if req.Seed != nil {
		s.Seed = uint64(*req.Seed) // 0 stays "unseeded", as on the OpenAI routes
	}
	if oc := req.OutputConfig; oc != nil && isSet(oc.Format) {
		return nil, invalid("output_config.format: structured output is not supported by this server yet; remove output_config.format")
	}
	if th := req.Thinking; th != nil && th.Type == "enabled" && *th.BudgetTokens >= *req.MaxTokens {
		return nil, invalid("max_tokens: must be greater than thinking.budget_tokens (%d); raise max_tokens or lower the budget", *th.BudgetTokens)
	}
	conv, err := req.conversation.toCore()
	if err != nil {
		return nil, err
	}
	ka, err := models.ParseKeepAlive(req.KeepAlive)
	if err != nil {
		return nil, invalid("keep_alive: %v", err)
	}
	conv.ID, conv.Endpoint, conv.Stream = newID("msg_"), Endpoint, req.Stream
	conv.Generation, conv.KeepAlive = gen, ka
	return conv, nil
}

// toCore converts what both routes share: the model, the conversation, tools and thinking.
func (c *conversation) toCore() (*core.ChatRequest, error) {
	msgs, err := c.messages()
	if err != nil {
		return nil, err
	}
	tools, err := toTools(c.Tools)
	if err != nil {
		return nil, err
	}
	choice, parallel, err := toToolChoice(c.ToolChoice)
	if err != nil {
		return nil, err
	}
	if err := checkToolChoice(choice, tools); err != nil {
		return nil, err
	}
	return &core.ChatRequest{
		Model: *c.Model, Messages: msgs, TemplateKwargs: c.kwargs(),
		Tools: tools, ToolChoice: choice, ParallelToolCalls: parallel,
	}, nil
}

// check validates what both routes need: a model, messages, and a thinking config.
func (c *conversation) check() error {
	if c.Model == nil || *c.Model == "" {
		return invalid("model: Field required; GET /v1/models lists the served models")
	}
	if c.Messages == nil {
		return invalid("messages: Field required")
	}
	if len(c.Messages) == 0 {
		return invalid("messages: at least one message is required")
	}
	return checkThinking(c.Thinking)
}

// messages renders system and the turns as chat messages: system first, then the turns, with
// consecutive turns of one role combined into one turn (as Anthropic combines them). A user
// turn holding tool results becomes tool messages (and user messages for its text), in order.
func (c *conversation) messages() ([]chat.Message, error) {
	var out []chat.Message
	system, err := systemText(c.System)
	if err != nil {
		return nil, err
	}
	if system != "" {
		out = append(out, chat.Message{Role: "system", Content: system})
	}
	turns := len(out)
	calls := map[string]string{} // tool_use id → tool name, to name the results
	for i, m := range c.Messages {
		var msgs []chat.Message
		switch m.Role {
		case "user":
			msgs, err = userTurn(i, m.Content, calls)
		case "assistant":
			var msg chat.Message
			msg, err = assistantTurn(i, m.Content)
			for _, call := range msg.ToolCalls {
				calls[call.ID] = call.Name
			}
			msgs = []chat.Message{msg}
		case "system":
			return nil, invalid(`messages.%d.role: Unexpected role "system". The Messages API accepts a top-level `+
				"`system` parameter, not \"system\" as an input message role", i)
		case "":
			return nil, invalid("messages.%d.role: Field required; use user or assistant", i)
		default:
			return nil, invalid("messages.%d.role: Input should be 'user' or 'assistant', got %q", i, m.Role)
		}
		if err != nil {
			return nil, err
		}
		for _, msg := range msgs {
			if len(out) > turns && mergeable(out[len(out)-1], msg) {
				merge(&out[len(out)-1], msg)
				continue
			}
			out = append(out, msg)
		}
	}
	if last := out[len(out)-1]; last.Role == "assistant" {
		switch {
		case len(last.ToolCalls) > 0:
			return nil, invalid("messages.%d: the final assistant message has tool_use blocks without their results; "+
				"send the results as tool_result blocks in a following user message", len(c.Messages)-1)
		case last.Content != "":
			return nil, invalid("messages.%d: a final assistant message (prefill) is not supported by this server yet; "+
				"end the conversation with a user message", len(c.Messages)-1)
		}
		out = out[:len(out)-1] // an empty final assistant turn (or only thinking) asks for nothing
	}
	return out, nil
}

// mergeable reports whether next continues prev's turn: the same role, and not a tool result
// (each result is a message of its own).
func mergeable(prev, next chat.Message) bool {
	return prev.Role == next.Role && prev.Role != "tool"
}

// merge appends next's content, reasoning and calls to prev.
func merge(prev *chat.Message, next chat.Message) {
	prev.Content = chat.JoinText(prev.Content, next.Content)
	prev.Reasoning = chat.JoinText(prev.Reasoning, next.Reasoning)
	prev.ToolCalls = append(prev.ToolCalls, next.ToolCalls...)
}

// userTurn converts a user message: its text, and each tool_result as a tool message. Text
// blocks between results become user messages of their own, so the order is kept.
func userTurn(i int, raw json.RawMessage, calls map[string]string) ([]chat.Message, error) {
	path := fmt.Sprintf("messages.%d.content", i)
	blocks, text, err := contentBlocks(path, raw)
	if err != nil || blocks == nil {
		return []chat.Message{{Role: "user", Content: text}}, err
	}
	var out []chat.Message
	var sb strings.Builder
	texts := 0 // text blocks since the last tool result
	flush := func() {
		if texts > 0 {
			out = append(out, chat.Message{Role: "user", Content: sb.String()})
		}
		sb.Reset()
		texts = 0
	}
	for j, b := range blocks {
		bp := fmt.Sprintf("%s.%d", path, j)
		switch b.Type {
		case "text":
			sb.WriteString(*b.Text)
			texts++
		case "tool_result":
			msg, err := toolResult(bp, b)
			if err != nil {
				return nil, err
			}
			msg.Name = calls[msg.ToolCallID] // "" for a result of no known call: passed through
			flush()
			out = append(out, msg)
		case "tool_use", "thinking", "redacted_thinking":
			return nil, invalid("%s: %s blocks belong in assistant messages, not user messages", bp, b.Type)
		default:
			return nil, unsupported(bp, b.Type)
		}
	}
	if texts > 0 || len(out) == 0 {
		out = append(out, chat.Message{Role: "user", Content: sb.String()})
	}
	return out, nil
}

// toolResult converts a tool_result block. A failed tool's result is prefixed "Error: ", as
// the chat templates have no field for it and the model should know the call failed.
func toolResult(path string, b block) (chat.Message, error) {
	if b.ToolUseID == nil || *b.ToolUseID == "" {
		return chat.Message{}, invalid("%s.tool_use_id: Field required; name the tool_use block this result answers", path)
	}
	var content string
	if isSet(b.Content) { // content is optional
		var err error
		if content, err = blocksText(path+".content", b.Content); err != nil {
			return chat.Message{}, err
		}
	}
	if b.IsError {
		content = strings.TrimSpace("Error: " + content)
	}
	return chat.Message{Role: "tool", ToolCallID: *b.ToolUseID, Content: content}, nil
}

// assistantTurn converts an assistant message: text, thinking (as reasoning) and tool_use
// blocks (as tool calls). Redacted thinking is encrypted by Anthropic and means nothing here:
// it is dropped.
func assistantTurn(i int, raw json.RawMessage) (chat.Message, error) {
	path := fmt.Sprintf("messages.%d.content", i)
	msg := chat.Message{Role: "assistant"}
	blocks, text, err := contentBlocks(path, raw)
	if err != nil || blocks == nil {
		msg.Content = text
		return msg, err
	}
	var sb strings.Builder
	for j, b := range blocks {
		bp := fmt.Sprintf("%s.%d", path, j)
		switch b.Type {
		case "text":
			sb.WriteString(*b.Text)
		case "thinking":
			if b.Thinking == nil {
				return msg, invalid("%s.thinking: Field required", bp)
			}
			msg.Reasoning = chat.JoinText(msg.Reasoning, *b.Thinking)
		case "redacted_thinking":
		case "tool_use":
			call, err := toolUse(bp, b)
			if err != nil {
				return msg, err
			}
			msg.ToolCalls = append(msg.ToolCalls, call)
		case "tool_result":
			return msg, invalid("%s: tool_result blocks belong in user messages, after the assistant message with the tool_use", bp)
		default:
			return msg, unsupported(bp, b.Type)
		}
	}
	msg.Content = sb.String()
	return msg, nil
}

// toolUse converts a tool_use block of the history; its input must be a JSON object.
func toolUse(path string, b block) (chat.ToolCall, error) {
	switch {
	case b.ID == nil || *b.ID == "":
		return chat.ToolCall{}, invalid("%s.id: Field required", path)
	case b.Name == nil || *b.Name == "":
		return chat.ToolCall{}, invalid("%s.name: Field required", path)
	case !isSet(b.Input):
		return chat.ToolCall{}, invalid("%s.input: Field required; send the call's arguments as a JSON object", path)
	case kind(b.Input) != "an object":
		return chat.ToolCall{}, invalid("%s.input: Input should be a valid dictionary (the call's arguments as a JSON object), got %s", path, kind(b.Input))
	}
	// Compact, as the core serves arguments: the history renders as the reply was generated.
	var args bytes.Buffer
	if err := json.Compact(&args, b.Input); err != nil {
		return chat.ToolCall{}, invalid("%s.input: %v", path, err)
	}
	return chat.ToolCall{ID: *b.ID, Name: *b.Name, Arguments: args.Bytes()}, nil
}

// isSet reports whether a raw field is present and not null.
func isSet(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

// systemText reads system: absent, null, a string, or an array of text blocks.
func systemText(raw json.RawMessage) (string, error) {
	if !isSet(raw) {
		return "", nil
	}
	return blocksText("system", raw)
}

// unsupportedBlocks are the content blocks Anthropic defines that this server cannot take yet.
var unsupportedBlocks = map[string]string{
	"image":              "image input needs a vision model",
	"document":           "document input is not served",
	"server_tool_use":    "server tools are not served",
	"search_result":      "search results are not served",
	"container_upload":   "containers are not served",
	"web_search_result":  "server tools are not served",
	"mcp_tool_use":       "MCP tools are not served",
	"mcp_tool_result":    "MCP tools are not served",
	"code_execution_use": "server tools are not served",
}

// unsupported is the error for a block type that cannot appear where it was sent.
func unsupported(path, typ string) error {
	switch why, known := unsupportedBlocks[typ]; {
	case typ == "":
		return invalid("%s.type: Field required", path)
	case known:
		return invalid("%s: %s content blocks are not supported by this server yet (%s); send text blocks only", path, typ, why)
	case typ == "text", typ == "tool_use", typ == "tool_result", typ == "thinking", typ == "redacted_thinking":
		return invalid("%s: %s blocks cannot appear here; send text blocks only", path, typ)
	default:
		return invalid("%s.type: unknown content block type %q; use text", path, typ)
	}
}

// contentBlocks reads content at path: a string or null (returned as text, with nil blocks) or
// an array of content blocks, each checked for the fields its type needs to be read.
func contentBlocks(path string, raw json.RawMessage) ([]block, string, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0:
		return nil, "", invalid("%s: Field required", path)
	case bytes.Equal(raw, []byte("null")):
		return nil, "", nil
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, "", decodeError(err)
		}
		return nil, s, nil
	case raw[0] != '[':
		return nil, "", invalid("%s: Input should be a valid string or a list of content blocks, got %s", path, kind(raw))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, "", decodeError(err)
	}
	blocks := make([]block, len(items))
	for j, item := range items {
		b := &blocks[j]
		if kind(item) != "an object" {
			return nil, "", invalid("%s.%d: Input should be a content block object like {\"type\":\"text\",\"text\":\"...\"}, got %s", path, j, kind(item))
		}
		if err := json.Unmarshal(item, b); err != nil {
			var typeErr *json.UnmarshalTypeError
			if errors.As(err, &typeErr) && typeErr.Field != "" {
				return nil, "", invalid("%s.%d.%s: Input should be %s", path, j, typeErr.Field, friendlyType(typeErr.Type.String()))
			}
			return nil, "", decodeError(err)
		}
		switch {
		case b.Type == "":
			return nil, "", invalid("%s.%d.type: Field required", path, j)
		case b.Type == "text" && b.Text == nil:
			return nil, "", invalid("%s.%d.text: Field required", path, j)
		}
	}
	return blocks, "", nil
}

// blocksText reads content at path (a string, null, or an array of text blocks) as the text
// of its text blocks, in order and joined without a separator (as the OpenAI dialect joins text
// parts, so that one conversation renders to one prompt whichever dialect carries it).
func blocksText(path string, raw json.RawMessage) (string, error) {
	blocks, text, err := contentBlocks(path, raw)
	if err != nil || blocks == nil {
		return text, err
	}
	var sb strings.Builder
	for j, b := range blocks {
		if b.Type != "text" {
			return "", unsupported(fmt.Sprintf("%s.%d", path, j), b.Type)
		}
		sb.WriteString(*b.Text)
	}
	return sb.String(), nil
}
