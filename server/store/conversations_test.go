package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

func TestConversations(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	first := Conversation{ID: "c1", Title: "A dog", Model: "stories260K", System: "Be brief.",
		Messages: []ConversationMessage{{Role: "user", Content: "Once upon a time"}, {Role: "assistant", Content: " there was a dog."}}}
	if err := s.SaveConversation(ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveConversation(ctx, Conversation{ID: "c2", Title: "Second", Model: "m"}); err != nil {
		t.Fatal(err)
	}
	first.Messages = append(first.Messages, ConversationMessage{Role: "user", Content: "More"})
	if err := s.SaveConversation(ctx, first); err != nil { // c1 is now the most recent
		t.Fatal(err)
	}
	s.Close()
	if s, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	list, err := s.Conversations(ctx, 10)
	if err != nil || len(list) != 2 || list[0].ID != "c1" || list[1].ID != "c2" || list[0].Messages != nil {
		t.Fatalf("list %+v %v", list, err)
	}
	got, err := s.ConversationByID(ctx, "c1")
	if err != nil || got.Title != "A dog" || got.System != "Be brief." || len(got.Messages) != 3 || got.Messages[1].Content != " there was a dog." ||
		got.CreatedAt.IsZero() || got.UpdatedAt.Before(got.CreatedAt) {
		t.Fatalf("reopened %+v %v", got, err)
	}
	if err := s.DeleteConversation(ctx, "c2"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ConversationByID(ctx, "c2"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted conversation: %v", err)
	}
	if err := s.DeleteConversation(ctx, "c2"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}
