package openai

// The Responses API: POST /v1/responses, GET and DELETE /v1/responses/{id},
// GET /v1/responses/{id}/input_items.
//
// Decisions:
//   - Responses are kept in SQLite (store=true, the default) with their own input items and
//     their output items; previous_response_id walks that chain oldest first and rebuilds the
//     conversation: each earlier response's input items, then its output items, then the new
//     input, under the new request's instructions only (earlier instructions, tools and
//     tool_choice are not carried over, as OpenAI documents). Function calls, their outputs
//     and reasoning are items like messages, so a tool loop continued by
//     previous_response_id renders as the whole conversation, also after a restart. The
//     rebuilt conversation renders to the same prompt prefix, so the prefix cache serves it
//     warm. A chain with a deleted (or never stored) response in it cannot be continued: 404
//     on previous_response_id.
//   - DELETE removes the row and its content; responses that continued it stay readable.
//   - store=false keeps nothing: GET and input_items answer 404 for it.
//   - truncation "auto" is accepted but never truncates: an input over the context window is
//     a 400 context_length_exceeded either way.
//   - Failed or abandoned generations are not stored: a stream that ends in response.failed
//     (or a client that hangs up) leaves nothing to GET or continue.
//   - text.format json_object and json_schema constrain the output as response_format does
//     for chat. Tools: see responses_tools.go; reasoning, include and logprobs:
//     responses_reasoning.go; output items: responses_output.go. background and conversation
//     are refused with 400 unsupported_parameter; prompt (a template stored on OpenAI's
//     platform) is ignored with a warning.
//   - Accepted with no local meaning: prompt_cache_key (the engine already gives a request the
//     lane holding the longest prefix of its prompt, so there is nothing to steer; echoed),
//     client_metadata, safety_identifier (echoed), user (echoed), service_tier (served as
//     "default"), text.verbosity (echoed), max_tool_calls. Headers such as x-codex-*,
//     session-id, thread-id and originator are not read.
//   - seed, chat_template_kwargs and enable_thinking are read as chat completions read them
//     (extensions: OpenAI's Responses API has none of them).
//   - Warnings about the request (tools dropped, formats or include values ignored) and those
//     the core raised about the reply (text that looked like a tool call but did not parse,
//     calls dropped by parallel_tool_calls false) are in the response's "superfluid" object,
//     from response.created on, and stored with it; the core's are in the request record.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
)

const responsesEndpoint = "/v1/responses"

// routesResponses registers the Responses API.
func (h *handlers) routesResponses(r gin.IRouter) {
	r.POST(responsesEndpoint, Handle(h.createResponse))
	r.GET(responsesEndpoint+"/:id", Handle(h.getResponse))
	r.DELETE(responsesEndpoint+"/:id", Handle(h.deleteResponse))
	r.GET(responsesEndpoint+"/:id/input_items", Handle(h.listInputItems))
}

// responseParams is a validated POST /v1/responses.
type responseParams struct {
	model    string
	input    []item
	previous string
	store    bool
	gen      llm.Request
	kwargs   map[string]any
	tools    *toolSet
	choice   core.ToolChoice
	parallel *bool
	// encrypted (include reasoning.encrypted_content) puts a blob in reasoning items; summary
	// (reasoning.summary) fills their summary.
	encrypted, summary bool
	// obj is the response as it starts: in_progress, no output, the request's settings echoed.
	obj responseObject
}

