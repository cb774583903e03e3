// Package llm holds the engine-neutral types every runtime speaks: generation requests, the
// events a generation streams back, model facts and the sentinel errors the dialects map to
// status codes. It has no cgo and no HTTP.
package llm

import (
	"context"
	"encoding/json"
	"fmt"
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
	// FlashAttention reports whether the context runs flash attention (it shapes the KV
	// cache's layout, so saved prefixes are only valid under the same setting).
	FlashAttention bool `json:"flash_attention,omitempty"`
	// DraftModel is the draft model's path when one is loaded for speculative decoding.
	DraftModel string `json:"draft_model,omitempty"`
	// Projector is the multimodal projector (mmproj) file loaded beside the model, "" for none;
	// Vision and Audio say what it encodes (Request.Media of that kind).
	Projector string `json:"projector,omitempty"`
	Vision    bool   `json:"vision,omitempty"`
	Audio     bool   `json:"audio,omitempty"`
	// AddBOS reports whether the tokenizer prepends a BOS token when asked for special tokens.
	AddBOS bool `json:"add_bos"`
	// MaxTokenBytes is the length in bytes of the longest token text in the vocabulary (0:
	// not known yet). No token covers more text than that, so a text longer than
	// ContextLength × MaxTokenBytes cannot fit the window, and can be refused untokenized.
	MaxTokenBytes int `json:"max_token_bytes,omitempty"`
	// Embedding is set when the model embeds (a pooling head, an encoder architecture such as
	// BERT): it serves embeddings and rerank (the engine is an Embedder) and never generates.
	// Nil for a generation-only model.
	Embedding *Embedding `json:"embedding,omitempty"`
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
	// CachePartition keeps prefixes apart: a request reuses (or waits for, or copies) only
	// what requests of its own partition computed, so cached token counts and timings never
	// tell one tenant that another sent the same prompt (team mode partitions by person).
	// "" is one partition, as before.
	CachePartition string `json:"cache_partition,omitempty"`
	// SharedPrefix is the one exception to CachePartition: a text (a team system prompt an
	// admin marked shared) whose tokens any partition's cache may serve. The engine tokenizes it
	// as it does Prompt and reuses another partition's cache only for the tokens the prompt has
	// in common with it, so a prompt that merely starts with the same characters but tokenizes
	// differently shares no more than the matching tokens, and nothing past the shared text.
	SharedPrefix string `json:"shared_prefix,omitempty"`
	// Deadline, when set, cuts the generation: past it the engine finishes with "length" and
	// Done.Expired (the completion scheduling class, --completion-deadline-ms).
	Deadline time.Time `json:"deadline,omitzero"`
	// Priority orders the engine's queue: queued interactive generations take a free lane
	// before background ones (batch lines), so an interactive request waits for at most the
	// background generation running on a lane, never for those queued. The zero value is
	// interactive.
	Priority Priority `json:"priority,omitempty"`
	// Format constrains the output: "" (free text), "json" (any JSON value) or "schema"
	// (JSON matching Schema).
	Format string          `json:"format,omitempty"`
	Schema json.RawMessage `json:"schema,omitempty"`
	// CompactJSON allows at most one space between the Format's JSON tokens, where llama.cpp
	// allows newlines and indentation: a forced tool call cannot wander off in whitespace (a
	// small model otherwise spends its whole cap on it).
	CompactJSON bool `json:"compact_json,omitempty"`
	// Logprobs asks for the log probability of every completion token, and TopLogprobs
	// (0-20) for that many of the most likely alternatives at each position.
	Logprobs    bool `json:"logprobs,omitempty"`
	TopLogprobs int  `json:"top_logprobs,omitempty"`
	// Speculative chooses speculative decoding for this request; nil takes the engine's
	// default (the model's setting).
	Speculative *Speculative `json:"speculative,omitempty"`
	// Media are the prompt's images and audio clips, in order: each goes where Prompt holds
	// MediaMarker (exactly len(Media) times; the core picks a marker no client text holds). The
	// engine encodes them with the model's projector; a model without one refuses with
	// ErrUnsupportedInput. Tokens must be empty when Media is set.
	Media       []Media `json:"media,omitempty"`
	MediaMarker string  `json:"media_marker,omitempty"`
	// Adapters are the LoRA adapters the request runs with; nil runs the bare model.
	Adapters []AdapterRef `json:"adapters,omitempty"`
}

// Speculation modes: none, prompt lookup (draft the continuation of the longest recent n-gram
// match in the prompt and reply), or a draft model loaded beside the target.
const (
	SpecOff   = "off"
	SpecNgram = "ngram"
	SpecDraft = "draft"
)

// MaxDraftTokens is the most tokens one speculation step may draft.
const MaxDraftTokens = 32

// Speculative is one request's choice of speculative decoding.
type Speculative struct {
	// Mode is SpecOff, SpecNgram or SpecDraft; "" keeps the engine's default mode.
	Mode string `json:"mode,omitempty"`
	// DraftTokens is the most tokens drafted per step (1-MaxDraftTokens); 0 keeps the
	// engine's default.
	DraftTokens int `json:"draft_tokens,omitempty"`
}

