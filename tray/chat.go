package tray

// ChatController is what the playground needs beyond Chat and the saved conversations: how
// much of the model's window a conversation takes, and search over saved chats. (Branching
// and importing save through SaveConversation; export is the playground's own.)
type ChatController interface {
	// ContextUse is how many tokens msgs take as the model's prompt (its chat template
	// included) and the model's window; used is an estimate when the model is not loaded.
	ContextUse(model string, msgs []Message) (used, window int, err error)
	// SearchConversations lists up to limit saved chats, most recent first and without
	// messages, whose title or message text holds query (case-insensitive).
	SearchConversations(query string, limit int) ([]Conversation, error)
}

// ToolCall is one call of a tool an assistant turn made.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the call's arguments as the model wrote them: JSON, or not (then shown
	// as text).
	Arguments string `json:"arguments"`
}
