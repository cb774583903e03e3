package forward

import (
	"encoding/json"
	"strconv"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
)

// The upstream's wire: OpenAI's chat and completion requests as this package sends them.
// Extensions that vLLM, SGLang and llama-server read (top_k, min_p, ignore_eos,
// chat_template_kwargs) are sent only when set.

type wireMessage struct {
	Role             string         `json:"role"`
	Content          *string        `json:"content"`
	Name             string         `json:"name,omitempty"`
	ToolCallID       string         `json:"tool_call_id,omitempty"`
	ToolCalls        []wireToolCall `json:"tool_calls,omitempty"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireTool struct {
	Type     string           `json:"type"`
	Function wireToolFunction `json:"function"`
}

type wireToolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// wireGeneration holds the fields chat and completion requests share.
type wireGeneration struct {
	Model            string             `json:"model"`
	Stream           bool               `json:"stream"`
	StreamOptions    streamOptions      `json:"stream_options"`
	MaxTokens        int                `json:"max_tokens,omitempty"`
	Stop             []string           `json:"stop,omitempty"`
	Temperature      *float64           `json:"temperature,omitempty"`
	TopP             *float64           `json:"top_p,omitempty"`
	TopK             *int               `json:"top_k,omitempty"`
	MinP             *float64           `json:"min_p,omitempty"`
	PresencePenalty  float64            `json:"presence_penalty,omitempty"`
	FrequencyPenalty float64            `json:"frequency_penalty,omitempty"`
	RepeatPenalty    *float64           `json:"repetition_penalty,omitempty"`
	Seed             *uint64            `json:"seed,omitempty"`
	LogitBias        map[string]float64 `json:"logit_bias,omitempty"`
	IgnoreEOS        bool               `json:"ignore_eos,omitempty"`
}

type wireChat struct {
	wireGeneration
	Messages          []wireMessage  `json:"messages"`
	Tools             []wireTool     `json:"tools,omitempty"`
	ToolChoice        any            `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool          `json:"parallel_tool_calls,omitempty"`
	ResponseFormat    any            `json:"response_format,omitempty"`
	Logprobs          bool           `json:"logprobs,omitempty"`
	TopLogprobs       int            `json:"top_logprobs,omitempty"`
	TemplateKwargs    map[string]any `json:"chat_template_kwargs,omitempty"`
}

type wireCompletion struct {
	wireGeneration
	Prompt   any  `json:"prompt"`
	Logprobs *int `json:"logprobs,omitempty"`
}

// generationOf is gen for the upstream, named model, always streamed with usage.
func generationOf(model string, gen *llm.Request) wireGeneration {
	s := gen.Sampling
	w := wireGeneration{Model: model, Stream: true, StreamOptions: streamOptions{IncludeUsage: true},
		MaxTokens: gen.MaxTokens, Stop: gen.Stop, Temperature: s.Temperature, TopP: s.TopP, TopK: s.TopK, MinP: s.MinP,
		PresencePenalty: s.PresencePenalty, FrequencyPenalty: s.FrequencyPenalty, IgnoreEOS: gen.IgnoreEOS}
	if s.RepeatPenalty != nil && *s.RepeatPenalty != llm.DefaultRepeatPenalty {
		w.RepeatPenalty = s.RepeatPenalty
	}
	if s.Seed != 0 {
		seed := s.Seed
		w.Seed = &seed
	}
	if len(s.LogitBias) > 0 {
		w.LogitBias = make(map[string]float64, len(s.LogitBias))
		for id, bias := range s.LogitBias {
			w.LogitBias[strconv.Itoa(id)] = bias
		}
	}
	return w
}

