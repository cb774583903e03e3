package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

type responseObject struct {
	ID     *string `json:"id"`
	Object *string `json:"object"`
	Status *string `json:"status"`
	Model  *string `json:"model"`
	Output []struct {
		Type    *string `json:"type"`
		Role    *string `json:"role"`
		Content []struct {
			Type *string `json:"type"`
			Text *string `json:"text"`
		} `json:"content"`
		CallID    *string `json:"call_id"`
		Name      *string `json:"name"`
		Arguments *string `json:"arguments"`
	} `json:"output"`
	Usage *struct {
		InputTokens  *int `json:"input_tokens"`
		OutputTokens *int `json:"output_tokens"`
		TotalTokens  *int `json:"total_tokens"`
	} `json:"usage"`
}

// text is the response's output text, and the number of function calls it holds.
func (ro *responseObject) text() (string, int) {
	var sb strings.Builder
	calls := 0
	for _, it := range ro.Output {
		if it.Type != nil && *it.Type == "function_call" {
			calls++
		}
		for _, c := range it.Content {
			if c.Type != nil && *c.Type == "output_text" && c.Text != nil {
				sb.WriteString(*c.Text)
			}
		}
	}
	return sb.String(), calls
}

// check checks a finished response; with tools, its one forced function call.
func (ro *responseObject) check(most int, tools bool) error {
	switch {
	case ro.ID == nil || *ro.ID == "" || ro.Object == nil || *ro.Object != "response" || ro.Status == nil || ro.Model == nil:
		return fmt.Errorf("id, object, status or model wrong")
	case *ro.Status != "completed" && *ro.Status != "incomplete":
		return fmt.Errorf("status %q", *ro.Status)
	case ro.Usage == nil || ro.Usage.InputTokens == nil || ro.Usage.OutputTokens == nil || ro.Usage.TotalTokens == nil ||
		*ro.Usage.InputTokens < 1 || *ro.Usage.OutputTokens > most || *ro.Usage.TotalTokens != *ro.Usage.InputTokens+*ro.Usage.OutputTokens:
		return fmt.Errorf("usage %+v", ro.Usage)
	}
	for i, it := range ro.Output {
		if it.Type == nil {
			return fmt.Errorf("output %d has no type", i)
		}
		switch *it.Type {
		case "message":
			if it.Role == nil || *it.Role != "assistant" {
				return fmt.Errorf("output %d: a message not from the assistant", i)
			}
		case "function_call":
			if it.CallID == nil || *it.CallID == "" || it.Name == nil || *it.Name != "get_weather" || it.Arguments == nil {
				return fmt.Errorf("output %d: a function call without call_id, name or arguments", i)
			}
			if err := checkCity([]byte(*it.Arguments)); err != nil && *ro.Status == "completed" {
				return err
			}
		}
	}
	if _, calls := ro.text(); tools && *ro.Status == "completed" && calls != 1 {
		return fmt.Errorf("tool_choice required: %d function calls", calls)
	}
	return nil
}

func (s *soak) responsesBody(r *req, stream, tools bool) map[string]any {
	b := map[string]any{"model": s.model, "input": r.prompt(), "max_output_tokens": r.maxTokens(), "temperature": 0.8}
	if tools {
		b["input"], b["temperature"], b["max_output_tokens"], b["parallel_tool_calls"], b["tool_choice"] = r.weatherQuestion(), 0, 60, false, "required"
		b["tools"] = []any{map[string]any{"type": "function", "name": "get_weather", "description": "The weather in a city", "parameters": cityParameters}}
	}
	if stream {
		b["stream"] = true
	}
	if r.hangUp {
		b["ignore_eos"] = true
	}
	return b
}

// response is POST /v1/responses, not streamed; a stored response is remembered for
// responseGet.
func (s *soak) response(ctx context.Context, r *req, tools bool) outcome {
	body := s.responsesBody(r, false, tools)
	ro, raw, o, ok := postJSON(ctx, s, openAI, "/v1/responses", "response", body, func(ro *responseObject) error {
		return ro.check(body["max_output_tokens"].(int), tools)
	})
	if ok {
		s.records.storeResponse(*ro.ID, raw)
	}
	return o
}

