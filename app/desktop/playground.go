package desktop

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/store"
	"github.com/superfluid/superfluid/tray"
)

// Activity is the loaded models' lanes and the latest request records.
func (c *Controller) Activity() tray.Activity {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var act tray.Activity
	for _, m := range c.svc.Models() {
		if !m.Loaded() {
			continue
		}
		_, slots, err := c.svc.Slots(ctx, m.ID)
		if err != nil {
			continue
		}
		for _, l := range slots.Lanes {
			act.Lanes = append(act.Lanes, tray.Lane{Model: m.ID, ID: l.ID, State: l.State, Task: l.Task,
				CachedTokens: l.CachedTokens, Generated: l.Generated})
		}
	}
	recs, _ := c.d.Store.RecentRequests(ctx, 50)
	for _, r := range recs {
		act.Requests = append(act.Requests, tray.Request{
			Time: r.CreatedAt.Local().Format("15:04:05"), Model: r.Model, Endpoint: r.Endpoint, Status: r.Status,
			PromptTokens: r.PromptTokens, CachedTokens: r.CachedTokens, CompletionTokens: r.CompletionTokens,
			Duration: r.Total.Round(time.Millisecond).String(), FinishReason: r.FinishReason, Error: r.Error,
			SpecProposed: r.SpecProposed, SpecAccepted: r.SpecAccepted, CacheMiss: r.CacheMiss,
		})
	}
	return act
}

func (c *Controller) Generating() int { return int(c.generating.Load()) }

// Conversations lists the saved playground chats, most recent first.
func (c *Controller) Conversations() []tray.Conversation {
	list, err := c.d.Store.Conversations(context.Background(), 100)
	if err != nil {
		return nil
	}
	out := make([]tray.Conversation, 0, len(list))
	for _, conv := range list {
		out = append(out, tray.Conversation{ID: conv.ID, Title: conv.Title, Model: conv.Model,
			Updated: conv.UpdatedAt.Local().Format("Jan 2 15:04")})
	}
	return out
}

func (c *Controller) OpenConversation(id string) (tray.Conversation, error) {
	conv, err := c.d.Store.ConversationByID(context.Background(), id)
	if err != nil {
		return tray.Conversation{}, err
	}
	out := tray.Conversation{ID: conv.ID, Title: conv.Title, Model: conv.Model, System: conv.System}
	for _, m := range conv.Messages {
		out.Messages = append(out.Messages, trayMessage(m))
	}
	return out, nil
}

func (c *Controller) SaveConversation(conv tray.Conversation) error {
	rec := store.Conversation{ID: conv.ID, Title: conv.Title, Model: conv.Model, System: conv.System}
	for _, m := range conv.Messages {
		rec.Messages = append(rec.Messages, storedMessage(m))
	}
	return c.d.Store.SaveConversation(context.Background(), rec)
}

// DeleteConversation removes a saved playground chat (the browser playground's delete).
func (c *Controller) DeleteConversation(id string) error {
	return c.d.Store.DeleteConversation(context.Background(), id)
}

// Chat runs a playground reply through the same core as the three APIs (the prefix cache and
// the request records included).
func (c *Controller) Chat(ctx context.Context, s tray.ChatSettings, msgs []tray.Message, onPiece func(tray.Piece)) (tray.ChatStats, error) {
	c.generating.Add(1)
	c.publish(tray.Event{Kind: tray.EventActivity})
	defer func() {
		c.generating.Add(-1)
		c.publish(tray.Event{Kind: tray.EventActivity})
	}()
	req, err := chatRequest(s, msgs)
	if err != nil {
		return tray.ChatStats{}, err
	}
	res, err := c.svc.Chat(ctx, req, func(_ int, ev llm.Event) error {
		if ev.Text != "" || ev.Reasoning != "" {
			onPiece(tray.Piece{Text: ev.Text, Reasoning: ev.Reasoning})
		}
		return nil
	})
	if err != nil {
		return tray.ChatStats{}, err
	}
	u := res.Usage()
	stats := tray.ChatStats{PromptTokens: u.PromptTokens, CachedTokens: u.CachedTokens, CompletionTokens: u.CompletionTokens}
	d := res.Choices[0]
	stats.FinishReason = d.FinishReason
	if span := d.Timings.Decode; span > 0 && u.CompletionTokens > 1 {
		// The first token comes out of the prefill; the rest are the decode (Ollama's eval rate).
		stats.TokensPerSecond = float64(u.CompletionTokens-1) / span.Seconds()
	}
	return stats, nil
}

// chatRequest is a playground reply as the core takes it: each turn's attachments become its
// media parts, before its text (where Ollama's images go, and where the transcript shows them).
func chatRequest(s tray.ChatSettings, msgs []tray.Message) (*core.ChatRequest, error) {
	req := &core.ChatRequest{ID: fmt.Sprintf("playground-%d", time.Now().UnixNano()), Endpoint: "playground", Stream: true, Model: s.Model}
	for _, m := range msgs {
		cm := chat.Message{Role: m.Role, Content: m.Content, Reasoning: m.Reasoning, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			cm.ToolCalls = append(cm.ToolCalls, chat.ToolCall{ID: tc.ID, Name: tc.Name, Arguments: toolArguments(tc.Arguments)})
		}
		for _, a := range m.Attachments {
			part, err := mediaPart(a)
			if err != nil {
				return nil, err
			}
			cm.Media = append(cm.Media, part)
		}
		req.Messages = append(req.Messages, cm)
	}
	temp := s.Temperature
	req.Generation = llm.Request{MaxTokens: s.MaxTokens, Sampling: llm.Sampling{Temperature: &temp, Seed: s.Seed}}
	if s.TopP > 0 {
		topP := s.TopP
		req.Generation.Sampling.TopP = &topP
	}
	return req, nil
}

// mediaPart is an attachment as a media part; the core decodes it (and says what is wrong
// with it) like an API's image or audio part.
func mediaPart(a tray.Attachment) (llm.MediaPart, error) {
	where := "attachment " + a.Name
	kind, _, _ := strings.Cut(a.MIME, "/")
	switch kind {
	case llm.MediaImage, llm.MediaAudio:
	default:
		return llm.MediaPart{}, fmt.Errorf("%w: %s is %q, not an image or audio file", llm.ErrInvalidInput, where, a.MIME)
	}
	return llm.MediaPart{At: 0, Kind: kind, MIME: a.MIME, Data: a.Data, Where: where}, nil
}