// chatOf is req as the upstream's chat request.
func chatOf(model string, req *core.ChatRequest) *wireChat {
	w := &wireChat{wireGeneration: generationOf(model, &req.Generation), ParallelToolCalls: req.ParallelToolCalls,
		Logprobs: req.Generation.Logprobs, TopLogprobs: req.Generation.TopLogprobs, TemplateKwargs: req.TemplateKwargs}
	for _, m := range req.Messages {
		content := m.Content
		wm := wireMessage{Role: m.Role, Content: &content, Name: m.Name, ToolCallID: m.ToolCallID, ReasoningContent: m.Reasoning}
		for _, c := range m.ToolCalls {
			wm.ToolCalls = append(wm.ToolCalls, wireToolCall{ID: c.ID, Type: "function", Function: wireFunction{c.Name, string(c.Arguments)}})
		}
		if len(wm.ToolCalls) > 0 && content == "" {
			wm.Content = nil // OpenAI's shape of a turn that only calls
		}
		w.Messages = append(w.Messages, wm)
	}
	for _, t := range req.Tools {
		w.Tools = append(w.Tools, wireTool{Type: "function", Function: wireToolFunction{t.Name, t.Description, t.Parameters}})
	}
	switch req.ToolChoice.Mode {
	case core.ToolAuto, core.ToolNone, core.ToolRequired:
		w.ToolChoice = req.ToolChoice.Mode
	case core.ToolFunction:
		w.ToolChoice = map[string]any{"type": "function", "function": map[string]string{"name": req.ToolChoice.Name}}
	}
	switch req.Generation.Format {
	case llm.FormatJSON:
		w.ResponseFormat = map[string]string{"type": "json_object"}
	case llm.FormatSchema:
		w.ResponseFormat = map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "response", "schema": req.Generation.Schema}}
	}
	return w
}

// completionOf is req as the upstream's completion request: the prompt text, or its token ids.
func completionOf(model string, req *core.CompletionRequest) *wireCompletion {
	w := &wireCompletion{wireGeneration: generationOf(model, &req.Generation), Prompt: req.Generation.Prompt}
	if len(req.Generation.Tokens) > 0 {
		w.Prompt = req.Generation.Tokens
	}
	return w
}

// The upstream's stream chunks, chat and completion alike.

type wireChunk struct {
	Choices []wireChoice    `json:"choices"`
	Usage   *wireUsage      `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

type wireChoice struct {
	Index        int           `json:"index"`
	Text         string        `json:"text"` // completions
	Delta        wireDelta     `json:"delta"`
	Logprobs     *wireLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

type wireDelta struct {
	Content          string `json:"content"`
	ReasoningContent string `json:"reasoning_content"`
	Reasoning        string `json:"reasoning"` // Ollama's and newer vLLM's name
	ToolCalls        []struct {
		Index    int    `json:"index"`
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// wireLogprobs is a chat chunk's logprobs; a completion's (another shape) is not relayed.
type wireLogprobs struct {
	Content []struct {
		Token       string  `json:"token"`
		Logprob     float64 `json:"logprob"`
		Bytes       []int   `json:"bytes"`
		TopLogprobs []struct {
			Token   string  `json:"token"`
			Logprob float64 `json:"logprob"`
			Bytes   []int   `json:"bytes"`
		} `json:"top_logprobs"`
	} `json:"content"`
}

type wireUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// bytesOf is a logprob's bytes as the wire lists them, else the token's text.
func bytesOf(b []int, token string) []byte {
	if len(b) == 0 {
		return []byte(token)
	}
	out := make([]byte, len(b))
	for i, v := range b {
		out[i] = byte(v)
	}
	return out
}

// logprobsOf is a chat chunk's logprobs as llm's.
func logprobsOf(w *wireLogprobs) []llm.TokenLogprob {
	if w == nil {
		return nil
	}
	var out []llm.TokenLogprob
	for _, c := range w.Content {
		lp := llm.TokenLogprob{Token: c.Token, Bytes: bytesOf(c.Bytes, c.Token), Logprob: c.Logprob}
		for _, t := range c.TopLogprobs {
			lp.Top = append(lp.Top, llm.TopLogprob{Token: t.Token, Bytes: bytesOf(t.Bytes, t.Token), Logprob: t.Logprob})
		}
		out = append(out, lp)
	}
	return out
}