// responseStream is POST /v1/responses with stream: typed events numbered from 0, ending in
// response.completed or response.incomplete (response.failed or error after a failure), with
// no [DONE].
func (s *soak) responseStream(ctx context.Context, r *req, tools bool) outcome {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	body := s.responsesBody(r, true, tools)
	c, refused, ok := s.send(ctx, openAI, http.MethodPost, "/v1/responses", body, true)
	if !ok {
		return refused
	}
	defer c.res.Body.Close()
	var (
		seq                 = -1
		ended, disconnected bool
		failure             string
		deltas              strings.Builder
	)
	err := readSSE(c.res.Body, func(ev sseEvent) error {
		if ended {
			return badEvent("an event after the terminal one: %s", clip([]byte(ev.data)))
		}
		var e struct {
			Type           *string         `json:"type"`
			SequenceNumber *int            `json:"sequence_number"`
			Delta          *string         `json:"delta"`
			Response       json.RawMessage `json:"response"`
			Message        *string         `json:"message"`
		}
		if err := strictJSON([]byte(ev.data), &e); err != nil {
			return badEvent("event %s: %v", clip([]byte(ev.data)), err)
		}
		if e.Type == nil || *e.Type != ev.name || e.SequenceNumber == nil || *e.SequenceNumber != seq+1 {
			return badEvent("event %q: type or sequence_number (after %d) wrong: %s", ev.name, seq, clip([]byte(ev.data)))
		}
		seq = *e.SequenceNumber
		switch *e.Type {
		case "response.output_text.delta":
			if e.Delta == nil {
				return badEvent("a text delta without delta")
			}
			deltas.WriteString(*e.Delta)
			if r.hangUp && *e.Delta != "" {
				disconnected = true
				return errStopReading
			}
		case "response.completed", "response.incomplete":
			ended = true
			var ro responseObject
			if err := strictJSON(e.Response, &ro); err != nil {
				return badEvent("%s: %v", *e.Type, err)
			}
			if err := ro.check(body["max_output_tokens"].(int), tools); err != nil {
				return badEvent("%s: %v: %s", *e.Type, err, clip(e.Response))
			}
			if text, _ := ro.text(); text != deltas.String() {
				return badEvent("the final text %q is not the deltas' %q", text, deltas.String())
			}
			s.records.storeResponse(*ro.ID, e.Response)
		case "response.failed", "error":
			ended = true
			failure = *e.Type + ": " + clip([]byte(ev.data))
		}
		return nil
	})
	if err == errStopReading {
		err = nil
	}
	return streamEnd(err, disconnected, ended, failure)
}

// responseGet reads back a stored response: the same output as when it was made.
func (s *soak) responseGet(ctx context.Context, _ *req) outcome {
	id, want, ok := s.records.someResponse()
	if !ok {
		return outcome{status: http.StatusOK}
	}
	return s.checkStoredResponse(ctx, id, want)
}

func (s *soak) checkStoredResponse(ctx context.Context, id string, want []byte) outcome {
	c, err := do(ctx, s.http, http.MethodGet, s.url+"/v1/responses/"+id, nil, false)
	if err != nil {
		return broken(err)
	}
	if c.res.StatusCode == http.StatusNotFound {
		s.records.lost("response %s was stored (acknowledged) but GET says 404: %s", id, clip(c.body))
		return errorReply(openAI, c.res.StatusCode, c.body)
	}
	if c.res.StatusCode != http.StatusOK {
		return errorReply(openAI, c.res.StatusCode, c.body)
	}
	var got, orig responseObject
	if err := strictJSON(c.body, &got); err != nil {
		return malformed("GET response: %v: %s", err, clip(c.body))
	}
	json.Unmarshal(want, &orig)
	gt, gc := got.text()
	wt, wc := orig.text()
	if got.ID == nil || *got.ID != id || gt != wt || gc != wc || got.Status == nil || orig.Status == nil || *got.Status != *orig.Status {
		s.records.lost("response %s reads back changed: %s, was %s", id, clip(c.body), clip(want))
	}
	return outcome{status: http.StatusOK}
}
