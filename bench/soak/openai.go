package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
)

// req is what the dispatcher decided for one request.
type req struct {
	rnd *rand.Rand
	// hangUp asks a streaming request to disconnect after its first content event; such a
	// request asks for many tokens (ignore_eos) so that the server is mid-generation then.
	hangUp bool
	// long asks for as many tokens as a hang-up does; firstContent, when set, is called once
	// at the first content event (the killer waits for it).
	long         bool
	firstContent func()
}

// maxTokens is the completion cap of one request.
func (r *req) maxTokens() int {
	if r.hangUp || r.long {
		return 400
	}
	return 8 + r.rnd.IntN(41)
}

var starters = []string{"Once upon a time, there was a little dog", "The girl found a red ball", "Tom and Sue went to the park",
	"One day, a big bird flew over the town", "Lily wanted to bake a cake", "The cat sat by the warm fire"}

// prompt is a story opening, distinct enough per request that not every prompt is a cache hit.
func (r *req) prompt() string {
	return fmt.Sprintf("%s. Day %d.", starters[r.rnd.IntN(len(starters))], r.rnd.IntN(1000))
}

// cities bounds the forced call's argument, so that even stories260K's call ends.
var cities = []string{"Oslo", "Bergen", "Tromso"}

var cityParameters = map[string]any{
	"type": "object", "required": []string{"city"},
	"properties": map[string]any{"city": map[string]any{"type": "string", "enum": cities}},
}

func (r *req) weatherQuestion() string {
	return fmt.Sprintf("What is the weather in %s?", cities[r.rnd.IntN(len(cities))])
}

// checkCity checks a forced call's arguments against cityParameters.
func checkCity(args []byte) error {
	var v map[string]json.RawMessage
	if err := json.Unmarshal(args, &v); err != nil {
		return fmt.Errorf("arguments %s are not a JSON object: %v", clip(args), err)
	}
	var city string
	if len(v) != 1 || json.Unmarshal(v["city"], &city) != nil || !slices.Contains(cities, city) {
		return fmt.Errorf("arguments %s do not match the schema", clip(args))
	}
	return nil
}

type usage struct {
	PromptTokens     *int `json:"prompt_tokens"`
	CompletionTokens *int `json:"completion_tokens"`
	TotalTokens      *int `json:"total_tokens"`
}

func (u *usage) check(most int) error {
	switch {
	case u == nil || u.PromptTokens == nil || u.CompletionTokens == nil || u.TotalTokens == nil:
		return fmt.Errorf("usage lacks a count: %+v", u)
	case *u.PromptTokens < 1 || *u.CompletionTokens < 0 || (most > 0 && *u.CompletionTokens > most):
		return fmt.Errorf("usage %d prompt, %d completion tokens (cap %d)", *u.PromptTokens, *u.CompletionTokens, most)
	case *u.TotalTokens != *u.PromptTokens+*u.CompletionTokens:
		return fmt.Errorf("usage total %d is not %d + %d", *u.TotalTokens, *u.PromptTokens, *u.CompletionTokens)
	}
	return nil
}

type toolCall struct {
	Index    *int    `json:"index"`
	ID       *string `json:"id"`
	Type     *string `json:"type"`
	Function *struct {
		Name      *string `json:"name"`
		Arguments *string `json:"arguments"`
	} `json:"function"`
}

