package openai

import (
	"cmp"
	"encoding/json"
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
	// Tools are read one by one (toResponseTools): functions, custom tools and namespaces of
	// them are served, built-in tools dropped with a warning.
	Tools             []json.RawMessage `json:"tools"`
	ToolChoice        json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls *bool             `json:"parallel_tool_calls"`
	Reasoning         *reasoningParam   `json:"reasoning"`
	TopLogprobs       *int              `json:"top_logprobs"`
	Include           []string          `json:"include"`
	// Extensions shared with chat completions: template variables, and the shorthand for
	// enable_thinking (chat_template_kwargs wins over both it and reasoning.effort).
	ChatTemplateKwargs map[string]any `json:"chat_template_kwargs"`
	EnableThinking     *bool          `json:"enable_thinking"`
	// Seed is the sampling seed, as chat completions take it (0 is unseeded).
	Seed *int64 `json:"seed"`
	// Speculative chooses speculative decoding, as chat completions take it (an extension).
	Speculative json.RawMessage `json:"speculative"`
	// Lora picks LoRA adapters, as chat completions take it (an extension).
	Lora json.RawMessage `json:"lora"`

	// Accepted and echoed, with no local meaning: lanes are picked by the longest cached
	// prefix already, so prompt_cache_key steers nothing; the rest name the caller.
	PromptCacheKey   *string         `json:"prompt_cache_key"`
	SafetyIdentifier *string         `json:"safety_identifier"`
	User             *string         `json:"user"`
	ServiceTier      *string         `json:"service_tier"`
	ClientMetadata   json.RawMessage `json:"client_metadata"`
	MaxToolCalls     *int            `json:"max_tool_calls"`
	// Prompt names a prompt template stored on OpenAI's platform: ignored with a warning.
	Prompt json.RawMessage `json:"prompt"`

	// Accepted by OpenAI but not served: refused with a clear 400 rather than ignored.
	Background   *bool           `json:"background"`
	Conversation json.RawMessage `json:"conversation"`
}

// reasoningParam is the request's `reasoning`.
type reasoningParam struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

