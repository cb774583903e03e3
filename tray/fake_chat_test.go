package tray

import (
	"strings"
)

// fakeChat is the fake's context window and counting; a nil one is a 2048-token window.
type fakeChat struct {
	window   int
	counted  int      // ContextUse calls
	searched []string // the queries SearchConversations got
	err      error    // ContextUse fails with it
}

func (f *fakeController) chatState() *fakeChat {
	if f.chat == nil {
		f.chat = &fakeChat{window: 2048}
	}
	return f.chat
}

// ContextUse counts a token a word, plus 4 a message for the template around it.
func (f *fakeController) ContextUse(model string, msgs []Message) (int, int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.chatState()
	c.counted++
	if c.err != nil {
		return 0, 0, c.err
	}
	used := 0
	for _, m := range msgs {
		used += 4 + len(strings.Fields(m.Content))
	}
	return used, c.window, nil
}

func (f *fakeController) SearchConversations(query string, limit int) ([]Conversation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.chatState().searched = append(f.chatState().searched, query)
	q := strings.ToLower(query)
	var out []Conversation
	for i := len(f.convs) - 1; i >= 0 && len(out) < limit; i-- {
		c := f.convs[i]
		hit := strings.Contains(strings.ToLower(c.Title), q)
		for _, m := range c.Messages {
			hit = hit || strings.Contains(strings.ToLower(m.Content), q)
		}
		if hit {
			c.Messages = nil
			out = append(out, c)
		}
	}
	return out, nil
}
