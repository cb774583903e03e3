package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
)

// history is the state of one conversation's conversion.
type history struct {
	calls  map[string]string // the last assistant turn's tool_use ids → tool names
	loaded map[string]bool   // tools that tool_reference blocks loaded (deferred tools)
	warn   *warnings
}

// messages renders system and the turns as chat messages: system first, then the turns, with
// consecutive turns of one role combined into one turn (as Anthropic combines them). A user
// turn holding tool results becomes tool messages (and user messages for its text), in order.
// A system message inside messages (Claude Code's reminders) stays a system turn at its place;
// right after the top-level system it joins it. Templates that refuse a system turn there get
// it folded into a user turn (runtime/chat's Render, as llama.cpp's server does).
func (h *history) messages(c *conversation) ([]chat.Message, error) {
	var out []chat.Message
	system, err := systemText(c.System)
	if err != nil {
		return nil, err
	}
	if system != "" {
		out = append(out, chat.Message{Role: "system", Content: system})
	}
	h.calls = map[string]string{}
	for i, m := range c.Messages {
		var msgs []chat.Message
		switch m.Role {
		case "user":
			msgs, err = h.userTurn(i, m.Content)
		case "assistant":
			var msg chat.Message
			msg, err = h.assistantTurn(i, m.Content)
			if i == 0 || c.Messages[i-1].Role != "assistant" {
				// Results answer the calls of the assistant turn before them (consecutive
				// assistant messages are one turn, as Anthropic combines them).
				h.calls = map[string]string{}
			}
			for _, call := range msg.ToolCalls {
				h.calls[call.ID] = call.Name
			}
			msgs = []chat.Message{msg}
		case "system":
			var text string
			text, err = blocksText(fmt.Sprintf("messages.%d.content", i), m.Content)
			msgs = []chat.Message{{Role: "system", Content: text}}
		case "":
			return nil, invalid("messages.%d.role: Field required; use user, assistant or system", i)
		default:
			return nil, invalid("messages.%d.role: Input should be 'user', 'assistant' or 'system', got %q", i, m.Role)
		}
		if err != nil {
			return nil, err
		}
		for _, msg := range msgs {
			if len(out) > 0 && mergeable(out[len(out)-1], msg) {
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

// merge appends next's content, media, reasoning and calls to prev.
func merge(prev *chat.Message, next chat.Message) {
	prev.Media = mergeMedia(*prev, next)
	prev.Content = chat.JoinText(prev.Content, next.Content)
	prev.Reasoning = chat.JoinText(prev.Reasoning, next.Reasoning)
	prev.ToolCalls = append(prev.ToolCalls, next.ToolCalls...)
}

// userTurn converts a user message: its text, and each tool_result as a tool message. Text
// blocks between results become user messages of their own, so the order is kept.
func (h *history) userTurn(i int, raw json.RawMessage) ([]chat.Message, error) {
	path := fmt.Sprintf("messages.%d.content", i)
	blocks, text, err := contentBlocks(path, raw)
	if err != nil || blocks == nil {
		return []chat.Message{{Role: "user", Content: text}}, err
	}
	var out []chat.Message
	var sb strings.Builder
	var media []llm.MediaPart
	texts := 0 // text and image blocks since the last tool result
	flush := func() {
		if texts > 0 {
			out = append(out, chat.Message{Role: "user", Content: sb.String(), Media: media})
		}
		sb.Reset()
		texts, media = 0, nil
	}
	for j, b := range blocks {
		bp := fmt.Sprintf("%s.%d", path, j)
		switch b.Type {
		case "text":
			sb.WriteString(*b.Text)
			texts++
		case "image":
			part, err := imagePart(bp, b, sb.Len())
			if err != nil {
				return nil, err
			}
			media = append(media, part)
			texts++
		case "tool_result":
			msg, err := h.toolResult(bp, b)
			if err != nil {
				return nil, err
			}
			flush()
			out = append(out, msg)
		case "tool_use", "thinking", "redacted_thinking":
			return nil, invalid("%s: %s blocks belong in assistant messages, not user messages", bp, b.Type)
		default:
			return nil, unsupported(bp, b.Type)
		}
	}
	if texts > 0 || len(out) == 0 {
		out = append(out, chat.Message{Role: "user", Content: sb.String(), Media: media})
	}
	return out, nil
}

// toolResult converts a tool_result block, which must answer a tool_use of the assistant turn
// before it (Anthropic refuses any other with this message). A failed tool's result is
// prefixed "Error: ", as the chat templates have no field for it and the model should know
// the call failed.
func (h *history) toolResult(path string, b block) (chat.Message, error) {
	if b.ToolUseID == nil || *b.ToolUseID == "" {
		return chat.Message{}, invalid("%s.tool_use_id: Field required; name the tool_use block this result answers", path)
	}
	id := *b.ToolUseID
	name, ok := h.calls[id]
	if !ok {
		return chat.Message{}, invalid("%s: unexpected `tool_use_id` found in `tool_result` blocks: %s. "+
			"Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", path, truncate(id, 80))
	}
	var content string
	if isSet(b.Content) { // content is optional
		var err error
		if content, err = h.resultText(path+".content", b.Content); err != nil {
			return chat.Message{}, err
		}
	}
	if b.IsError {
		content = strings.TrimSpace("Error: " + content)
	}
	return chat.Message{Role: "tool", ToolCallID: id, Name: name, Content: content}, nil
}

// resultText is a tool result's content as text: its text blocks joined, each tool_reference
// (a tool search's hit, which loads that deferred tool) as a line naming the tool, and images
// and documents dropped with a warning: images in tool results are not served yet, and a
// client such as Claude Code sends them (screenshots, image files it read) to any model.
func (h *history) resultText(path string, raw json.RawMessage) (string, error) {
	blocks, text, err := contentBlocks(path, raw)
	if err != nil || blocks == nil {
		return text, err
	}
	var sb strings.Builder
	for j, b := range blocks {
		bp := fmt.Sprintf("%s.%d", path, j)
		switch b.Type {
		case "text":
			sb.WriteString(*b.Text)
		case "tool_reference":
			if b.ToolName == nil || *b.ToolName == "" {
				return "", invalid("%s.tool_name: Field required", bp)
			}
			if h.loaded == nil {
				h.loaded = map[string]bool{}
			}
			h.loaded[*b.ToolName] = true
			sb.WriteString("Tool loaded: " + *b.ToolName + "\n")
		case "image", "document":
			h.warn.add("%s: the %s block was dropped: this server does not take %ss inside tool results; send it in a user message", bp, b.Type, b.Type)
		default:
			return "", unsupported(bp, b.Type)
		}
	}
	return sb.String(), nil
}

// assistantTurn converts an assistant message: text, thinking (as reasoning) and tool_use
// blocks (as tool calls). Redacted thinking is encrypted by Anthropic and means nothing here:
// it is dropped. So are the blocks of server tools that another server ran (a conversation
// begun on Anthropic's API), with a warning.
func (h *history) assistantTurn(i int, raw json.RawMessage) (chat.Message, error) {
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
			text := *b.Thinking
			if restored, ok := unsign(b.Signature); text == "" && ok {
				text = restored
			}
			msg.Reasoning = chat.JoinText(msg.Reasoning, text)
		case "redacted_thinking":
		case "tool_use":
			call, err := toolUse(bp, b)
			if err != nil {
				return msg, err
			}
			msg.ToolCalls = append(msg.ToolCalls, call)
		case "tool_result":
			return msg, invalid("%s: tool_result blocks belong in user messages, after the assistant message with the tool_use", bp)
		case "server_tool_use", "mcp_tool_use", "mcp_tool_result", "web_search_tool_result", "web_fetch_tool_result",
			"code_execution_tool_result", "bash_code_execution_tool_result", "text_editor_code_execution_tool_result", "tool_search_tool_result":
			h.warn.add("%s: the %s block was dropped: this server runs no server tools", bp, b.Type)
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