func (h *handlers) createResponse(c *gin.Context) error {
	var req responseRequest
	if err := decode(c.Request, &req); err != nil {
		return err
	}
	p, err := toResponseParams(&req)
	if err != nil {
		return err
	}
	ctx := c.Request.Context()
	m, err := h.svc.ModelFor(ctx, p.model) // a model the key may not use is a 404 like a missing one
	if err != nil {
		return err
	}
	p.obj.Model = m.ID
	msgs, err := h.conversation(c, p, req.Instructions)
	if err != nil {
		return err
	}
	creq := &core.ChatRequest{ID: p.obj.ID, Endpoint: responsesEndpoint, Stream: req.Stream, Model: m.ID,
		Messages: msgs, Generation: p.gen, TemplateKwargs: p.kwargs, Tools: p.tools.tools, ToolChoice: p.choice,
		ParallelToolCalls: p.parallel}
	if req.Stream {
		return h.streamResponse(c, creq, p)
	}
	out := newOutputBuilder(nil, p)
	res, err := h.svc.Chat(ctx, creq, func(_ int, ev llm.Event) error { return out.add(ev) })
	if err != nil {
		return responsesError(err)
	}
	obj, err := finishResponse(p.obj, out, res.Choices[0])
	if err != nil {
		return err
	}
	if err := h.keep(c, p, &obj); err != nil {
		return err
	}
	c.Header(WarmHeader, strconv.Itoa(res.Usage().CachedTokens))
	c.JSON(http.StatusOK, obj)
	return nil
}

// toResponseParams validates the request; each bad value names its parameter.
func toResponseParams(req *responseRequest) (*responseParams, error) {
	if req.Model == nil || *req.Model == "" {
		return nil, invalid("model", "you must provide a model parameter; GET /v1/models lists the served models")
	}
	if err := refuseUnservedResponse(req); err != nil {
		return nil, err
	}
	var warnings []string
	if len(req.Prompt) > 0 && string(req.Prompt) != "null" {
		warnings = append(warnings, "prompt names a prompt template stored on OpenAI's platform; this server has none, so it was ignored: send input and instructions")
	}
	input, err := parseInput(req.Input)
	if err != nil {
		return nil, err
	}
	p := &responseParams{model: *req.Model, input: input, store: req.Store == nil || *req.Store, parallel: req.ParallelToolCalls}
	if req.MaxOutputTokens != nil {
		if *req.MaxOutputTokens < 1 {
			return nil, invalid("max_output_tokens", fmt.Sprintf("max_output_tokens must be a positive integer, got %d", *req.MaxOutputTokens))
		}
		p.gen.MaxTokens = *req.MaxOutputTokens
	}
	temperature, topP := llm.DefaultTemperature, llm.DefaultTopP
	for _, r := range []struct {
		name string
		v    *float64
		max  float64
		dst  **float64
		echo *float64
	}{{"temperature", req.Temperature, 2, &p.gen.Sampling.Temperature, &temperature}, {"top_p", req.TopP, 1, &p.gen.Sampling.TopP, &topP}} {
		if r.v == nil {
			continue
		}
		if *r.v < 0 || *r.v > r.max {
			return nil, invalid(r.name, fmt.Sprintf("%s must be between 0 and %g, got %g", r.name, r.max, *r.v))
		}
		*r.dst, *r.echo = r.v, *r.v
	}
	if req.Seed != nil {
		p.gen.Sampling.Seed = uint64(*req.Seed)
	}
	if p.gen.Speculative, err = speculative(req.Speculative); err != nil {
		return nil, err
	}
	if p.gen.Adapters, err = adapters(req.Lora); err != nil {
		return nil, err
	}
	truncation := "disabled"
	if req.Truncation != nil {
		if *req.Truncation != "disabled" && *req.Truncation != "auto" {
			return nil, invalid("truncation", fmt.Sprintf("truncation is %q; use disabled or auto", *req.Truncation))
		}
		truncation = *req.Truncation
	}
	if err := checkMetadata(req.Metadata); err != nil {
		return nil, err
	}
	if p.tools, err = toResponseTools(req.Tools); err != nil {
		return nil, err
	}
	warnings = append(warnings, p.tools.warnings...)
	var toolChoice json.RawMessage
	if p.choice, toolChoice, err = toResponseToolChoice(req.ToolChoice, p.tools); err != nil {
		return nil, err
	}
	var reasoning reasoningConfig
	if p.kwargs, reasoning, err = toTemplateKwargs(req); err != nil {
		return nil, err
	}
	ws, err := toLogprobs(req, &p.gen)
	if err != nil {
		return nil, err
	}
	warnings = append(warnings, ws...)
	p.encrypted = slices.Contains(req.Include, includeEncrypted)
	p.summary = req.Reasoning != nil && req.Reasoning.Summary != nil
	if req.PreviousResponseID != nil {
		p.previous = *req.PreviousResponseID
	}
	metadata := req.Metadata
	if metadata == nil {
		metadata = map[string]string{}
	}
	p.obj = responseObject{
		ID: newID("resp_"), Object: "response", CreatedAt: time.Now().Unix(), Status: "in_progress",
		Instructions: req.Instructions, MaxOutputTokens: req.MaxOutputTokens, Output: []item{},
		ParallelToolCalls: req.ParallelToolCalls == nil || *req.ParallelToolCalls, ServiceTier: "default",
		Store: p.store, Temperature: temperature, ToolChoice: toolChoice, Tools: nonNil(p.tools.echo), TopP: topP,
		TopLogprobs: p.gen.TopLogprobs, Truncation: truncation, Metadata: metadata, Reasoning: reasoning,
		User: req.User, PromptCacheKey: req.PromptCacheKey, SafetyIdentifier: req.SafetyIdentifier,
	}
	if len(warnings) > 0 {
		p.obj.Superfluid = &replyExtra{Warnings: warnings}
	}
	if p.previous != "" {
		p.obj.PreviousResponseID = &p.previous
	}
	format := &formatConfig{Type: "text"}
	if req.Text != nil && req.Text.Format != nil {
		format = req.Text.Format
		if p.gen.Format, p.gen.Schema, err = toTextFormat(format); err != nil {
			return nil, err
		}
	}
	p.obj.Text.Format = format
	if req.Text != nil {
		p.obj.Text.Verbosity = req.Text.Verbosity
	}
	return p, nil
}

