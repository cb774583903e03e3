package openai

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/superfluid/superfluid/runtime/chat"
)

// text is the concatenated text of the item's parts: a message's content, a reasoning item's
// reasoning text (else its blob's, else its summary), a function_call_output's output.
func (it *item) text() string {
	parts := it.Content
	switch it.Type {
	case itemReasoning:
		if len(parts) == 0 && it.EncryptedContent != "" {
			if s, err := openReasoning("encrypted_content", it.EncryptedContent); err == nil { // checked when it came in
				return s
			}
		}
		if len(parts) == 0 {
			parts = it.Summary
		}
	case itemCallOutput, itemCustomCallOutput:
		var s string
		if json.Unmarshal(it.Output, &s) == nil {
			return s
		}
		parts, _ = parseContent("output", "tool", it.Output) // validated when it came in
	}
	var sb strings.Builder
	for _, p := range parts {
		sb.WriteString(p.Text)
	}
	return sb.String()
}

// itemMessages is a conversation of items as chat messages. An assistant turn is built from
// the items the model produced for it: reasoning, then text, then function calls, each
// optional, so that a turn renders through the template as the model wrote it. Each output
// then becomes a tool message. Calls are named as the model knows the tools (ts).
func itemMessages(items []item, ts *toolSet) []chat.Message {
	var out []chat.Message
	var turn *chat.Message // the assistant turn being gathered
	flush := func() {
		if turn != nil {
			out = append(out, *turn)
			turn = nil
		}
	}
	// open starts a new turn unless the current one can still take the next piece.
	open := func(fits bool) {
		if turn != nil && !fits {
			flush()
		}
		if turn == nil {
			turn = &chat.Message{Role: "assistant"}
		}
	}
	for i := range items {
		it := &items[i]
		switch {
		case it.Type == itemReasoning:
			open(turn != nil && turn.Reasoning == "" && turn.Content == "" && len(turn.ToolCalls) == 0)
			turn.Reasoning = it.text()
		case it.Type == itemCall:
			open(true)
			args := json.RawMessage(strings.TrimSpace(it.Arguments))
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			turn.ToolCalls = append(turn.ToolCalls, chat.ToolCall{ID: it.CallID, Name: ts.modelName(false, it.Namespace, it.Name), Arguments: args})
		case it.Type == itemCustomCall:
			open(true)
			turn.ToolCalls = append(turn.ToolCalls, chat.ToolCall{ID: it.CallID, Name: ts.modelName(true, it.Namespace, it.Name),
				Arguments: customArguments(it.Input)})
		case it.Type == itemCallOutput || it.Type == itemCustomCallOutput:
			flush()
			out = append(out, chat.Message{Role: "tool", ToolCallID: it.CallID, Content: it.text()})
		case it.Role == "assistant":
			open(turn != nil && turn.Content == "" && len(turn.ToolCalls) == 0)
			turn.Content = it.text()
		default:
			flush()
			role := it.Role
			if role == "developer" {
				role = "system" // the template's name for it
			}
			out = append(out, chat.Message{Role: role, Content: it.text()})
		}
	}
	flush()
	return out
}

// checkCallOutputs refuses a function_call_output (or custom_tool_call_output) in input
// whose call_id answers no call of the conversation (earlier items, or the input before it),
// as OpenAI does.
func checkCallOutputs(history, input []item) error {
	calls := map[string]bool{}
	for _, it := range history {
		if it.Type == itemCall || it.Type == itemCustomCall {
			calls[it.CallID] = true
		}
	}
	for i, it := range input {
		switch {
		case it.Type == itemCall || it.Type == itemCustomCall:
			calls[it.CallID] = true
		case it.Type == itemCallOutput && !calls[it.CallID]:
			return invalid(fmt.Sprintf("input[%d].call_id", i), fmt.Sprintf(
				"No tool call found for function call output with call_id %s. Send the function_call item before it, or continue the response that made the call with previous_response_id.", it.CallID))
		case it.Type == itemCustomCallOutput && !calls[it.CallID]:
			return invalid(fmt.Sprintf("input[%d].call_id", i), fmt.Sprintf(
				"No tool call found for custom tool call output with call_id %s. Send the custom_tool_call item before it, or continue the response that made the call with previous_response_id.", it.CallID))
		}
	}
	return nil
}
