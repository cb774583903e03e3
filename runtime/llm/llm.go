// Package llm holds the engine-neutral types every runtime speaks: generation requests, the
// events a generation streams back, model facts and the sentinel errors the dialects map to
// status codes. It has no cgo and no HTTP.
package llm

import (
	"context"
	"encoding/json"
	"time"
)

// Engine runs one loaded model. Implementations: runtime/llamacpp (in the worker process),
// runtime/worker.Client (the app's view of a worker) and runtime/enginetest (a fake for tests).
type Engine interface {
	// Info describes the loaded model and the context the engine runs it with.
	Info() ModelInfo
	// Tokenize returns the token ids of text; addSpecial adds BOS/EOS as the model wants,
	// parseSpecial turns special-token text (like "<|im_start|>") into its single id.
	Tokenize(ctx context.Context, text string, addSpecial, parseSpecial bool) ([]int, error)
	// Generate runs one completion and calls emit for every event, ending with one Done event
	// on success. It returns an error (and emits no Done) when the generation fails; an error
	// from emit cancels the generation and is returned.
	Generate(ctx context.Context, req *Request, emit func(Event) error) error
	// Close releases the model.
	Close() error
}

// ModelInfo is what an engine knows about its model after loading it.
type ModelInfo struct {
	Path         string `json:"path"`
	Architecture string `json:"architecture"`
	// ContextLength is the window one request may fill (prompt + completion), in tokens.
	ContextLength int `json:"context_length"`
	// TrainContextLength is the window the model was trained with.
	TrainContextLength int    `json:"train_context_length"`
	VocabSize          int    `json:"vocab_size"`
	Parallel           int    `json:"parallel"`
	Threads            int    `json:"threads"`
	Runtime            string `json:"runtime"`
	// AddBOS reports whether the tokenizer prepends a BOS token when asked for special tokens.
	AddBOS bool `json:"add_bos"`
	// MaxTokenBytes is the length in bytes of the longest token text in the vocabulary (0:
	// not known yet). No token covers more text than that, so a text longer than
	// ContextLength × MaxTokenBytes cannot fit the window, and can be refused untokenized.
	MaxTokenBytes int `json:"max_token_bytes,omitempty"`
}

// Request is one generation. The prompt is text; the engine tokenizes it so that the token
// sequence, and hence the prefix cache, is the same whichever dialect built the text.
type Request struct {
	// ID names the request in lane snapshots (/slots) and logs.
	ID     string `json:"id,omitempty"`
	Prompt string `json:"prompt"`
	// Tokens, when set, is the prompt as token ids and Prompt is ignored (fill-in-the-middle
	// builds its prompt from special tokens around separately tokenized text).
	Tokens []int `json:"tokens,omitempty"`
	// AddSpecial asks the tokenizer to add BOS (false when the prompt text already starts with it).
	AddSpecial bool `json:"add_special"`
	// MaxTokens caps the completion; 0 means "fill the context".
	MaxTokens int      `json:"max_tokens"`
	Stop      []string `json:"stop,omitempty"`
	IgnoreEOS bool     `json:"ignore_eos,omitempty"`
	Sampling  Sampling `json:"sampling"`
	// NoCache computes the whole prompt even when a lane holds its prefix (llama.cpp's
	// cache_prompt=false; benchmarks use it to measure cold prefill).
	NoCache bool `json:"no_cache,omitempty"`
	// Deadline, when set, cuts the generation: past it the engine finishes with "length" and
	// Done.Expired (the completion scheduling class, --completion-deadline-ms).
	Deadline time.Time `json:"deadline,omitzero"`
	// Format constrains the output: "" (free text), "json" (any JSON value) or "schema"
	// (JSON matching Schema).
	Format string          `json:"format,omitempty"`
	Schema json.RawMessage `json:"schema,omitempty"`
}

// Output formats.
const (
	FormatJSON   = "json"
	FormatSchema = "schema"
)

// Sampling holds the sampler settings of one request. A nil pointer means "the default".
type Sampling struct {
	Temperature      *float64        `json:"temperature,omitempty"`
	TopP             *float64        `json:"top_p,omitempty"`
	TopK             *int            `json:"top_k,omitempty"`
	MinP             *float64        `json:"min_p,omitempty"`
	PresencePenalty  float64         `json:"presence_penalty,omitempty"`
	FrequencyPenalty float64         `json:"frequency_penalty,omitempty"`
	RepeatPenalty    *float64        `json:"repeat_penalty,omitempty"`
	Seed             uint64          `json:"seed,omitempty"` // 0 = a fresh seed per request
	LogitBias        map[int]float64 `json:"logit_bias,omitempty"`
}

// Default sampler settings (llama.cpp's), used where a request names nothing.
const (
	DefaultTemperature   = 0.8
	DefaultTopP          = 0.95
	DefaultTopK          = 40
	DefaultMinP          = 0.05
	DefaultRepeatPenalty = 1.0
	// RepeatLastN is how many recent tokens the repeat/presence/frequency penalties look at.
	RepeatLastN = 64
)

// Finish reasons, as the OpenAI API names them.
const (
	FinishStop   = "stop"
	FinishLength = "length"
)

// Event is one step of a generation: Started once a lane takes the request, then pieces of
// text, then the final Done with usage.
type Event struct {
	Started *Started `json:"started,omitempty"`
	// Text is the next piece of completion text; always whole UTF-8 characters, never part of a stop string.
	Text string `json:"text,omitempty"`
	// Tokens is how many completion tokens this piece covers (text may lag tokens while a
	// character or a possible stop string is incomplete).
	Tokens int   `json:"tokens,omitempty"`
	Done   *Done `json:"done,omitempty"`
}

// Started says the prompt is tokenized and placed: how long it is and how much of it the
// prefix cache already holds.
type Started struct {
	PromptTokens int `json:"prompt_tokens"`
	CachedTokens int `json:"cached_tokens"`
	Lane         int `json:"lane"`
}

// Done closes a successful generation.
type Done struct {
	FinishReason string `json:"finish_reason"`
	// StopSequence is the stop string that ended the generation (FinishReason "stop"); "" when
	// the model ended it (EOS) or it was cut.
	StopSequence string  `json:"stop_sequence,omitempty"`
	Usage        Usage   `json:"usage"`
	Timings      Timings `json:"timings"`
	Lane         int     `json:"lane"`
	// Expired reports whether the request's deadline cut the generation.
	Expired bool `json:"expired,omitempty"`
}

// Usage counts tokens the OpenAI way.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// CachedTokens is the prompt prefix served from the prefix cache.
	CachedTokens int `json:"cached_tokens"`
}

// Timings are measured inside the engine.
type Timings struct {
	Queue   time.Duration `json:"queue"`
	Prefill time.Duration `json:"prefill"`
	Decode  time.Duration `json:"decode"`
}
