package openai

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
)

// chatRequest is the wire form of POST /v1/chat/completions.
type chatRequest struct {
	Model               *string   `json:"model"`
	Messages            []message `json:"messages"`
	MaxCompletionTokens *int      `json:"max_completion_tokens"`
	MaxTokens           *int      `json:"max_tokens"`
	Stream              bool      `json:"stream"`
	samplingParams
	StreamOptions      *streamOptions     `json:"stream_options"`
	N                  *int               `json:"n"`
	Stop               stopList           `json:"stop"`
	LogitBias          map[string]float64 `json:"logit_bias"`
	ChatTemplateKwargs map[string]any     `json:"chat_template_kwargs"`
	EnableThinking     *bool              `json:"enable_thinking"`

	ResponseFormat *responseFormat `json:"response_format"`

	Logprobs          *bool      `json:"logprobs"`
	TopLogprobs       *int       `json:"top_logprobs"`
	Tools             []tool     `json:"tools"`
	ToolChoice        toolChoice `json:"tool_choice"`
	ParallelToolCalls *bool      `json:"parallel_tool_calls"`
	ReasoningEffort   *string    `json:"reasoning_effort"`
}

// samplingParams are the sampler fields chat and text completions share.
type samplingParams struct {
	Temperature       *float64 `json:"temperature"`
	TopP              *float64 `json:"top_p"`
	TopK              *int     `json:"top_k"`
	MinP              *float64 `json:"min_p"`
	Seed              *int64   `json:"seed"`
	PresencePenalty   *float64 `json:"presence_penalty"`
	FrequencyPenalty  *float64 `json:"frequency_penalty"`
	RepeatPenalty     *float64 `json:"repeat_penalty"`
	RepetitionPenalty *float64 `json:"repetition_penalty"`
	IgnoreEOS         bool     `json:"ignore_eos"`
	// CachePrompt false computes the whole prompt, ignoring the prefix cache (llama.cpp's name).
	CachePrompt *bool `json:"cache_prompt"`
	// KeepAlive is how long the model stays loaded afterwards, in Ollama's syntax (an extension).
	KeepAlive json.RawMessage `json:"keep_alive"`
	// Speculative is a mode ("off", "ngram", "draft") or {"mode", "draft_tokens"} (an extension).
	Speculative json.RawMessage `json:"speculative"`
	// Lora picks LoRA adapters for this request: [{"id", "scale"}] (an extension; [] is none).
	Lora json.RawMessage `json:"lora"`
}

type streamOptions struct {
	IncludeUsage         bool `json:"include_usage"`
	ContinuousUsageStats bool `json:"continuous_usage_stats"`
}

type responseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict *bool           `json:"strict"`
	} `json:"json_schema"`
}

type message struct {
	Role             string         `json:"role"`
	Content          content        `json:"content"`
	Name             string         `json:"name"`
	ToolCallID       string         `json:"tool_call_id"`
	ToolCalls        []wireToolCall `json:"tool_calls"`
	ReasoningContent string         `json:"reasoning_content"`
}

// content is a message's content: a string, null, or an array of parts: text parts joined
// into Text, the others (image_url, input_audio, ...) kept with their place for toMessages.
type content struct {
	Text string
	// Others are the parts that are not text, in order.
	Others []otherPart
}

// otherPart is a non-text content part: its index among the parts, the byte offset in Text
// where it sat, and the part as sent.
type otherPart struct {
	Index, At int
	Type      string
	Raw       json.RawMessage
}