// textConfig is `text`: the output format, echoed in the response as the request gave it.
type textConfig struct {
	Format    *formatConfig `json:"format"`
	Verbosity *string       `json:"verbosity,omitempty"`
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

// Item types this server reads and writes.
const (
	itemMessage    = "message"
	itemCall       = "function_call"
	itemCallOutput = "function_call_output"
	itemReasoning  = "reasoning"
	// A custom tool's call (free-form input) and what the client's code returned for it.
	itemCustomCall       = "custom_tool_call"
	itemCustomCallOutput = "custom_tool_call_output"
)

// item is one conversation item: a message, a function call the model made, the output of
// a call that the client ran, or the model's reasoning. The same type is an input item (kept
// for input_items and previous_response_id) and an output item; stored items decode with the
// struct tags, MarshalJSON writes each type with exactly OpenAI's fields.
type item struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Status string `json:"status,omitempty"`
	// message: the role and its text parts. reasoning: reasoning_text parts.
	Role    string `json:"role,omitempty"`
	Content []part `json:"content,omitempty"`
	// function_call and function_call_output.
	CallID    string `json:"call_id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	// Output is a function_call_output's output as the client sent it: a string or parts.
	Output json.RawMessage `json:"output,omitempty"`
	// Summary is a reasoning item's summary_text parts: its reasoning text when the request
	// asked for reasoning.summary (this server has no summarizer).
	Summary []part `json:"summary,omitempty"`
	// Namespace is the namespace tool a function_call or custom_tool_call belongs to.
	Namespace string `json:"namespace,omitempty"`
	// Input is a custom_tool_call's free-form input.
	Input string `json:"input,omitempty"`
	// EncryptedContent is a reasoning item's opaque blob (responses_blob.go).
	EncryptedContent string `json:"encrypted_content,omitempty"`
	// param is where the item sat in this request's input ("input[2]"), naming its media parts
	// in errors; "" for an item of an earlier response.
	param string
}

func (it item) MarshalJSON() ([]byte, error) {
	switch it.Type {
	case itemCall:
		return json.Marshal(struct {
			ID        string `json:"id"`
			Type      string `json:"type"`
			Status    string `json:"status"`
			Arguments string `json:"arguments"`
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Namespace string `json:"namespace,omitempty"`
		}{it.ID, it.Type, it.Status, it.Arguments, it.CallID, it.Name, it.Namespace})
	case itemCustomCall:
		return json.Marshal(struct {
			ID        string `json:"id"`
			Type      string `json:"type"`
			Status    string `json:"status,omitempty"`
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Input     string `json:"input"`
			Namespace string `json:"namespace,omitempty"`
		}{it.ID, it.Type, it.Status, it.CallID, it.Name, it.Input, it.Namespace})
	case itemCallOutput, itemCustomCallOutput:
		return json.Marshal(struct {
			ID     string          `json:"id"`
			Type   string          `json:"type"`
			Status string          `json:"status"`
			CallID string          `json:"call_id"`
			Output json.RawMessage `json:"output"`
		}{it.ID, it.Type, it.Status, it.CallID, it.Output})
	case itemReasoning:
		return json.Marshal(struct {
			ID               string `json:"id"`
			Type             string `json:"type"`
			Summary          []part `json:"summary"`
			Content          []part `json:"content"`
			EncryptedContent string `json:"encrypted_content,omitempty"`
		}{it.ID, it.Type, nonNil(it.Summary), nonNil(it.Content), it.EncryptedContent})
	default:
		return json.Marshal(struct {
			ID      string `json:"id"`
			Type    string `json:"type"`
			Status  string `json:"status"`
			Role    string `json:"role"`
			Content []part `json:"content"`
		}{it.ID, it.Type, it.Status, it.Role, nonNil(it.Content)})
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// part is one content part: input_text, output_text (assistant text, with its logprobs when
// they were asked for), reasoning_text, summary_text, or a user's input_image or input_audio
// (kept as sent, so a stored response's input replays with its images).
type part struct {
	Type     string         `json:"type"`
	Text     string         `json:"text"`
	Logprobs []tokenLogprob `json:"logprobs,omitempty"`
	// ImageURL and Detail are an input_image's; InputAudio an input_audio's.
	ImageURL   string      `json:"image_url,omitempty"`
	Detail     string      `json:"detail,omitempty"`
	InputAudio *inputAudio `json:"input_audio,omitempty"`
}

// inputAudio is an input_audio part's audio: base64 file bytes and their format.
type inputAudio struct {
	Data   string `json:"data"`
	Format string `json:"format"`
}

// MarshalJSON writes output_text parts with the annotations and logprobs OpenAI always sends,
// and media parts with their own fields.
func (p part) MarshalJSON() ([]byte, error) {
	switch p.Type {
	case "input_image":
		return json.Marshal(struct {
			Type     string  `json:"type"`
			ImageURL string  `json:"image_url"`
			Detail   string  `json:"detail"`
			FileID   *string `json:"file_id"`
		}{p.Type, p.ImageURL, cmp.Or(p.Detail, "auto"), nil})
	case "input_audio":
		return json.Marshal(struct {
			Type       string      `json:"type"`
			InputAudio *inputAudio `json:"input_audio"`
		}{p.Type, p.InputAudio})
	}
	if p.Type == "output_text" {
		return json.Marshal(struct {
			Type        string         `json:"type"`
			Text        string         `json:"text"`
			Annotations []struct{}     `json:"annotations"`
			Logprobs    []tokenLogprob `json:"logprobs"`
		}{p.Type, p.Text, []struct{}{}, nonNil(p.Logprobs)})
	}
	return json.Marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{p.Type, p.Text})
}

// responseTool is a function tool as the Responses API writes it: flat, where chat
// completions nest it under "function".
type responseTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
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
	ToolChoice         json.RawMessage    `json:"tool_choice"`
	Tools              []json.RawMessage  `json:"tools"`
	TopLogprobs        int                `json:"top_logprobs"`
	TopP               float64            `json:"top_p"`
	Truncation         string             `json:"truncation"`
	Usage              *responseUsage     `json:"usage"`
	User               *string            `json:"user"`
	Metadata           map[string]string  `json:"metadata"`
	PromptCacheKey     *string            `json:"prompt_cache_key,omitempty"`
	SafetyIdentifier   *string            `json:"safety_identifier,omitempty"`
	// Superfluid carries what the server noticed (e.g. text that looked like a tool call but
	// did not parse); absent when there is nothing to say.
	Superfluid *replyExtra `json:"superfluid,omitempty"`
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
	Arguments      *string         `json:"arguments,omitempty"`
	Logprobs       *[]eventLogprob `json:"logprobs,omitempty"`
	SummaryIndex   *int            `json:"summary_index,omitempty"`
	// Input is response.custom_tool_call_input.done's whole input.
	Input *string `json:"input,omitempty"`
}

// eventLogprob is a token's logprob in output_text.delta and .done events: OpenAI's event
// shape has no bytes (the output_text part's has).
type eventLogprob struct {
	Token       string     `json:"token"`
	Logprob     float64    `json:"logprob"`
	TopLogprobs []eventTop `json:"top_logprobs"`
}

type eventTop struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
}

// toEventLogprobs is lps in the event shape; never nil, as the events always carry the field.
func toEventLogprobs(lps []tokenLogprob) *[]eventLogprob {
	out := make([]eventLogprob, len(lps))
	for i, lp := range lps {
		top := make([]eventTop, len(lp.TopLogprobs))
		for k, a := range lp.TopLogprobs {
			top[k] = eventTop{Token: a.Token, Logprob: a.Logprob}
		}
		out[i] = eventLogprob{Token: lp.Token, Logprob: lp.Logprob, TopLogprobs: top}
	}
	return &out
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
