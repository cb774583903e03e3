package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/superfluid/superfluid/runtime/chat"
)

// responseRequest is the wire form of POST /v1/responses.
type responseRequest struct {
	Model *string `json:"model"`
	// Input is a string or an array of input items; parseInput reads it.
	Input              json.RawMessage   `json:"input"`
	Instructions       *string           `json:"instructions"`
	PreviousResponseID *string           `json:"previous_response_id"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	Temperature        *float64          `json:"temperature"`
	TopP               *float64          `json:"top_p"`
	Stream             bool              `json:"stream"`
	Store              *bool             `json:"store"`
	Metadata           map[string]string `json:"metadata"`
	Truncation         *string           `json:"truncation"`
	Text               *textConfig       `json:"text"`
	ParallelToolCalls  *bool             `json:"parallel_tool_calls"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`

	// Accepted by OpenAI but not served yet: refused with a clear 400 rather than ignored.
	Tools        json.RawMessage `json:"tools"`
	Background   *bool           `json:"background"`
	Conversation json.RawMessage `json:"conversation"`
	Prompt       json.RawMessage `json:"prompt"`
	TopLogprobs  *int            `json:"top_logprobs"`
	Reasoning    *struct {
		Effort *string `json:"effort"`
	} `json:"reasoning"`
}

// textConfig is `text`: the output format, echoed in the response as the request gave it.
type textConfig struct {
	Format *formatConfig `json:"format"`
}

// formatConfig is text.format: {type:"text"}, {type:"json_object"} or
// {type:"json_schema", name, schema, strict, description}.
type formatConfig struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// item is a message item, as input (the request's own, stored for input_items) or output.
type item struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Status  string `json:"status"`
	Role    string `json:"role"`
	Content []part `json:"content"`
}

// part is one text part of a message: input_text, or output_text (assistant text).
type part struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// MarshalJSON writes output_text parts with the annotations and logprobs OpenAI always sends.
func (p part) MarshalJSON() ([]byte, error) {
	if p.Type == "output_text" {
		return json.Marshal(struct {
			Type        string     `json:"type"`
			Text        string     `json:"text"`
			Annotations []struct{} `json:"annotations"`
			Logprobs    []struct{} `json:"logprobs"`
		}{p.Type, p.Text, []struct{}{}, []struct{}{}})
	}
	type plain part
	return json.Marshal(plain(p))
}

// text is the concatenated text of the item's parts.
func (it *item) text() string {
	var sb strings.Builder
	for _, p := range it.Content {
		sb.WriteString(p.Text)
	}
	return sb.String()
}

// message is the item as the chat template sees it (developer is the template's system).
func (it *item) message() chat.Message {
	role := it.Role
	if role == "developer" {
		role = "system"
	}
	return chat.Message{Role: role, Content: it.text()}
}

var itemRoles = map[string]bool{"user": true, "assistant": true, "system": true, "developer": true}

// unsupportedInput is a 400 for input a text-only model cannot take (yet).
func unsupportedInput(param, msg string) *Error {
	return &Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "unsupported_input", Param: param, Message: msg}
}

// parseInput reads input: a string is one user message; an array holds message items
// ({type:"message"} optional, role, content as a string or text parts). Items get ids
// ("msg_...") when they have none.
func parseInput(raw json.RawMessage) ([]item, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, invalid("input", "you must provide input: a string or an array of input items")
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, invalid("input", "input is not a valid JSON string")
		}
		return []item{{ID: newID("msg_"), Type: "message", Status: "completed", Role: "user",
			Content: []part{{Type: "input_text", Text: s}}}}, nil
	case '[':
	default:
		return nil, invalid("input", fmt.Sprintf("invalid type for 'input': expected a string or an array of input items, got %s", jsonKind(raw)))
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, invalid("input", "input is not a valid JSON array")
	}
	if len(elems) == 0 {
		return nil, invalid("input", "input must not be an empty array; send a string or at least one message item")
	}
	items := make([]item, 0, len(elems))
	for i, e := range elems {
		it, err := parseItem(fmt.Sprintf("input[%d]", i), e)
		if err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	return items, nil
}

func parseItem(param string, raw json.RawMessage) (item, error) {
	var w struct {
		Type    *string         `json:"type"`
		ID      *string         `json:"id"`
		Role    *string         `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if b := bytes.TrimSpace(raw); len(b) == 0 || b[0] != '{' {
		return item{}, invalid(param, fmt.Sprintf("invalid type for '%s': expected an input item object, got %s", param, jsonKind(b)))
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return item{}, invalid(param, fmt.Sprintf("invalid input item '%s': type, id and role must be strings", param))
	}
	typ := "message"
	if w.Type != nil {
		typ = *w.Type
	}
	if typ != "message" {
		return item{}, unsupportedInput(param+".type", fmt.Sprintf(
			"%s is a %q item; this server takes message items (role and text content) only", param, typ))
	}
	if w.Role == nil || !itemRoles[*w.Role] {
		got := "nothing"
		if w.Role != nil {
			got = fmt.Sprintf("%q", *w.Role)
		}
		return item{}, invalid(param+".role", fmt.Sprintf("%s.role is %s; use one of user, assistant, system, developer", param, got))
	}
	it := item{ID: newID("msg_"), Type: "message", Status: "completed", Role: *w.Role}
	if w.ID != nil && *w.ID != "" {
		it.ID = *w.ID
	}
	var err error
	it.Content, err = parseContent(param+".content", it.Role, w.Content)
	return it, err
}

