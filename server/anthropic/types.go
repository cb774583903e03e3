package anthropic

import (
	"encoding/json"

	"github.com/superfluid/superfluid/server/core"
)

// conversation is what POST /v1/messages and /v1/messages/count_tokens share.
type conversation struct {
	Model *string `json:"model"`
	// System is a string or an array of text blocks.
	System   json.RawMessage `json:"system"`
	Messages []message       `json:"messages"`
	// Tools are entries of `tools`, decoded one by one by toTools so that errors name the
	// entry at fault.
	Tools      []json.RawMessage `json:"tools"`
	ToolChoice *toolChoice       `json:"tool_choice"`
	Thinking   *thinking         `json:"thinking"`
	// ChatTemplateKwargs are extra chat template variables (an extension, as on the OpenAI
	// routes); an enable_thinking or reasoning_effort here wins over `thinking` and
	// output_config.effort.
	ChatTemplateKwargs map[string]any `json:"chat_template_kwargs"`
	// OutputConfig's effort goes to the template as reasoning_effort, its format (structured
	// output) to the engine's JSON schema constraint.
	OutputConfig *outputConfig `json:"output_config"`
	// OutputFormat is the structured-outputs beta's top-level spelling of output_config.format.
	OutputFormat json.RawMessage `json:"output_format"`
	// ContextManagement edits the history before it is rendered (see config.go).
	ContextManagement *contextManagement `json:"context_management"`
	// MCPServers are remote MCP servers Anthropic would connect to; this server connects to
	// none, so their tools are not offered (a warning says so).
	MCPServers []json.RawMessage `json:"mcp_servers"`
}

// messagesRequest is the wire form of POST /v1/messages. Unknown fields are ignored.
type messagesRequest struct {
	conversation
	MaxTokens     *int      `json:"max_tokens"`
	Temperature   *float64  `json:"temperature"`
	TopP          *float64  `json:"top_p"`
	TopK          *int      `json:"top_k"`
	StopSequences []string  `json:"stop_sequences"`
	Metadata      *metadata `json:"metadata"`
	Stream        bool      `json:"stream"`
	// KeepAlive is how long the model stays loaded afterwards, in Ollama's syntax (an extension).
	KeepAlive json.RawMessage `json:"keep_alive"`
	// IgnoreEOS generates past the model's end-of-generation token, up to max_tokens (an
	// extension, as llama.cpp's and the OpenAI routes' ignore_eos).
	IgnoreEOS bool `json:"ignore_eos"`
	// Seed makes sampling reproducible (an extension, as the OpenAI routes' seed); 0 is unseeded.
	Seed *int64 `json:"seed"`
	// Speculative is a mode ("off", "ngram", "draft") or {"mode", "draft_tokens"} (an
	// extension, as on the OpenAI routes).
	Speculative json.RawMessage `json:"speculative"`
	// Lora picks LoRA adapters for this request: [{"id", "scale"}] (an extension, as on the
	// OpenAI routes; [] is none).
	Lora json.RawMessage `json:"lora"`
}

// outputConfig is `output_config`: {"effort": "low"|"medium"|"high"|"xhigh"|"max", "format":
// {"type": "json_schema", "schema": {...}}}.
type outputConfig struct {
	Effort *string         `json:"effort"`
	Format json.RawMessage `json:"format"`
}

// contextManagement is `context_management`: {"edits": [{"type": ..., ...}]}; edits are
// decoded one by one so that errors and warnings name the edit.
type contextManagement struct {
	Edits []json.RawMessage `json:"edits"`
}

// metadata is accepted and not used (there are no per-user limits yet).
type metadata struct {
	UserID *string `json:"user_id"`
}

// thinking is the `thinking` config: {"type": "enabled", "budget_tokens": n}, {"type":
// "adaptive"}, {"type": "disabled"}; display "omitted" serves thinking blocks without their text.
type thinking struct {
	Type         string `json:"type"`
	BudgetTokens *int   `json:"budget_tokens"`
	Display      string `json:"display"`
}

// toolChoice is `tool_choice`: {"type": "auto"|"any"|"tool"|"none", "name",
// "disable_parallel_tool_use"}.
type toolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
}

