package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// The Anthropic and Ollama dialects.

type anthropicMessage struct {
	ID      *string `json:"id"`
	Type    *string `json:"type"`
	Role    *string `json:"role"`
	Model   *string `json:"model"`
	Content []struct {
		Type  *string          `json:"type"`
		Text  *string          `json:"text"`
		ID    *string          `json:"id"`
		Name  *string          `json:"name"`
		Input *json.RawMessage `json:"input"`
	} `json:"content"`
	StopReason *string `json:"stop_reason"`
	Usage      *struct {
		InputTokens  *int `json:"input_tokens"`
		OutputTokens *int `json:"output_tokens"`
	} `json:"usage"`
}

var stopReasons = []string{"end_turn", "max_tokens", "stop_sequence", "tool_use"}

func (m *anthropicMessage) check(most int, tools bool) error {
	switch {
	case m.ID == nil || !strings.HasPrefix(*m.ID, "msg_") || m.Type == nil || *m.Type != "message" || m.Role == nil || *m.Role != "assistant" || m.Model == nil:
		return fmt.Errorf("id, type, role or model wrong")
	case m.StopReason == nil || !slices.Contains(stopReasons, *m.StopReason):
		return fmt.Errorf("stop_reason %v", m.StopReason)
	case m.Usage == nil || m.Usage.InputTokens == nil || m.Usage.OutputTokens == nil || *m.Usage.InputTokens < 1 || *m.Usage.OutputTokens > most:
		return fmt.Errorf("usage %+v", m.Usage)
	}
	uses := 0
	for i, b := range m.Content {
		switch {
		case b.Type == nil:
			return fmt.Errorf("block %d has no type", i)
		case *b.Type == "text" && b.Text == nil:
			return fmt.Errorf("text block %d without text", i)
		case *b.Type == "tool_use":
			uses++
			if b.ID == nil || !strings.HasPrefix(*b.ID, "toolu_") || b.Name == nil || *b.Name != "get_weather" || b.Input == nil {
				return fmt.Errorf("tool_use block %d lacks id, name or input", i)
			}
			if err := checkCity(*b.Input); err != nil {
				return err
			}
		}
	}
	if tools && *m.StopReason != "max_tokens" && (*m.StopReason != "tool_use" || uses != 1) {
		return fmt.Errorf("tool_choice any: stop_reason %q with %d tool_use blocks", *m.StopReason, uses)
	}
	return nil
}

func (s *soak) messagesBody(r *req, stream, tools bool) map[string]any {
	b := map[string]any{"model": s.model, "max_tokens": r.maxTokens(), "temperature": 0.8,
		"messages": []map[string]string{{"role": "user", "content": r.prompt()}}}
	if tools {
		b["messages"] = []map[string]string{{"role": "user", "content": r.weatherQuestion()}}
		b["temperature"], b["max_tokens"] = 0, 80
		b["tools"] = []any{map[string]any{"name": "get_weather", "description": "The weather in a city", "input_schema": cityParameters}}
		b["tool_choice"] = map[string]any{"type": "any", "disable_parallel_tool_use": true}
	}
	if stream {
		b["stream"] = true
	}
	if r.hangUp {
		b["ignore_eos"] = true
	}
	return b
}

// messages is POST /v1/messages, not streamed.
func (s *soak) messages(ctx context.Context, r *req, tools bool) outcome {
	body := s.messagesBody(r, false, tools)
	_, _, o, _ := postJSON(ctx, s, anthropicDialect, "/v1/messages", "message", body, func(m *anthropicMessage) error {
		return m.check(body["max_tokens"].(int), tools)
	})
	return o
}

// anthropicOrder is the event names each event may follow ("" is the start).
var anthropicOrder = map[string][]string{
	"message_start":       {""},
	"content_block_start": {"message_start", "content_block_stop"},
	"content_block_delta": {"content_block_start", "content_block_delta"},
	"content_block_stop":  {"content_block_start", "content_block_delta"},
	"message_delta":       {"message_start", "content_block_stop"},
	"message_stop":        {"message_delta"},
}

