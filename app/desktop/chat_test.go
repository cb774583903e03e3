package desktop_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/tray"
)

// TestContextUse: the meter's count is the core's own (the chat template and the tokenizer,
// as count_tokens counts), grows with the draft, and is measured against the window the model
// would load with, then the one it loaded with; counting does not load the model.
func TestContextUse(t *testing.T) {
	c, cat, _ := newController(t)
	msgs := []tray.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Tell me a story about a fox"}}
	used, window, err := c.ContextUse("m", msgs)
	if err != nil {
		t.Fatal(err)
	}
	want, err := cat.Svc.CountTokens(context.Background(), "m", []chat.Message{
		{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Tell me a story about a fox"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	set, _ := c.Settings("m")
	if used != want || used == 0 || window != set.DefaultContext || window == 0 {
		t.Fatalf("used %d of %d; the core counts %d, the default window is %d", used, window, want, set.DefaultContext)
	}
	if state(c, "m").Loaded() {
		t.Fatal("counting loaded the model")
	}
	longer, _, err := c.ContextUse("m", append(msgs, tray.Message{Role: "assistant", Content: strings.Repeat("and then ", 20)}))
	if err != nil || longer <= used {
		t.Fatalf("a longer chat counts %d (%v), the shorter %d", longer, err, used)
	}
	set.ContextLength = 256
	if err := c.SetSettings("m", set); err != nil {
		t.Fatal(err)
	}
	if _, window, _ = c.ContextUse("m", msgs); window != 256 {
		t.Fatalf("with a 256-token setting the window is %d", window)
	}
	if err := c.Load("m"); err != nil {
		t.Fatal(err)
	}
	if _, window, _ = c.ContextUse("m", msgs); window != 512 { // the fake engine's window
		t.Fatalf("loaded, the window is %d", window)
	}
	if _, _, err := c.ContextUse("nope", msgs); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("an unknown model: %v", err)
	}
}

// TestConversationToolsAreSaved: a thought, tool calls (one with broken arguments) and tool
// results survive a save and an open, and search finds the chat by its text.
func TestConversationToolsAreSaved(t *testing.T) {
	c, _, _ := newController(t)
	conv := tray.Conversation{ID: "c1", Title: "Weather", Model: "m", Messages: []tray.Message{
		{Role: "user", Content: "Is it raining in Oslo?"},
		{Role: "assistant", Reasoning: "Call the tool.", ReasoningTokens: 4, ToolCalls: []tray.ToolCall{
			{ID: "call_1", Name: "weather", Arguments: `{"city":"Oslo"}`}, {ID: "call_2", Name: "weather", Arguments: `{"city":`}}},
		{Role: "tool", ToolCallID: "call_1", Content: "rain, 12°C"},
		{Role: "assistant", Content: "Yes, **rain**."},
	}}
	if err := c.SaveConversation(conv); err != nil {
		t.Fatal(err)
	}
	back, err := c.OpenConversation("c1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Messages, conv.Messages) {
		t.Fatalf("saved %+v\nopened %+v", conv.Messages, back.Messages)
	}
	found, err := c.SearchConversations("raining", 10)
	if err != nil || len(found) != 1 || found[0].ID != "c1" || found[0].Updated == "" {
		t.Fatalf("search: %+v %v", found, err)
	}
	if none, _ := c.SearchConversations("snow", 10); len(none) != 0 {
		t.Fatalf("search for snow: %+v", none)
	}
	// The history goes back to the model with its calls, the broken ones included.
	if _, _, err := c.ContextUse("m", back.Messages); err != nil {
		t.Fatalf("counting a chat with tool calls: %v", err)
	}
}
