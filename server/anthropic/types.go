package anthropic

import (
	"encoding/json"
)

// conversation is what POST /v1/messages and /v1/messages/count_tokens share.
type conversation struct {
	Model *string `json:"model"`
	// System is a string or an array of text blocks.
	System   json.RawMessage `json:"system"`
	Messages []message       `json:"messages"`

	// Accepted by Anthropic but not served yet: refused with a clear 400 rather than ignored.
	Tools    json.RawMessage `json:"tools"`
	Thinking *thinking       `json:"thinking"`
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
	// OutputConfig's effort is accepted and not used; its format (structured output) is refused.
	OutputConfig *outputConfig `json:"output_config"`
	// KeepAlive is how long the model stays loaded afterwards, in Ollama's syntax (an extension).
	KeepAlive json.RawMessage `json:"keep_alive"`
	// IgnoreEOS generates past the model's end-of-generation token, up to max_tokens (an
	// extension, as llama.cpp's and the OpenAI routes' ignore_eos).
	IgnoreEOS bool `json:"ignore_eos"`
}

type outputConfig struct {
	Format json.RawMessage `json:"format"`
}

// metadata is accepted and not used (there are no per-user limits yet).
type metadata struct {
	UserID *string `json:"user_id"`
}

type thinking struct {
	Type string `json:"type"`
}

type message struct {
	Role string `json:"role"`
	// Content is a string or an array of content blocks; decoded by blocksText so that errors
	// can name the block at fault.
	Content json.RawMessage `json:"content"`
}

// block is one content block as far as this server reads it.
type block struct {
	Type string  `json:"type"`
	Text *string `json:"text"`
}

// reply is a Message object: the non-streaming response and message_start's message.
type reply struct {
	ID           string      `json:"id"`
	Type         string      `json:"type"`
	Role         string      `json:"role"`
	Model        string      `json:"model"`
	Content      []textBlock `json:"content"`
	StopReason   *string     `json:"stop_reason"`
	StopSequence *string     `json:"stop_sequence"`
	Usage        usage       `json:"usage"`
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
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
		Type         string    `json:"type"` // content_block_start
		Index        int       `json:"index"`
		ContentBlock textBlock `json:"content_block"`
	}
	ping struct {
		Type string `json:"type"` // ping
	}
	blockDelta struct {
		Type  string    `json:"type"` // content_block_delta
		Index int       `json:"index"`
		Delta textDelta `json:"delta"`
	}
	textDelta struct {
		Type string `json:"type"` // text_delta
		Text string `json:"text"`
	}
	blockStop struct {
		Type  string `json:"type"` // content_block_stop
		Index int    `json:"index"`
	}
	messageDelta struct {
		Type  string    `json:"type"` // message_delta
		Delta stopDelta `json:"delta"`
		// Usage is cumulative for the whole message.
		Usage usage `json:"usage"`
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
