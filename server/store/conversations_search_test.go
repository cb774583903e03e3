package store

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
)

// TestSearchConversations: a query finds titles and message text (either case), never the
// JSON's keys, treats % and _ as themselves, and is bounded; reasoning and tool calls are
// kept with the messages.
func TestSearchConversations(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tools := Conversation{ID: "t", Title: "Weather", Model: "m", Messages: []ConversationMessage{
		{Role: "user", Content: "Rain in Oslo?"},
		{Role: "assistant", Reasoning: "I should call the tool.", ToolCalls: []ConversationToolCall{{ID: "call_1", Name: "weather", Arguments: `{"city": "Oslo"`}}},
		{Role: "tool", ToolCallID: "call_1", Content: "12°C, 100% rain"},
	}}
	for _, c := range []Conversation{
		{ID: "a", Title: "A fox", Model: "m", Messages: []ConversationMessage{{Role: "user", Content: "Tell me about FOXES"}}},
		{ID: "b", Title: "Gardening", Model: "m", Messages: []ConversationMessage{{Role: "user", Content: "How do I grow tomatoes?"}}},
		tools,
	} {
		if err := s.SaveConversation(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		query string
		limit int
		want  []string
	}{
		{"fox", 10, []string{"a"}},           // title and text, either case
		{"tomato", 10, []string{"b"}},        // message text only
		{"role", 10, nil},                    // the JSON's keys are not text
		{"100%", 10, []string{"t"}},          // % is itself
		{"1_0", 10, nil},                     // so is _
		{"call the tool", 10, []string{"t"}}, // the reasoning is text too
		{"", 2, []string{"t", "b"}},          // bounded, most recent first
	} {
		got, err := s.SearchConversations(ctx, tc.query, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, c := range got {
			ids = append(ids, c.ID)
			if c.Messages != nil {
				t.Errorf("%q: a listing carries messages", tc.query)
			}
		}
		if !reflect.DeepEqual(ids, tc.want) {
			t.Errorf("search %q: %v, want %v", tc.query, ids, tc.want)
		}
	}
	back, err := s.ConversationByID(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Messages, tools.Messages) {
		t.Fatalf("saved %+v, read back %+v", tools.Messages, back.Messages)
	}
}