// messagesStream is POST /v1/messages with stream: message_start, content blocks,
// message_delta, message_stop, in that order (ping anywhere; an error event ends it).
func (s *soak) messagesStream(ctx context.Context, r *req, tools bool) outcome {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	body := s.messagesBody(r, true, tools)
	c, refused, ok := s.send(ctx, anthropicDialect, http.MethodPost, "/v1/messages", body, true)
	if !ok {
		return refused
	}
	defer c.res.Body.Close()
	var (
		last, failure, stop string
		ended, disconnected bool
		toolInput           strings.Builder
		uses                int
	)
	err := readSSE(c.res.Body, func(ev sseEvent) error {
		if ended {
			return badEvent("an event after the stream ended: %s %s", ev.name, clip([]byte(ev.data)))
		}
		var e struct {
			Type         *string `json:"type"`
			ContentBlock *struct {
				Type *string `json:"type"`
				Name *string `json:"name"`
			} `json:"content_block"`
			Delta *struct {
				Type        *string `json:"type"`
				Text        *string `json:"text"`
				PartialJSON *string `json:"partial_json"`
				StopReason  *string `json:"stop_reason"`
			} `json:"delta"`
		}
		if err := strictJSON([]byte(ev.data), &e); err != nil {
			return badEvent("event %s: %v", clip([]byte(ev.data)), err)
		}
		if e.Type == nil || *e.Type != ev.name {
			return badEvent("event %q carries type %v", ev.name, e.Type)
		}
		switch ev.name {
		case "ping":
			return nil
		case "error":
			msg, err := errorMessage(anthropicDialect, []byte(ev.data))
			if err != nil {
				return badEvent("error event %s: %v", clip([]byte(ev.data)), err)
			}
			ended, failure = true, "error event: "+msg
			return nil
		}
		if !slices.Contains(anthropicOrder[ev.name], last) {
			return badEvent("%s after %q", ev.name, last)
		}
		last = ev.name
		switch ev.name {
		case "content_block_start":
			if e.ContentBlock == nil || e.ContentBlock.Type == nil {
				return badEvent("content_block_start without a block")
			}
			if *e.ContentBlock.Type == "tool_use" {
				uses++
			}
		case "content_block_delta":
			if e.Delta == nil || e.Delta.Type == nil {
				return badEvent("content_block_delta without a delta")
			}
			if e.Delta.PartialJSON != nil {
				toolInput.WriteString(*e.Delta.PartialJSON)
			}
			if r.hangUp && e.Delta.Text != nil && *e.Delta.Text != "" {
				disconnected = true
				return errStopReading
			}
		case "message_delta":
			if e.Delta == nil || e.Delta.StopReason == nil || !slices.Contains(stopReasons, *e.Delta.StopReason) {
				return badEvent("message_delta without a stop_reason: %s", clip([]byte(ev.data)))
			}
			stop = *e.Delta.StopReason
		case "message_stop":
			ended = true
		}
		return nil
	})
	if err == errStopReading {
		err = nil
	}
	o := streamEnd(err, disconnected, ended, failure)
	if o.malformed == "" && o.failure == "" && !o.disconnected && tools && stop != "max_tokens" {
		if stop != "tool_use" || uses != 1 {
			o.malformed = fmt.Sprintf("streamed tool_choice any: stop_reason %q with %d tool_use blocks", stop, uses)
		} else if err := checkCity([]byte(toolInput.String())); err != nil {
			o.malformed = "streamed tool_use: " + err.Error()
		}
	}
	return o
}

