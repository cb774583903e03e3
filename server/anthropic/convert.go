package anthropic

import (
	"bytes"
	"encoding/json"
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
	if oc := req.OutputConfig; oc != nil && isSet(oc.Format) {
		return nil, invalid("output_config.format: structured output is not supported by this server yet; remove output_config.format")
	}
	msgs, err := req.conversation.messages()
	if err != nil {
		return nil, err
	}
	ka, err := models.ParseKeepAlive(req.KeepAlive)
	if err != nil {
		return nil, invalid("keep_alive: %v", err)
	}
	return &core.ChatRequest{
		ID: newID("msg_"), Endpoint: Endpoint, Stream: req.Stream, Model: *req.Model,
		Messages: msgs, Generation: gen, KeepAlive: ka,
	}, nil
}

// check validates what both routes need: a model, messages, and no features not served yet.
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
	if isSet(c.Tools) && !bytes.Equal(bytes.TrimSpace(c.Tools), []byte("[]")) {
		return invalid("tools: tool use is not supported by this server yet; remove tools")
	}
	if c.Thinking != nil && c.Thinking.Type != "" && c.Thinking.Type != "disabled" {
		return invalid(`thinking: extended thinking is not supported by this server yet; remove thinking or send {"type":"disabled"}`)
	}
	return nil
}

// messages renders system and the turns as chat messages: system first, then the turns, with
// consecutive turns of one role combined into one turn (as Anthropic combines them).
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
	for i, m := range c.Messages {
		switch m.Role {
		case "user", "assistant":
		case "system":
			return nil, invalid(`messages.%d.role: Unexpected role "system". The Messages API accepts a top-level `+
				"`system` parameter, not \"system\" as an input message role", i)
		case "":
			return nil, invalid("messages.%d.role: Field required; use user or assistant", i)
		default:
			return nil, invalid("messages.%d.role: Input should be 'user' or 'assistant', got %q", i, m.Role)
		}
		text, err := blocksText(fmt.Sprintf("messages.%d.content", i), m.Content)
		if err != nil {
			return nil, err
		}
		if len(out) > turns && out[len(out)-1].Role == m.Role {
			out[len(out)-1].Content += "\n\n" + text
			continue
		}
		out = append(out, chat.Message{Role: m.Role, Content: text})
	}
	if last := out[len(out)-1]; last.Role == "assistant" {
		if last.Content != "" {
			return nil, invalid("messages.%d: a final assistant message (prefill) is not supported by this server yet; "+
				"end the conversation with a user message", len(c.Messages)-1)
		}
		out = out[:len(out)-1] // an empty final assistant turn asks for nothing
	}
	return out, nil
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
	"tool_use":           "tool use is not served",
	"tool_result":        "tool use is not served",
	"server_tool_use":    "server tools are not served",
	"thinking":           "extended thinking is not served",
	"redacted_thinking":  "extended thinking is not served",
	"search_result":      "search results are not served",
	"container_upload":   "containers are not served",
	"web_search_result":  "server tools are not served",
	"mcp_tool_use":       "MCP tools are not served",
	"mcp_tool_result":    "MCP tools are not served",
	"code_execution_use": "server tools are not served",
}

// blocksText reads content at path (a string, null, or an array of content blocks) as the text
// of its text blocks, in order and joined without a separator (as the OpenAI dialect joins text
// parts, so that one conversation renders to one prompt whichever dialect carries it).
func blocksText(path string, raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0:
		return "", invalid("%s: Field required", path)
	case bytes.Equal(raw, []byte("null")):
		return "", nil
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", decodeError(err)
		}
		return s, nil
	case raw[0] != '[':
		return "", invalid("%s: Input should be a valid string or a list of content blocks, got %s", path, kind(raw))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return "", decodeError(err)
	}
	var sb strings.Builder
	for j, item := range items {
		var b block
		if err := json.Unmarshal(item, &b); err != nil {
			return "", invalid("%s.%d: Input should be a content block object like {\"type\":\"text\",\"text\":\"...\"}, got %s", path, j, kind(item))
		}
		switch b.Type {
		case "text":
			if b.Text == nil {
				return "", invalid("%s.%d.text: Field required", path, j)
			}
			sb.WriteString(*b.Text)
		case "":
			return "", invalid("%s.%d.type: Field required", path, j)
		default:
			why, known := unsupportedBlocks[b.Type]
			if !known {
				return "", invalid("%s.%d.type: unknown content block type %q; use text", path, j, b.Type)
			}
			return "", invalid("%s.%d: %s content blocks are not supported by this server yet (%s); send text blocks only", path, j, b.Type, why)
		}
	}
	return sb.String(), nil
}