// SpecStats count what speculative decoding did for one generation (or, in Totals, an engine).
type SpecStats struct {
	// Mode is the drafter that ran (SpecNgram or SpecDraft).
	Mode string `json:"mode,omitempty"`
	// Proposed is the drafted tokens sent for verification, Accepted those the target model
	// kept.
	Proposed int `json:"proposed"`
	Accepted int `json:"accepted"`
	// Note says why speculation was turned off for the request, or ran differently than asked
	// (e.g. "no draft model is loaded; n-gram drafting instead").
	Note string `json:"note,omitempty"`
}

// AcceptanceRate is Accepted / Proposed (0 when nothing was proposed).
func (s SpecStats) AcceptanceRate() float64 {
	if s.Proposed == 0 {
		return 0
	}
	return float64(s.Accepted) / float64(s.Proposed)
}

// Priority is a generation's place in an engine's queue.
type Priority int

// Priorities, first served first.
const (
	PriorityInteractive Priority = iota
	PriorityBackground
)

// MaxTopLogprobs is the most alternatives a request may ask for per token (OpenAI's bound).
const MaxTopLogprobs = 20

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
	// FinishToolCalls: the reply ended with tool calls for the client to run.
	FinishToolCalls = "tool_calls"
)

// Event is one step of a generation: Started once a lane takes the request, then pieces of
// text, then the final Done with usage.
type Event struct {
	Started *Started `json:"started,omitempty"`
	// Text is the next piece of completion text; always whole UTF-8 characters, never part of a stop string.
	Text string `json:"text,omitempty"`
	// Tokens is how many completion tokens this piece covers (text may lag tokens while a
	// character or a possible stop string is incomplete).
	Tokens int `json:"tokens,omitempty"`
	// Reasoning is the next piece of the model's reasoning ("thinking"), split from the
	// content by the app (never set by an Engine; a chat-level engine above one may set it).
	Reasoning string `json:"reasoning,omitempty"`
	// ToolCalls are pieces of tool calls parsed from the reply by the app (never set by an
	// Engine; a chat-level engine above one may set them); see ToolCallDelta.
	ToolCalls []ToolCallDelta `json:"tool_calls,omitempty"`
	// Logprobs covers the tokens this event counts (Request.Logprobs), in order. Text may lag
	// them; their concatenated bytes are the completion's bytes.
	Logprobs []TokenLogprob `json:"logprobs,omitempty"`
	Done     *Done          `json:"done,omitempty"`
}

// TokenLogprob is one completion token with its log probability and, when asked for, the most
// likely alternatives at its position (the chosen token among them when it ranks).
type TokenLogprob struct {
	Token   string       `json:"token"`
	Bytes   []byte       `json:"bytes"`
	Logprob float64      `json:"logprob"`
	Top     []TopLogprob `json:"top,omitempty"`
}

// TopLogprob is one alternative at a token position.
type TopLogprob struct {
	Token   string  `json:"token"`
	Bytes   []byte  `json:"bytes"`
	Logprob float64 `json:"logprob"`
}

// ToolCall is one function call the model made.
type ToolCall struct {
	ID        string          `json:"id"`        // "call_" and 24 hex digits, OpenAI's shape
	Name      string          `json:"name"`      // the function name, never empty
	Arguments json.RawMessage `json:"arguments"` // always a JSON object, compact
}

// ToolCallDelta is one streamed piece of a tool call: first an opening delta with ID and
// Name, then Arguments fragments on the same Index. The fragments of one call join into its
// arguments JSON object.
type ToolCallDelta struct {
	Index     int    `json:"index"`          // the call's position in the reply, from 0
	ID        string `json:"id,omitempty"`   // set on the opening delta only
	Name      string `json:"name,omitempty"` // set on the opening delta only
	Arguments string `json:"arguments,omitempty"`
}

// Started says the prompt is tokenized and placed: how long it is and how much of it the
// prefix cache already holds.
type Started struct {
	PromptTokens int `json:"prompt_tokens"`
	CachedTokens int `json:"cached_tokens"`
	Lane         int `json:"lane"`
	// RestoredTokens is how many of CachedTokens came from the prefix cache on disk (a prefix
	// saved before an unload or restart) rather than from a lane's memory.
	RestoredTokens int `json:"restored_tokens,omitempty"`
	// CacheMiss says why the prompt was not served whole from the cache (CacheMiss* values);
	// "" when every cacheable token was.
	CacheMiss string `json:"cache_miss,omitempty"`
}

// Reasons a prompt missed the prefix cache (Started.CacheMiss, Done.CacheMiss). A divergence is
// written "diverged at token N" (CacheMissDiverged(N)).
const (
	CacheMissCold            = "cold"             // nothing cached or saved shares its start
	CacheMissEvicted         = "evicted"          // its prefix was cached, then dropped unsaved
	CacheMissSettingsChanged = "settings changed" // a saved prefix matches, but was made by other model settings
	CacheMissOff             = "cache off"        // the request asked for no cache (NoCache)
)

// CacheMissDiverged is the miss reason of a prompt whose best cached prefix matched its first n
// tokens only.
func CacheMissDiverged(n int) string { return fmt.Sprintf("diverged at token %d", n) }

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
	// Warning says what the app noticed about the reply, for the client and the request
	// record: e.g. text that looks like a tool call but did not parse (kept as content).
	Warning string `json:"warning,omitempty"`
	// Spec counts speculative decoding; nil when it did not run.
	Spec *SpecStats `json:"spec,omitempty"`
	// RestoredTokens and CacheMiss repeat the Started event's (for the request record).
	RestoredTokens int    `json:"restored_tokens,omitempty"`
	CacheMiss      string `json:"cache_miss,omitempty"`
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