type ollamaCall struct {
	Function *struct {
		Name      *string          `json:"name"`
		Arguments *json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// ollamaLine is one line (or the whole reply) of /api/chat and /api/generate.
type ollamaLine struct {
	Model     *string `json:"model"`
	CreatedAt *string `json:"created_at"`
	Message   *struct {
		Role      *string      `json:"role"`
		Content   *string      `json:"content"`
		ToolCalls []ollamaCall `json:"tool_calls"`
	} `json:"message"`
	Response   *string `json:"response"`
	Done       *bool   `json:"done"`
	DoneReason *string `json:"done_reason"`
	EvalCount  *int    `json:"eval_count"`
	Error      *string `json:"error"`
}

// check checks one line; chat says which endpoint; final whether it must be the done line.
func (l *ollamaLine) check(chat bool, most int) error {
	switch {
	case l.Model == nil || l.CreatedAt == nil || l.Done == nil:
		return fmt.Errorf("model, created_at or done missing")
	case chat && (l.Message == nil || l.Message.Role == nil || *l.Message.Role != "assistant"):
		return fmt.Errorf("no assistant message")
	case !chat && l.Response == nil:
		return fmt.Errorf("no response")
	}
	for _, c := range l.callsOf() {
		if c.Function == nil || c.Function.Name == nil || *c.Function.Name != "get_weather" || c.Function.Arguments == nil {
			return fmt.Errorf("a tool call without its function")
		}
		if err := checkCity(*c.Function.Arguments); err != nil {
			return err
		}
	}
	if *l.Done {
		if l.DoneReason == nil || (*l.DoneReason != "stop" && *l.DoneReason != "length") || l.EvalCount == nil || *l.EvalCount > most {
			return fmt.Errorf("done line: done_reason %v, eval_count %v (cap %d)", l.DoneReason, l.EvalCount, most)
		}
	}
	return nil
}

func (l *ollamaLine) callsOf() []ollamaCall {
	if l.Message == nil {
		return nil
	}
	return l.Message.ToolCalls
}

// ollama is POST /api/chat or /api/generate, streamed (NDJSON ending in a done line) or not.
func (s *soak) ollama(ctx context.Context, r *req, chat, stream, tools bool) outcome {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	most := r.maxTokens()
	opts := map[string]any{"num_predict": most, "temperature": 0.8, "seed": 1 + r.rnd.IntN(1<<30)}
	body := map[string]any{"model": s.model, "stream": stream, "options": opts}
	path := "/api/generate"
	if chat {
		path = "/api/chat"
		body["messages"] = []map[string]string{{"role": "user", "content": r.prompt()}}
	} else {
		body["prompt"] = r.prompt()
	}
	if tools {
		most = 60
		body["messages"] = []map[string]string{{"role": "user", "content": r.weatherQuestion()}}
		body["tools"] = openAITools()
		opts["tool_choice"], opts["parallel_tool_calls"], opts["temperature"], opts["num_predict"] = "required", false, 0, most
	}
	if r.hangUp {
		opts["ignore_eos"] = true
	}
	c, refused, ok := s.send(ctx, ollamaDialect, http.MethodPost, path, body, stream)
	if !ok {
		return refused
	}
	if !stream {
		var l ollamaLine
		if err := strictJSON(c.body, &l); err != nil {
			return malformed("%s: %v: %s", path, err, clip(c.body))
		}
		if err := l.check(chat, most); err != nil || !*l.Done {
			return malformed("%s: %v (done %v): %s", path, err, l.Done, clip(c.body))
		}
		if tools && *l.DoneReason == "stop" && len(l.callsOf()) != 1 {
			return malformed("%s: tool_choice required gave %d calls: %s", path, len(l.callsOf()), clip(c.body))
		}
		return outcome{status: http.StatusOK, answered: true}
	}
	defer c.res.Body.Close()
	var (
		ended, disconnected bool
		failure             string
		calls               int
		reason              string
	)
	err := readNDJSON(c.res.Body, func(line []byte) error {
		if ended {
			return badEvent("a line after the done line: %s", clip(line))
		}
		var l ollamaLine
		if err := strictJSON(line, &l); err != nil {
			return badEvent("line %s: %v", clip(line), err)
		}
		if l.Error != nil {
			ended, failure = true, "error line: "+*l.Error
			return nil
		}
		if err := l.check(chat, most); err != nil {
			return badEvent("line %s: %v", clip(line), err)
		}
		calls += len(l.callsOf())
		if *l.Done {
			ended, reason = true, *l.DoneReason
			return nil
		}
		text := l.Response
		if chat {
			text = l.Message.Content
		}
		if r.hangUp && text != nil && *text != "" {
			disconnected = true
			return errStopReading
		}
		return nil
	})
	if err == errStopReading {
		err = nil
	}
	o := streamEnd(err, disconnected, ended, failure)
	if o.malformed == "" && o.failure == "" && !o.disconnected && tools && reason == "stop" && calls != 1 {
		o.malformed = fmt.Sprintf("streamed tool_choice required gave %d calls", calls)
	}
	return o
}

// ollamaEmbed is POST /api/embed on the BERT.
func (s *soak) ollamaEmbed(ctx context.Context, r *req) outcome {
	inputs := make([]string, 1+r.rnd.IntN(3))
	for i := range inputs {
		inputs[i] = r.prompt()
	}
	c, refused, ok := s.send(ctx, ollamaDialect, http.MethodPost, "/api/embed", map[string]any{"model": s.embedModel, "input": inputs}, false)
	if !ok {
		return refused
	}
	var e struct {
		Model      *string     `json:"model"`
		Embeddings [][]float64 `json:"embeddings"`
	}
	if err := strictJSON(c.body, &e); err != nil {
		return malformed("/api/embed: %v: %s", err, clip(c.body))
	}
	if e.Model == nil || len(e.Embeddings) != len(inputs) {
		return malformed("/api/embed: want %d embeddings: %s", len(inputs), clip(c.body))
	}
	for i, v := range e.Embeddings {
		if len(v) != bertEmbd {
			return malformed("/api/embed: embedding %d has %d floats, want %d", i, len(v), bertEmbd)
		}
	}
	return outcome{status: http.StatusOK, answered: true}
}
