package ollama

import (
	"encoding/json"
	"time"

	"github.com/superfluid/superfluid/server/core"
)

// generateRequest is POST /api/generate (Ollama's api.GenerateRequest).
type generateRequest struct {
	Model    string `json:"model"`
	Prompt   string `json:"prompt"`
	Suffix   string `json:"suffix"`
	System   string `json:"system"`
	Template string `json:"template"`
	// Context is the token context of an earlier reply; accepted and ignored (package doc).
	Context   []int                      `json:"context"`
	Stream    *bool                      `json:"stream"`
	Raw       bool                       `json:"raw"`
	Format    json.RawMessage            `json:"format"`
	KeepAlive json.RawMessage            `json:"keep_alive"`
	Images    []json.RawMessage          `json:"images"`
	Options   map[string]json.RawMessage `json:"options"`
	Think     json.RawMessage            `json:"think"`
	Logprobs  bool                       `json:"logprobs"`
	// TopLogprobs (0-20) applies only with Logprobs, as in Ollama.
	TopLogprobs int `json:"top_logprobs"`
	// Speculative is a mode ("off", "ngram", "draft") or {"mode", "draft_tokens"}; also taken
	// in options (an extension; the top level wins).
	Speculative json.RawMessage `json:"speculative"`
	// Lora picks LoRA adapters, [{"id", "scale"}]; also taken in options (an extension; the
	// top level wins).
	Lora json.RawMessage `json:"lora"`
}

// chatRequest is POST /api/chat (Ollama's api.ChatRequest).
type chatRequest struct {
	Model     string          `json:"model"`
	Messages  []message       `json:"messages"`
	Stream    *bool           `json:"stream"`
	Format    json.RawMessage `json:"format"`
	KeepAlive json.RawMessage `json:"keep_alive"`
	Tools     []tool          `json:"tools"`
	// Options may hold the extension tool_choice (see the package doc).
	Options     map[string]json.RawMessage `json:"options"`
	Think       json.RawMessage            `json:"think"`
	Logprobs    bool                       `json:"logprobs"`
	TopLogprobs int                        `json:"top_logprobs"`
	// Speculative and Lora: see generateRequest.
	Speculative json.RawMessage `json:"speculative"`
	Lora        json.RawMessage `json:"lora"`
}

// message is one chat turn (Ollama's api.Message).
type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// Thinking is earlier reasoning of the model, given to the template as reasoning_content
	// (templates that do not read it leave it out).
	Thinking  string            `json:"thinking,omitempty"`
	Images    []json.RawMessage `json:"images,omitempty"`
	ToolCalls []toolCall        `json:"tool_calls,omitempty"`
	// ToolName and ToolCallID say which call a role "tool" message answers.
	ToolName   string `json:"tool_name,omitempty"`
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// replyMessage is the assistant message of a chat reply.
type replyMessage struct {
	Role      string     `json:"role"`
	Content   string     `json:"content"`
	Thinking  string     `json:"thinking,omitempty"`
	ToolCalls []toolCall `json:"tool_calls,omitempty"`
}

// extra is the superfluid extension object of a reply's last line: what Ollama's shape has no
// field for.
type extra struct {
	// Warnings say what went wrong but was served anyway, e.g. text that looked like a tool
	// call but did not parse (served as content). The request record keeps them too.
	Warnings []string `json:"warnings,omitempty"`
	// Spec is what speculative decoding drafted and kept; only when it ran.
	Spec *core.SpecReport `json:"spec,omitempty"`
}

// metrics are Ollama's timing and count fields, durations in nanoseconds.
type metrics struct {
	TotalDuration      time.Duration `json:"total_duration,omitempty"`
	LoadDuration       time.Duration `json:"load_duration,omitempty"`
	PromptEvalCount    int           `json:"prompt_eval_count,omitempty"`
	PromptEvalDuration time.Duration `json:"prompt_eval_duration,omitempty"`
	EvalCount          int           `json:"eval_count,omitempty"`
	EvalDuration       time.Duration `json:"eval_duration,omitempty"`
}

