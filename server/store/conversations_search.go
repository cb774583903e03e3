package store

import (
	"context"
	"strings"
)

// SearchConversations lists up to limit saved conversations, most recently updated first and
// without their messages, whose title or any message's text holds query (ASCII letters match
// in either case, as SQLite's LIKE does). The text is searched inside the JSON array, per
// message, so a query never matches the array's own keys ("role", "content").
func (s *Store) SearchConversations(ctx context.Context, query string, limit int) ([]Conversation, error) {
	like := "%" + escapeLike(query) + "%"
	return s.conversationList(ctx, "search conversations", `SELECT id, title, model, system, created_at, updated_at FROM conversations c
		WHERE c.title LIKE ?1 ESCAPE '\'
			OR EXISTS (SELECT 1 FROM json_each(c.messages) m
				WHERE json_extract(m.value, '$.content') LIKE ?1 ESCAPE '\'
					OR json_extract(m.value, '$.reasoning') LIKE ?1 ESCAPE '\')
		ORDER BY updated_at DESC, id LIMIT ?2`, like, limit)
}

// escapeLike makes % and _ in q match themselves in a LIKE pattern with ESCAPE '\'.
func escapeLike(q string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(q)
}
