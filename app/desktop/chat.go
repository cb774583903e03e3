package desktop

import (
	"context"
	"encoding/json"
	"time"

	"github.com/superfluid/superfluid/server/store"
	"github.com/superfluid/superfluid/tray"
)

// ContextUse is the playground's context meter: msgs through the model's chat template and
// tokenizer, as the core counts them for Anthropic's count_tokens (a model that is not loaded
// is counted by its tokenizer-only worker, without loading the weights), against the window
// the model has loaded, or would load with.
func (c *Controller) ContextUse(model string, msgs []tray.Message) (used, window int, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := chatRequest(tray.ChatSettings{Model: model}, msgs)
	if err != nil {
		return 0, 0, err
	}
	used, err = c.svc.CountChatTokens(ctx, req)
	if err != nil {
		return 0, 0, err
	}
	return used, c.window(model), nil
}

// window is the context a request to the model may fill: the loaded engine's, else what its
// settings (or the default rule) give it at its next load.
func (c *Controller) window(model string) int {
	if m, err := c.svc.Model(model); err == nil && m.Loaded() {
		if n := m.Info().ContextLength; n > 0 {
			return n
		}
	}
	set, err := c.Settings(model)
	if err != nil {
		return 0
	}
	if set.ContextLength > 0 {
		return set.ContextLength
	}
	return set.DefaultContext
}

// SearchConversations finds saved playground chats by title and message text.
func (c *Controller) SearchConversations(query string, limit int) ([]tray.Conversation, error) {
	list, err := c.d.Store.SearchConversations(context.Background(), query, limit)
	if err != nil {
		return nil, err
	}
	out := make([]tray.Conversation, 0, len(list))
	for _, conv := range list {
		out = append(out, tray.Conversation{ID: conv.ID, Title: conv.Title, Model: conv.Model,
			Updated: conv.UpdatedAt.Local().Format("Jan 2 15:04")})
	}
	return out, nil
}

// storedMessage is a turn as the store keeps it (its attachments are not kept).
func storedMessage(m tray.Message) store.ConversationMessage {
	out := store.ConversationMessage{Role: m.Role, Content: m.Content, Reasoning: m.Reasoning,
		ReasoningTokens: m.ReasoningTokens, ToolCallID: m.ToolCallID}
	for _, tc := range m.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, store.ConversationToolCall{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
	}
	return out
}

func trayMessage(m store.ConversationMessage) tray.Message {
	out := tray.Message{Role: m.Role, Content: m.Content, Reasoning: m.Reasoning,
		ReasoningTokens: m.ReasoningTokens, ToolCallID: m.ToolCallID}
	for _, tc := range m.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, tray.ToolCall{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
	}
	return out
}

// toolArguments is a saved call's arguments as the core takes them, a JSON object: an object
// as it is, and anything else (a model's broken JSON) kept as text inside one, so the history
// still renders and the model still sees what it wrote.
func toolArguments(args string) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &obj) == nil && obj != nil {
		return json.RawMessage(args)
	}
	b, _ := json.Marshal(map[string]string{"invalid_json": args})
	return b
}
