package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// systemText reads system: absent, null, a string, or an array of text blocks.
func systemText(raw json.RawMessage) (string, error) {
	if !isSet(raw) {
		return "", nil
	}
	return blocksText("system", raw)
}

// unsupportedBlocks are the content blocks Anthropic defines that this server cannot take yet.
var unsupportedBlocks = map[string]string{
	"document":           "document input is not served",
	"server_tool_use":    "server tools are not served",
	"search_result":      "search results are not served",
	"container_upload":   "containers are not served",
	"web_search_result":  "server tools are not served",
	"mcp_tool_use":       "MCP tools are not served",
	"mcp_tool_result":    "MCP tools are not served",
	"code_execution_use": "server tools are not served",
}

// unsupported is the error for a block type that cannot appear where it was sent.
func unsupported(path, typ string) error {
	switch why, known := unsupportedBlocks[typ]; {
	case typ == "":
		return invalid("%s.type: Field required", path)
	case typ == "image":
		return invalid("%s: image blocks go in user messages; move the image there", path)
	case known:
		return invalid("%s: %s content blocks are not supported by this server yet (%s); send text blocks only", path, typ, why)
	case typ == "text", typ == "tool_use", typ == "tool_result", typ == "thinking", typ == "redacted_thinking":
		return invalid("%s: %s blocks cannot appear here; send text blocks only", path, typ)
	default:
		return invalid("%s.type: unknown content block type %q; use text", path, typ)
	}
}

// contentBlocks reads content at path: a string or null (returned as text, with nil blocks) or
// an array of content blocks, each checked for the fields its type needs to be read.
func contentBlocks(path string, raw json.RawMessage) ([]block, string, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0:
		return nil, "", invalid("%s: Field required", path)
	case bytes.Equal(raw, []byte("null")):
		return nil, "", nil
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, "", decodeError(err)
		}
		return nil, s, nil
	case raw[0] != '[':
		return nil, "", invalid("%s: Input should be a valid string or a list of content blocks, got %s", path, kind(raw))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, "", decodeError(err)
	}
	blocks := make([]block, len(items))
	for j, item := range items {
		b := &blocks[j]
		if kind(item) != "an object" {
			return nil, "", invalid("%s.%d: Input should be a content block object like {\"type\":\"text\",\"text\":\"...\"}, got %s", path, j, kind(item))
		}
		if err := json.Unmarshal(item, b); err != nil {
			var typeErr *json.UnmarshalTypeError
			if errors.As(err, &typeErr) && typeErr.Field != "" {
				return nil, "", invalid("%s.%d.%s: Input should be %s", path, j, typeErr.Field, friendlyType(typeErr.Type.String()))
			}
			return nil, "", decodeError(err)
		}
		switch {
		case b.Type == "":
			return nil, "", invalid("%s.%d.type: Field required", path, j)
		case b.Type == "text" && b.Text == nil:
			return nil, "", invalid("%s.%d.text: Field required", path, j)
		}
	}
	return blocks, "", nil
}

// blocksText reads content at path (a string, null, or an array of text blocks) as the text
// of its text blocks, in order and joined without a separator (as the OpenAI dialect joins text
// parts, so that one conversation renders to one prompt whichever dialect carries it).
func blocksText(path string, raw json.RawMessage) (string, error) {
	blocks, text, err := contentBlocks(path, raw)
	if err != nil || blocks == nil {
		return text, err
	}
	var sb strings.Builder
	for j, b := range blocks {
		if b.Type != "text" {
			return "", unsupported(fmt.Sprintf("%s.%d", path, j), b.Type)
		}
		sb.WriteString(*b.Text)
	}
	return sb.String(), nil
}