// parseContent reads a message's content: a string, or an array of input_text/output_text
// parts. Image, file and audio parts are refused with unsupported_input.
func parseContent(param, role string, raw json.RawMessage) ([]part, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, invalid(param, fmt.Sprintf("%s is missing; send a string or an array of text parts", param))
	}
	textType := "input_text"
	if role == "assistant" {
		textType = "output_text"
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, invalid(param, param+" is not a valid JSON string")
		}
		return []part{{Type: textType, Text: s}}, nil
	case '[':
	default:
		return nil, invalid(param, fmt.Sprintf("invalid type for '%s': expected a string or an array of content parts, got %s", param, jsonKind(raw)))
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, invalid(param, fmt.Sprintf("invalid type for '%s': expected an array of {type, text} parts", param))
	}
	out := make([]part, 0, len(parts))
	for j, p := range parts {
		pp := fmt.Sprintf("%s[%d]", param, j)
		switch p.Type {
		case "input_text", "output_text":
			if p.Text == nil {
				return nil, invalid(pp+".text", fmt.Sprintf("%s is a %s part without text", pp, p.Type))
			}
			out = append(out, part{Type: p.Type, Text: *p.Text})
		case "input_image", "input_file", "input_audio":
			return nil, unsupportedInput(pp, fmt.Sprintf("%s is an %s part; this model takes text only", pp, p.Type))
		default:
			return nil, invalid(pp+".type", fmt.Sprintf("%s.type is %q; use input_text (or output_text in assistant messages)", pp, p.Type))
		}
	}
	return out, nil
}

// responseObject is OpenAI's Response object.
type responseObject struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"`
	Background         bool               `json:"background"`
	CompletedAt        *int64             `json:"completed_at"`
	Error              *responseError     `json:"error"`
	IncompleteDetails  *incompleteDetails `json:"incomplete_details"`
	Instructions       *string            `json:"instructions"`
	MaxOutputTokens    *int               `json:"max_output_tokens"`
	Model              string             `json:"model"`
	Output             []item             `json:"output"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Reasoning          reasoningConfig    `json:"reasoning"`
	ServiceTier        string             `json:"service_tier"`
	Store              bool               `json:"store"`
	Temperature        float64            `json:"temperature"`
	Text               textConfig         `json:"text"`
	ToolChoice         string             `json:"tool_choice"`
	Tools              []struct{}         `json:"tools"`
	TopP               float64            `json:"top_p"`
	Truncation         string             `json:"truncation"`
	Usage              *responseUsage     `json:"usage"`
	User               *string            `json:"user"`
	Metadata           map[string]string  `json:"metadata"`
}

type responseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type incompleteDetails struct {
	Reason string `json:"reason"`
}

type reasoningConfig struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

type responseUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

// responseEvent is one streaming event; each type fills the fields OpenAI gives it.
type responseEvent struct {
	Type           string          `json:"type"`
	SequenceNumber int             `json:"sequence_number"`
	Response       *responseObject `json:"response,omitempty"`
	OutputIndex    *int            `json:"output_index,omitempty"`
	ItemID         string          `json:"item_id,omitempty"`
	ContentIndex   *int            `json:"content_index,omitempty"`
	Item           *item           `json:"item,omitempty"`
	Part           *part           `json:"part,omitempty"`
	Delta          *string         `json:"delta,omitempty"`
	Text           *string         `json:"text,omitempty"`
	Logprobs       *[]struct{}     `json:"logprobs,omitempty"`
}

// errorEvent is the `error` event: a failure before the response was created.
type errorEvent struct {
	Type           string  `json:"type"`
	SequenceNumber int     `json:"sequence_number"`
	Code           *string `json:"code"`
	Message        string  `json:"message"`
	Param          *string `json:"param"`
}

// itemList is GET /v1/responses/{id}/input_items.
type itemList struct {
	Object  string  `json:"object"`
	Data    []item  `json:"data"`
	FirstID *string `json:"first_id"`
	LastID  *string `json:"last_id"`
	HasMore bool    `json:"has_more"`
}
