package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Conversation is a saved playground chat.
type Conversation struct {
	ID, Title, Model, System string
	Messages                 []ConversationMessage
	CreatedAt, UpdatedAt     time.Time
}

// ConversationMessage is one turn. The messages are kept as one JSON array, so a field added
// here needs no migration: older rows simply lack it.
type ConversationMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// Reasoning is a thinking model's thought before an assistant turn.
	Reasoning       string `json:"reasoning,omitempty"`
	ReasoningTokens int    `json:"reasoning_tokens,omitempty"`
	// ToolCalls are an assistant turn's calls; ToolCallID the call a tool turn answers.
	ToolCalls  []ConversationToolCall `json:"tool_calls,omitempty"`
	ToolCallID string                 `json:"tool_call_id,omitempty"`
}

// ConversationToolCall is one tool call, its arguments as the model wrote them (valid JSON or
// not: a playground shows what happened).
type ConversationToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// SaveConversation inserts c or replaces the saved one with its id; UpdatedAt becomes now and
// a zero CreatedAt too.
func (s *Store) SaveConversation(ctx context.Context, c Conversation) error {
	if c.ID == "" {
		return errors.New("save conversation: empty id")
	}
	msgs := c.Messages
	if msgs == nil {
		msgs = []ConversationMessage{}
	}
	b, err := json.Marshal(msgs)
	if err != nil {
		return fmt.Errorf("save conversation %s: %w", c.ID, err)
	}
	now := time.Now()
	if c.CreatedAt.IsZero() {
		c.CreatedAt = now
	}
	_, err = s.w.ExecContext(ctx, `INSERT INTO conversations (id, title, model, system, messages, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET title = excluded.title, model = excluded.model, system = excluded.system,
			messages = excluded.messages, updated_at = excluded.updated_at`,
		c.ID, c.Title, c.Model, c.System, string(b), formatTime(c.CreatedAt), formatTime(now))
	if err != nil {
		return fmt.Errorf("save conversation %s: %w", c.ID, err)
	}
	return nil
}

// Conversations lists up to limit saved conversations, most recently updated first, without
// their messages.
func (s *Store) Conversations(ctx context.Context, limit int) ([]Conversation, error) {
	return s.conversationList(ctx, "list conversations", `SELECT id, title, model, system, created_at, updated_at FROM conversations
		ORDER BY updated_at DESC, id LIMIT ?`, limit)
}

// conversationList runs query, which selects id, title, model, system, created_at and
// updated_at, and reads its rows as conversations without messages; what names the errors.
func (s *Store) conversationList(ctx context.Context, what, query string, args ...any) ([]Conversation, error) {
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	out := []Conversation{}
	for rows.Next() {
		var c Conversation
		var created, updated string
		if err := rows.Scan(&c.ID, &c.Title, &c.Model, &c.System, &created, &updated); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		c.CreatedAt, _ = parseTime(created)
		c.UpdatedAt, _ = parseTime(updated)
		out = append(out, c)
	}
	return out, rows.Err()
}

// ConversationByID returns a saved conversation with its messages, or an error wrapping
// ErrNotFound.
func (s *Store) ConversationByID(ctx context.Context, id string) (Conversation, error) {
	var c Conversation
	var msgs, created, updated string
	err := s.r.QueryRowContext(ctx, `SELECT id, title, model, system, messages, created_at, updated_at
		FROM conversations WHERE id = ?`, id).Scan(&c.ID, &c.Title, &c.Model, &c.System, &msgs, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("conversation %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return c, fmt.Errorf("conversation %s: %w", id, err)
	}
	if err := json.Unmarshal([]byte(msgs), &c.Messages); err != nil {
		return c, fmt.Errorf("conversation %s: %w", id, err)
	}
	c.CreatedAt, _ = parseTime(created)
	c.UpdatedAt, _ = parseTime(updated)
	return c, nil
}

// DeleteConversation removes a saved conversation; a missing one wraps ErrNotFound.
func (s *Store) DeleteConversation(ctx context.Context, id string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM conversations WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("delete conversation %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("delete conversation %s: %w", id, ErrNotFound)
	}
	return nil
}