// toTextFormat maps text.format to the engine's output constraint.
func toTextFormat(f *formatConfig) (string, json.RawMessage, error) {
	switch f.Type {
	case "", "text":
		f.Type = "text"
		return "", nil, nil
	case "json_object":
		return llm.FormatJSON, nil, nil
	case "json_schema":
		if len(f.Schema) == 0 || string(f.Schema) == "null" {
			return "", nil, invalid("text.format.schema", "text.format json_schema needs a schema (a JSON Schema object)")
		}
		return llm.FormatSchema, f.Schema, nil
	default:
		return "", nil, invalid("text.format.type", fmt.Sprintf("text.format.type must be text, json_object or json_schema, got %q", f.Type))
	}
}

// refuseUnservedResponse rejects parameters this server does not serve instead of ignoring them.
func refuseUnservedResponse(req *responseRequest) error {
	if req.Background != nil && *req.Background {
		return unsupported("background", "background responses are not supported by this server; remove background")
	}
	if len(req.Conversation) > 0 && string(req.Conversation) != "null" {
		return unsupported("conversation", "conversations are not supported by this server yet; use previous_response_id")
	}
	return nil
}

// checkMetadata applies OpenAI's limits: 16 pairs, keys up to 64 and values up to 512 characters.
func checkMetadata(md map[string]string) error {
	if len(md) > 16 {
		return invalid("metadata", fmt.Sprintf("metadata has %d keys; at most 16 are allowed", len(md)))
	}
	for k, v := range md {
		if utf8.RuneCountInString(k) > 64 {
			return invalid("metadata", fmt.Sprintf("metadata key %q is longer than 64 characters", k))
		}
		if utf8.RuneCountInString(v) > 512 {
			return invalid("metadata", fmt.Sprintf("metadata value of %q is longer than 512 characters", k))
		}
	}
	return nil
}

// conversation rebuilds what the model sees: the new instructions as the system message, the
// earlier responses' input and output items oldest first, then the new input.
func (h *handlers) conversation(c *gin.Context, p *responseParams, instructions *string) ([]chat.Message, error) {
	var history []item
	if p.previous != "" {
		chain, err := h.svc.ResponseChain(c.Request.Context(), p.previous)
		if err != nil {
			return nil, previousNotFound(p.previous, err)
		}
		for _, r := range chain {
			for _, raw := range []json.RawMessage{r.Input, r.Output} {
				var items []item
				if err := json.Unmarshal(raw, &items); err != nil {
					return nil, fmt.Errorf("read stored response %s: %w", r.ID, err)
				}
				history = append(history, items...)
			}
		}
	}
	if err := checkCallOutputs(history, p.input); err != nil {
		return nil, err
	}
	var msgs []chat.Message
	if instructions != nil && *instructions != "" {
		msgs = append(msgs, chat.Message{Role: "system", Content: *instructions})
	}
	return append(msgs, itemMessages(append(history, p.input...), p.tools)...), nil
}