type chatCompletion struct {
	ID      *string `json:"id"`
	Object  *string `json:"object"`
	Created *int64  `json:"created"`
	Model   *string `json:"model"`
	Choices []struct {
		Index   *int `json:"index"`
		Message *struct {
			Role      *string    `json:"role"`
			Content   *string    `json:"content"`
			ToolCalls []toolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage `json:"usage"`
}

func openAITools() []any {
	return []any{map[string]any{"type": "function", "function": map[string]any{
		"name": "get_weather", "description": "The weather in a city", "parameters": cityParameters}}}
}

// chatBody is a chat completion request; tools force a call of get_weather.
func (s *soak) chatBody(r *req, stream, tools bool) map[string]any {
	b := map[string]any{"model": s.model, "max_tokens": r.maxTokens(), "temperature": 0.8, "seed": 1 + r.rnd.IntN(1<<30),
		"messages": []map[string]string{{"role": "user", "content": r.prompt()}}}
	if tools {
		b["messages"] = []map[string]string{{"role": "user", "content": r.weatherQuestion()}}
		b["tools"], b["tool_choice"], b["parallel_tool_calls"], b["temperature"], b["max_tokens"] = openAITools(), "required", false, 0, 60
	}
	if stream {
		b["stream"] = true
	}
	if r.hangUp || r.long {
		b["ignore_eos"] = true
	}
	return b
}

// chat is POST /v1/chat/completions, not streamed.
func (s *soak) chat(ctx context.Context, r *req, tools bool) outcome {
	body := s.chatBody(r, false, tools)
	_, _, o, _ := postJSON(ctx, s, openAI, "/v1/chat/completions", "chat completion", body, func(cc *chatCompletion) error {
		return checkChat(cc, body["max_tokens"].(int), tools)
	})
	return o
}

func checkChat(cc *chatCompletion, most int, tools bool) error {
	switch {
	case cc.ID == nil || !strings.HasPrefix(*cc.ID, "chatcmpl-") || cc.Object == nil || *cc.Object != "chat.completion" || cc.Created == nil || cc.Model == nil:
		return fmt.Errorf("id, object, created or model wrong")
	case len(cc.Choices) != 1 || cc.Choices[0].Message == nil || cc.Choices[0].FinishReason == nil || cc.Choices[0].Index == nil:
		return fmt.Errorf("want one choice with a message and a finish_reason")
	}
	if err := cc.Usage.check(most); err != nil {
		return err
	}
	ch := cc.Choices[0]
	m := ch.Message
	if m.Role == nil || *m.Role != "assistant" {
		return fmt.Errorf("role %v", m.Role)
	}
	fr := *ch.FinishReason
	if !tools {
		if fr != "stop" && fr != "length" || len(m.ToolCalls) != 0 || m.Content == nil {
			return fmt.Errorf("finish_reason %q, %d tool calls, content %v", fr, len(m.ToolCalls), m.Content)
		}
		return nil
	}
	if fr == "length" {
		return nil // the spec: a call cut by the cap is length; it is not checked
	}
	if fr != "tool_calls" || len(m.ToolCalls) != 1 {
		return fmt.Errorf("tool_choice required: finish_reason %q with %d calls", fr, len(m.ToolCalls))
	}
	tc := m.ToolCalls[0]
	if tc.ID == nil || *tc.ID == "" || tc.Type == nil || *tc.Type != "function" || tc.Function == nil || tc.Function.Name == nil ||
		*tc.Function.Name != "get_weather" || tc.Function.Arguments == nil {
		return fmt.Errorf("the call lacks an id, a type or the function")
	}
	return checkCity([]byte(*tc.Function.Arguments))
}

type chatChunk struct {
	ID      *string `json:"id"`
	Object  *string `json:"object"`
	Choices []struct {
		Index *int `json:"index"`
		Delta *struct {
			Role      *string    `json:"role"`
			Content   *string    `json:"content"`
			ToolCalls []toolCall `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage           `json:"usage"`
	Error *json.RawMessage `json:"error"`
}

// chatStream is POST /v1/chat/completions with stream: SSE chunks ending in data: [DONE].
func (s *soak) chatStream(ctx context.Context, r *req, tools bool) outcome {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	body := s.chatBody(r, true, tools)
	c, refused, ok := s.send(ctx, openAI, http.MethodPost, "/v1/chat/completions", body, true)
	if !ok {
		return refused
	}
	defer c.res.Body.Close()
	var (
		id, failure    string
		chunks         int
		done, finished bool
		disconnected   bool
		args           strings.Builder
		calls          int
		finish         string
	)
	err := readSSE(c.res.Body, func(ev sseEvent) error {
		if done {
			return badEvent("an event after [DONE]: %s", clip([]byte(ev.data)))
		}
		if ev.data == "[DONE]" {
			done = true
			return nil
		}
		var ch chatChunk
		if err := strictJSON([]byte(ev.data), &ch); err != nil {
			return badEvent("chunk %s: %v", clip([]byte(ev.data)), err)
		}
		if ch.Error != nil {
			msg, err := errorMessage(openAI, []byte(ev.data))
			if err != nil {
				return badEvent("error frame %s: %v", clip([]byte(ev.data)), err)
			}
			failure = "error frame: " + msg
			return nil
		}
		if finished || failure != "" {
			return badEvent("a chunk after the terminal chunk or an error: %s", clip([]byte(ev.data)))
		}
		if ch.ID == nil || ch.Object == nil || *ch.Object != "chat.completion.chunk" || (id != "" && *ch.ID != id) {
			return badEvent("chunk id or object wrong: %s", clip([]byte(ev.data)))
		}
		id = *ch.ID
		chunks++
		if len(ch.Choices) > 1 {
			return badEvent("%d choices in a chunk", len(ch.Choices))
		}
		if len(ch.Choices) == 1 {
			c := ch.Choices[0]
			if c.Delta == nil {
				return badEvent("a choice without a delta: %s", clip([]byte(ev.data)))
			}
			if chunks == 1 && (c.Delta.Role == nil || *c.Delta.Role != "assistant") {
				return badEvent("the first chunk's delta is not the assistant role: %s", clip([]byte(ev.data)))
			}
			for _, tc := range c.Delta.ToolCalls {
				if tc.ID != nil {
					calls++
				}
				if tc.Function != nil && tc.Function.Arguments != nil {
					args.WriteString(*tc.Function.Arguments)
				}
			}
			if c.FinishReason != nil && *c.FinishReason != "" {
				finish = *c.FinishReason
				finished = true
				if err := ch.Usage.check(body["max_tokens"].(int)); err != nil {
					return badEvent("terminal chunk: %v", err)
				}
			}
			if c.Delta.Content != nil && *c.Delta.Content != "" && r.firstContent != nil {
				r.firstContent()
				r.firstContent = nil
			}
			if r.hangUp && c.Delta.Content != nil && *c.Delta.Content != "" {
				disconnected = true
				return errStopReading
			}
		}
		return nil
	})
	if err == errStopReading {
		err = nil
	}
	o := streamEnd(err, disconnected, done && (finished || failure != ""), failure)
	if o.malformed == "" && o.failure == "" && !o.disconnected && tools && finish != "length" {
		if finish != "tool_calls" || calls != 1 {
			o.malformed = fmt.Sprintf("streamed tool_choice required: finish_reason %q with %d calls", finish, calls)
		} else if err := checkCity([]byte(args.String())); err != nil {
			o.malformed = "streamed call: " + err.Error()
		}
	}
	return o
}

type embeddingList struct {
	Object *string `json:"object"`
	Model  *string `json:"model"`
	Data   []struct {
		Object    *string   `json:"object"`
		Index     *int      `json:"index"`
		Embedding []float64 `json:"embedding"`
	} `json:"data"`
	Usage *struct {
		PromptTokens *int `json:"prompt_tokens"`
		TotalTokens  *int `json:"total_tokens"`
	} `json:"usage"`
}

// embeddings is POST /v1/embeddings of one to three texts on the BERT.
func (s *soak) embeddings(ctx context.Context, r *req) outcome {
	inputs := make([]string, 1+r.rnd.IntN(3))
	for i := range inputs {
		inputs[i] = r.prompt()
	}
	_, _, o, _ := postJSON(ctx, s, openAI, "/v1/embeddings", "embeddings", map[string]any{"model": s.embedModel, "input": inputs},
		func(e *embeddingList) error { return checkEmbeddings(e, len(inputs)) })
	return o
}

func checkEmbeddings(e *embeddingList, n int) error {
	if e.Object == nil || *e.Object != "list" || e.Model == nil || len(e.Data) != n || e.Usage == nil || e.Usage.PromptTokens == nil || *e.Usage.PromptTokens < n {
		return fmt.Errorf("want a list of %d embeddings with usage", n)
	}
	for i, d := range e.Data {
		if d.Object == nil || *d.Object != "embedding" || d.Index == nil || *d.Index != i || len(d.Embedding) != bertEmbd {
			return fmt.Errorf("datum %d: object, index or %d floats wrong", i, len(d.Embedding))
		}
	}
	return nil
}
