package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
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

// withMedia is the text of a message item's or a function output's parts with their images
// and audio clips at their places, each named for errors by where the item sat.
func (it *item) withMedia() (string, []llm.MediaPart) {
	parts, field := it.Content, "content"
	if it.Type == itemCallOutput || it.Type == itemCustomCallOutput {
		if len(bytes.TrimSpace(it.Output)) == 0 || bytes.TrimSpace(it.Output)[0] != '[' {
			return it.text(), nil
		}
		parts, _ = parseContent("output", "tool", it.Output) // validated when it came in
		field = "output"
	}
	where := it.param
	if where == "" {
		where = "the earlier input item " + it.ID // of a previous response
	}
	var sb strings.Builder
	var media []llm.MediaPart
	for j, p := range parts {
		pw := fmt.Sprintf("%s.%s[%d]", where, field, j)
		switch p.Type {
		case "input_image":
			media = append(media, llm.MediaPart{At: sb.Len(), Kind: llm.MediaImage, URL: p.ImageURL, Where: pw})
		case "input_audio":
			if p.InputAudio == nil {
				continue
			}
			raw, _ := json.Marshal(p.InputAudio)
			mp, err := audioPart(pw, raw, sb.Len())
			if err != nil {
				continue // checked when it came in
			}
			media = append(media, mp)
		default:
			sb.WriteString(p.Text)
		}
	}
	return sb.String(), media
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
			args, ok := historyArguments(it.Arguments) // checked when it came in, or a stored cut call
			if !ok {
				args = json.RawMessage("{}")
			}
			turn.ToolCalls = append(turn.ToolCalls, chat.ToolCall{ID: it.CallID, Name: ts.modelName(false, it.Namespace, it.Name), Arguments: args})
		case it.Type == itemCustomCall:
			open(true)
			turn.ToolCalls = append(turn.ToolCalls, chat.ToolCall{ID: it.CallID, Name: ts.modelName(true, it.Namespace, it.Name),
				Arguments: customArguments(it.Input)})
		case it.Type == itemCallOutput || it.Type == itemCustomCallOutput:
			flush()
			text, media := it.withMedia()
			out = append(out, chat.Message{Role: "tool", ToolCallID: it.CallID, Content: text, Media: media})
		case it.Role == "assistant":
			open(turn != nil && turn.Content == "" && len(turn.ToolCalls) == 0)
			turn.Content = it.text()
		default:
			flush()
			role := it.Role
			if role == "developer" {
				role = "system" // the template's name for it
			}
			text, media := it.withMedia()
			out = append(out, chat.Message{Role: role, Content: text, Media: media})
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