// previousNotFound is the 404 for a previous_response_id whose conversation cannot be rebuilt.
func previousNotFound(id string, err error) error {
	var missing *core.MissingResponseError
	if !errors.As(err, &missing) {
		return err
	}
	msg := fmt.Sprintf("Previous response with id '%s' not found.", id)
	if missing.ID != id {
		msg += fmt.Sprintf(" The conversation it continues includes response '%s', which was deleted.", missing.ID)
	} else {
		msg += " It was deleted, created with store=false, or never existed; start without previous_response_id."
	}
	return &Error{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "previous_response_not_found",
		Param: "previous_response_id", Message: msg}
}

// responsesError maps a generation error; a prompt over the window blames input, not messages.
func responsesError(err error) error {
	var cl *llm.ContextLengthError
	if errors.As(err, &cl) {
		return &Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "context_length_exceeded", Param: "input", Message: err.Error()}
	}
	return err
}

// finishResponse completes obj with the reply's output items and its usage.
func finishResponse(obj responseObject, out *outputBuilder, d llm.Done) (responseObject, error) {
	obj.Status = "completed"
	if d.FinishReason == llm.FinishLength {
		obj.Status = "incomplete"
		obj.IncompleteDetails = &incompleteDetails{Reason: "max_output_tokens"}
	} else {
		now := time.Now().Unix()
		obj.CompletedAt = &now
	}
	var err error
	if obj.Output, err = out.finish(obj.Status); err != nil {
		return obj, err
	}
	u := &responseUsage{InputTokens: d.Usage.PromptTokens, OutputTokens: d.Usage.CompletionTokens,
		TotalTokens: d.Usage.PromptTokens + d.Usage.CompletionTokens}
	u.InputTokensDetails.CachedTokens = d.Usage.CachedTokens
	u.OutputTokensDetails.ReasoningTokens = out.reasoningTokens
	obj.Usage = u
	if d.Warning != "" {
		var ws []string
		if obj.Superfluid != nil {
			ws = slices.Clone(obj.Superfluid.Warnings)
		}
		obj.Superfluid = &replyExtra{Warnings: append(ws, d.Warning)}
	}
	if spec := core.SpecReportOf(d); spec != nil {
		extra := replyExtra{}
		if obj.Superfluid != nil {
			extra = *obj.Superfluid // a copy: the request's object is shared by its events
		}
		obj.Superfluid = withSpec(&extra, d)
	}
	return obj, nil
}

// keep stores a finished response unless the request said store=false.
func (h *handlers) keep(c *gin.Context, p *responseParams, obj *responseObject) error {
	if !p.store {
		return nil
	}
	input, err := json.Marshal(p.input)
	if err != nil {
		return err
	}
	output, err := json.Marshal(obj.Output)
	if err != nil {
		return err
	}
	body, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	r := core.StoredResponse{
		ID: obj.ID, Model: obj.Model, PreviousResponseID: p.previous, Instructions: obj.Instructions,
		Status: obj.Status, Input: input, Output: output, Body: body, CreatedAt: time.Unix(obj.CreatedAt, 0),
	}
	if obj.Usage != nil {
		r.InputTokens, r.OutputTokens, r.CachedTokens = obj.Usage.InputTokens, obj.Usage.OutputTokens, obj.Usage.InputTokensDetails.CachedTokens
	}
	// The client may be gone already; what was generated is still kept.
	if err := h.svc.SaveResponse(context.WithoutCancel(c.Request.Context()), r); err != nil {
		return fmt.Errorf("could not save the response; retry, or send store=false: %w", err)
	}
	return nil
}
