package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/superfluid/superfluid/runtime/chat"
)

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