// tool is one entry of `tools`. Fields this server has no use for (cache_control,
// defer_loading, eager_input_streaming, strict, input_examples) are accepted and ignored.
type tool struct {
	// Type is absent or "custom" for a client tool; anything else names a typed tool
	// (web_search_..., bash_..., text_editor_..., mcp_toolset), which this server does not run
	// (see toTools).
	Type        string          `json:"type"`
	Name        *string         `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	// DeferLoading keeps the tool out of the prompt until a tool_reference block (a tool
	// search result) names it, as Anthropic loads deferred tools.
	DeferLoading bool `json:"defer_loading"`
}

type message struct {
	Role string `json:"role"`
	// Content is a string or an array of content blocks; decoded block by block so that
	// errors can name the block at fault.
	Content json.RawMessage `json:"content"`
}

// block is one content block of a message, as far as this server reads it.
type block struct {
	Type string  `json:"type"`
	Text *string `json:"text"`
	// tool_use
	ID    *string         `json:"id"`
	Name  *string         `json:"name"`
	Input json.RawMessage `json:"input"`
	// tool_result
	ToolUseID *string         `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	// thinking; a block sent without its text (display "omitted") gets it back from a
	// signature this server made (unsign)
	Thinking  *string `json:"thinking"`
	Signature string  `json:"signature"`
	// tool_reference (in a tool_result: a deferred tool the client's tool search loaded)
	ToolName *string `json:"tool_name"`
	// image: its source (base64 or url)
	Source json.RawMessage `json:"source"`
}

// reply is a Message object: the non-streaming response and message_start's message.
type reply struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Role string `json:"role"`
	// Model is the model's id.
	Model string `json:"model"`
	// Content holds textBlock, thinkingBlock and toolUseBlock values, in reply order.
	Content      []any   `json:"content"`
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
	Usage        usage   `json:"usage"`
	// Superfluid carries what the server noticed about the reply (an extension).
	Superfluid *replyExtra `json:"superfluid,omitempty"`
}

// replyExtra is the `superfluid` extension object of a reply and of message_delta.
type replyExtra struct {
	// Warnings: e.g. text that looks like a tool call but does not parse, served as text.
	Warnings []string `json:"warnings,omitempty"`
	// Spec is what speculative decoding drafted and kept; only when it ran.
	Spec *core.SpecReport `json:"spec,omitempty"`
}

type textBlock struct {
	Type string `json:"type"` // text
	Text string `json:"text"`
}

type thinkingBlock struct {
	Type      string `json:"type"` // thinking
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

type toolUseBlock struct {
	Type  string          `json:"type"` // tool_use
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"` // the arguments object
}

// usage counts input the Anthropic way: InputTokens excludes the prompt prefix served from the
// cache, which CacheReadInputTokens counts; nothing is ever written to a cache on request.
type usage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

// Stream events, in the order they are sent.
type (
	messageStart struct {
		Type    string `json:"type"` // message_start
		Message reply  `json:"message"`
	}
	blockStart struct {
		Type  string `json:"type"` // content_block_start
		Index int    `json:"index"`
		// ContentBlock is an empty textBlock, thinkingBlock or toolUseBlock (input {}).
		ContentBlock any `json:"content_block"`
	}
	ping struct {
		Type string `json:"type"` // ping
	}
	blockDelta struct {
		Type  string `json:"type"` // content_block_delta
		Index int    `json:"index"`
		// Delta is a textDelta, thinkingDelta, signatureDelta or inputJSONDelta.
		Delta any `json:"delta"`
	}
	textDelta struct {
		Type string `json:"type"` // text_delta
		Text string `json:"text"`
	}
	thinkingDelta struct {
		Type     string `json:"type"` // thinking_delta
		Thinking string `json:"thinking"`
	}
	signatureDelta struct {
		Type      string `json:"type"` // signature_delta
		Signature string `json:"signature"`
	}
	inputJSONDelta struct {
		Type        string `json:"type"` // input_json_delta
		PartialJSON string `json:"partial_json"`
	}
	blockStop struct {
		Type  string `json:"type"` // content_block_stop
		Index int    `json:"index"`
	}
	messageDelta struct {
		Type  string    `json:"type"` // message_delta
		Delta stopDelta `json:"delta"`
		// Usage is cumulative for the whole message.
		Usage      usage       `json:"usage"`
		Superfluid *replyExtra `json:"superfluid,omitempty"`
	}
	stopDelta struct {
		StopReason   *string `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	}
	messageStop struct {
		Type string `json:"type"` // message_stop
	}
)

// tokenCount is the reply of POST /v1/messages/count_tokens.
type tokenCount struct {
	InputTokens int `json:"input_tokens"`
}