// generateResponse is one /api/generate reply or stream line (Ollama's api.GenerateResponse).
type generateResponse struct {
	Model      string    `json:"model"`
	CreatedAt  time.Time `json:"created_at"`
	Response   string    `json:"response"`
	Thinking   string    `json:"thinking,omitempty"`
	Done       bool      `json:"done"`
	DoneReason string    `json:"done_reason,omitempty"`
	metrics
	Logprobs   []logprob `json:"logprobs,omitempty"`
	Superfluid *extra    `json:"superfluid,omitempty"`
}

// chatResponse is one /api/chat reply or stream line (Ollama's api.ChatResponse).
type chatResponse struct {
	Model      string       `json:"model"`
	CreatedAt  time.Time    `json:"created_at"`
	Message    replyMessage `json:"message"`
	Done       bool         `json:"done"`
	DoneReason string       `json:"done_reason,omitempty"`
	metrics
	Logprobs   []logprob `json:"logprobs,omitempty"`
	Superfluid *extra    `json:"superfluid,omitempty"`
}

// details is Ollama's api.ModelDetails.
type details struct {
	ParentModel       string   `json:"parent_model"`
	Format            string   `json:"format"`
	Family            string   `json:"family"`
	Families          []string `json:"families"`
	ParameterSize     string   `json:"parameter_size"`
	QuantizationLevel string   `json:"quantization_level"`
}

// listModel is one /api/tags entry (Ollama's api.ListModelResponse).
type listModel struct {
	Name       string    `json:"name"`
	Model      string    `json:"model"`
	ModifiedAt time.Time `json:"modified_at"`
	Size       int64     `json:"size"`
	Digest     string    `json:"digest"`
	Details    details   `json:"details"`
}

// runningModel is one /api/ps entry (Ollama's api.ProcessModelResponse).
type runningModel struct {
	Name          string    `json:"name"`
	Model         string    `json:"model"`
	Size          int64     `json:"size"`
	Digest        string    `json:"digest"`
	Details       details   `json:"details"`
	ExpiresAt     time.Time `json:"expires_at"`
	SizeVRAM      int64     `json:"size_vram"`
	ContextLength int       `json:"context_length"`
}

// showRequest is POST /api/show; Name is the deprecated spelling of Model.
type showRequest struct {
	Model   string `json:"model"`
	Name    string `json:"name"`
	Verbose bool   `json:"verbose"`
}

// tensor is one /api/show tensor entry.
type tensor struct {
	Name  string   `json:"name"`
	Type  string   `json:"type"`
	Shape []uint64 `json:"shape"`
}

// showResponse is Ollama's api.ShowResponse, as far as a GGUF file can fill it.
type showResponse struct {
	License      string         `json:"license,omitempty"`
	Modelfile    string         `json:"modelfile,omitempty"`
	Parameters   string         `json:"parameters,omitempty"`
	Template     string         `json:"template,omitempty"`
	Details      details        `json:"details"`
	ModelInfo    map[string]any `json:"model_info"`
	Tensors      []tensor       `json:"tensors,omitempty"`
	Capabilities []string       `json:"capabilities"`
	ModifiedAt   time.Time      `json:"modified_at"`
}

// tokenizeRequest is POST /api/tokenize (the shape of Ollama's experimental tokenize API).
type tokenizeRequest struct {
	Model   string  `json:"model"`
	Content *string `json:"content"`
	Text    *string `json:"text"`
}

// pullRequest is POST /api/pull; Name is the deprecated spelling of Model. Insecure, and
// Ollama's username and password, are accepted and ignored: pulls go to Hugging Face over HTTPS.
type pullRequest struct {
	Model    string `json:"model"`
	Name     string `json:"name"`
	Insecure bool   `json:"insecure"`
	Stream   *bool  `json:"stream"`
}

// progress is one /api/pull line (Ollama's api.ProgressResponse).
type progress struct {
	Status    string `json:"status"`
	Digest    string `json:"digest,omitempty"`
	Total     int64  `json:"total,omitempty"`
	Completed int64  `json:"completed,omitempty"`
}

// deleteRequest is DELETE /api/delete; Name is the deprecated spelling of Model.
type deleteRequest struct {
	Model string `json:"model"`
	Name  string `json:"name"`
}

// copyRequest is POST /api/copy.
type copyRequest struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
}