func (c *content) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		return nil
	case len(b) > 0 && b[0] == '"':
		return json.Unmarshal(b, &c.Text)
	case len(b) > 0 && b[0] == '[':
		var raws []json.RawMessage
		if err := json.Unmarshal(b, &raws); err != nil {
			return &json.UnmarshalTypeError{Value: "content part", Type: reflect.TypeFor[[]map[string]any]()}
		}
		var sb strings.Builder
		for j, raw := range raws {
			var p struct {
				Type string  `json:"type"`
				Text *string `json:"text"`
			}
			if err := json.Unmarshal(raw, &p); err != nil {
				return &json.UnmarshalTypeError{Value: "content part", Type: reflect.TypeFor[[]map[string]any]()}
			}
			switch {
			case p.Type == "text" && p.Text != nil:
				sb.WriteString(*p.Text)
			case p.Type == "text":
				return &json.UnmarshalTypeError{Value: "text part without text", Type: reflect.TypeFor[string]()}
			default:
				c.Others = append(c.Others, otherPart{Index: j, At: sb.Len(), Type: p.Type, Raw: raw})
			}
		}
		c.Text = sb.String()
		return nil
	default:
		return &json.UnmarshalTypeError{Value: jsonKind(b), Type: reflect.TypeFor[string]()}
	}
}

// stopList is `stop`: a string or an array of strings.
type stopList []string

func (s *stopList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*s = nil
		return nil
	case len(b) > 0 && b[0] == '"':
		var one string
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		*s = stopList{one}
		return nil
	default:
		var many []string
		if err := json.Unmarshal(b, &many); err != nil {
			return &json.UnmarshalTypeError{Value: jsonKind(b), Type: reflect.TypeFor[[]string]()}
		}
		*s = many
		return nil
	}
}

func jsonKind(b []byte) string {
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

// chatCompletion is the non-streaming reply.
type chatCompletion struct {
	ID                string      `json:"id"`
	Object            string      `json:"object"`
	Created           int64       `json:"created"`
	Model             string      `json:"model"`
	SystemFingerprint string      `json:"system_fingerprint"`
	Choices           []choice    `json:"choices"`
	Usage             usage       `json:"usage"`
	Superfluid        *replyExtra `json:"superfluid,omitempty"`
}

// replyExtra is superfluid's own field on a reply: what it noticed while serving it.
type replyExtra struct {
	Warnings []string `json:"warnings,omitempty"`
	// Spec is what speculative decoding drafted and kept; only when it ran.
	Spec *core.SpecReport `json:"spec,omitempty"`
}

// withSpec adds the choices' speculation report to extra (made when it is nil and there is
// one).
func withSpec(extra *replyExtra, dones ...llm.Done) *replyExtra {
	spec := core.SpecReportOf(dones...)
	if spec == nil {
		return extra
	}
	if extra == nil {
		extra = &replyExtra{}
	}
	extra.Spec = spec
	return extra
}

type choice struct {
	Index        int             `json:"index"`
	Message      replyMessage    `json:"message"`
	Logprobs     *choiceLogprobs `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
}

type replyMessage struct {
	Role             string         `json:"role"`
	Content          *string        `json:"content"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []wireToolCall `json:"tool_calls,omitempty"`
}

type usage struct {
	PromptTokens        int           `json:"prompt_tokens"`
	CompletionTokens    int           `json:"completion_tokens"`
	TotalTokens         int           `json:"total_tokens"`
	PromptTokensDetails *tokenDetails `json:"prompt_tokens_details,omitempty"`
}

type tokenDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// chunk is one streaming frame.
type chunk struct {
	ID                string        `json:"id"`
	Object            string        `json:"object"`
	Created           int64         `json:"created"`
	Model             string        `json:"model"`
	SystemFingerprint string        `json:"system_fingerprint"`
	Choices           []chunkChoice `json:"choices"`
	Usage             *usage        `json:"usage,omitempty"`
	Superfluid        *chunkExtra   `json:"superfluid,omitempty"`
}

type chunkChoice struct {
	Index        int             `json:"index"`
	Delta        delta           `json:"delta"`
	Logprobs     *choiceLogprobs `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

type delta struct {
	Role             string           `json:"role,omitempty"`
	Content          *string          `json:"content,omitempty"`
	ReasoningContent string           `json:"reasoning_content,omitempty"`
	ToolCalls        []streamToolCall `json:"tool_calls,omitempty"`
}

// chunkExtra is superfluid's own field on the terminal chunk.
type chunkExtra struct {
	Warm     int              `json:"warm"`
	Warnings []string         `json:"warnings,omitempty"`
	Spec     *core.SpecReport `json:"spec,omitempty"`
}
