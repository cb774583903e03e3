package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Input items: messages, and the items a tool loop sends back (the function calls the model
// made, their outputs, the reasoning that led to them). parseInput validates them and gives
// each an id; itemMessages turns a whole conversation of items into chat messages.

var itemRoles = map[string]bool{"user": true, "assistant": true, "system": true, "developer": true}

// unsupportedInput is a 400 for input a text-only model cannot take (yet).
func unsupportedInput(param, msg string) *Error {
	return &Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "unsupported_input", Param: param, Message: msg}
}

// parseInput reads input: a string is one user message; an array holds input items. Items
// get ids when they have none ("msg_", "fc_", "fco_", "rs_").
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
		return []item{{ID: newID("msg_"), Type: itemMessage, Status: "completed", Role: "user",
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
		param := fmt.Sprintf("input[%d]", i)
		it, err := parseItem(param, e)
		if err != nil {
			return nil, err
		}
		it.param = param
		items = append(items, it)
	}
	return items, nil
}

// wireItem holds the fields of every input item type this server reads.
type wireItem struct {
	Type    *string         `json:"type"`
	ID      *string         `json:"id"`
	Role    *string         `json:"role"`
	Content json.RawMessage `json:"content"`
	Status  *string         `json:"status"`
	// function_call and function_call_output
	CallID    *string         `json:"call_id"`
	Name      *string         `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Output    json.RawMessage `json:"output"`
	// Namespace: a function_call's or custom_tool_call's namespace tool.
	Namespace *string `json:"namespace"`
	// custom_tool_call
	Input *string `json:"input"`
	// reasoning
	Summary          json.RawMessage `json:"summary"`
	EncryptedContent *string         `json:"encrypted_content"`
}

func parseItem(param string, raw json.RawMessage) (item, error) {
	var w wireItem
	if b := bytes.TrimSpace(raw); len(b) == 0 || b[0] != '{' {
		return item{}, invalid(param, fmt.Sprintf("invalid type for '%s': expected an input item object, got %s", param, jsonKind(b)))
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return item{}, invalid(param, fmt.Sprintf("invalid input item '%s': type, id, role, call_id, name and status must be strings", param))
	}
	typ := itemMessage
	if w.Type != nil {
		typ = *w.Type
	}
	switch typ {
	case itemMessage:
		return parseMessageItem(param, &w)
	case itemCall:
		return parseCallItem(param, &w)
	case itemCallOutput, itemCustomCallOutput:
		return parseCallOutputItem(param, typ, &w)
	case itemCustomCall:
		return parseCustomCallItem(param, &w)
	case itemReasoning:
		return parseReasoningItem(param, &w)
	case "item_reference":
		return item{}, unsupportedInput(param+".type", fmt.Sprintf(
			"%s is an item_reference; this server does not look items up by id: send the item itself, or continue with previous_response_id", param))
	default:
		return item{}, unsupportedInput(param+".type", fmt.Sprintf(
			"%s is a %q item; this server takes message, function_call, function_call_output, custom_tool_call, custom_tool_call_output and reasoning items", param, typ))
	}
}

// idOr is the client's id for an item, or a new one.
func idOr(id *string, prefix string) string {
	if id != nil && *id != "" {
		return *id
	}
	return newID(prefix)
}

func parseMessageItem(param string, w *wireItem) (item, error) {
	if w.Role == nil || !itemRoles[*w.Role] {
		got := "nothing"
		if w.Role != nil {
			got = fmt.Sprintf("%q", *w.Role)
		}
		return item{}, invalid(param+".role", fmt.Sprintf("%s.role is %s; use one of user, assistant, system, developer", param, got))
	}
	it := item{ID: idOr(w.ID, "msg_"), Type: itemMessage, Status: "completed", Role: *w.Role}
	var err error
	it.Content, err = parseContent(param+".content", it.Role, w.Content)
	return it, err
}

// parseCallItem reads a function call the model made, sent back as history. Its arguments
// are a JSON string holding an object, as the model's reply had them.
func parseCallItem(param string, w *wireItem) (item, error) {
	if w.CallID == nil || *w.CallID == "" {
		return item{}, invalid(param+".call_id", fmt.Sprintf("%s is a function_call without a call_id; send the call_id the response gave it", param))
	}
	if w.Name == nil || *w.Name == "" {
		return item{}, invalid(param+".name", fmt.Sprintf("%s is a function_call without a name; send the name of the function that was called", param))
	}
	var args string
	if err := json.Unmarshal(w.Arguments, &args); len(w.Arguments) == 0 || err != nil {
		return item{}, invalid(param+".arguments", fmt.Sprintf("%s.arguments must be a string holding a JSON object, e.g. \"{\\\"city\\\": \\\"Oslo\\\"}\"", param))
	}
	if _, ok := historyArguments(args); !ok {
		return item{}, invalid(param+".arguments", fmt.Sprintf("%s.arguments is not a JSON object: %.80q; send the arguments as the response gave them", param, args))
	}
	status := "completed"
	if w.Status != nil && *w.Status != "" {
		status = *w.Status
	}
	return item{ID: idOr(w.ID, "fc_"), Type: itemCall, Status: status, CallID: *w.CallID, Name: *w.Name, Arguments: args,
		Namespace: deref(w.Namespace)}, nil
}

// parseCustomCallItem reads a custom tool call the model made, sent back as history.
func parseCustomCallItem(param string, w *wireItem) (item, error) {
	if w.CallID == nil || *w.CallID == "" {
		return item{}, invalid(param+".call_id", fmt.Sprintf("%s is a custom_tool_call without a call_id; send the call_id the response gave it", param))
	}
	if w.Name == nil || *w.Name == "" {
		return item{}, invalid(param+".name", fmt.Sprintf("%s is a custom_tool_call without a name; send the name of the tool that was called", param))
	}
	if w.Input == nil {
		return item{}, invalid(param+".input", fmt.Sprintf("%s is a custom_tool_call without input; send the input string the response gave it", param))
	}
	return item{ID: idOr(w.ID, "ctc_"), Type: itemCustomCall, Status: deref(w.Status), CallID: *w.CallID, Name: *w.Name, Input: *w.Input,
		Namespace: deref(w.Namespace)}, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// parseCallOutputItem reads what a function or custom tool returned: a string, or input_text parts.
func parseCallOutputItem(param, typ string, w *wireItem) (item, error) {
	if w.CallID == nil || *w.CallID == "" {
		return item{}, invalid(param+".call_id", fmt.Sprintf("%s is a %s without a call_id; send the call_id of the call it answers", param, typ))
	}
	out := bytes.TrimSpace(w.Output)
	if len(out) == 0 || bytes.Equal(out, []byte("null")) {
		return item{}, invalid(param+".output", fmt.Sprintf("%s.output is missing; send the function's result as a string", param))
	}
	if out[0] == '[' {
		if _, err := parseContent(param+".output", "tool", out); err != nil {
			return item{}, err
		}
	} else if out[0] != '"' {
		return item{}, invalid(param+".output", fmt.Sprintf("invalid type for '%s.output': expected a string or an array of input_text parts, got %s", param, jsonKind(out)))
	}
	prefix := "fco_"
	if typ == itemCustomCallOutput {
		prefix = "ctco_"
	}
	return item{ID: idOr(w.ID, prefix), Type: typ, Status: "completed", CallID: *w.CallID, Output: json.RawMessage(out)}, nil
}

// parseReasoningItem reads reasoning sent back as history: its reasoning_text content, its
// encrypted_content (a blob this server wrote), or its summary.
func parseReasoningItem(param string, w *wireItem) (item, error) {
	it := item{ID: idOr(w.ID, "rs_"), Type: itemReasoning}
	// A blob another server made (OpenAI's, from a conversation that moved here) cannot be
	// read: it is left out, as the Anthropic dialect leaves out a foreign thinking signature,
	// so the conversation goes on without that reasoning. One of ours that fails its check is
	// a 400.
	if w.EncryptedContent != nil && *w.EncryptedContent != "" && strings.HasPrefix(*w.EncryptedContent, blobPrefix) {
		if _, err := openReasoning(param+".encrypted_content", *w.EncryptedContent); err != nil {
			return item{}, err
		}
		it.EncryptedContent = *w.EncryptedContent
	}
	for _, f := range []struct {
		name, typ string
		raw       json.RawMessage
		dst       *[]part
	}{{"content", "reasoning_text", w.Content, &it.Content}, {"summary", "summary_text", w.Summary, &it.Summary}} {
		if len(f.raw) == 0 || string(f.raw) == "null" {
			continue
		}
		var parts []struct {
			Type string  `json:"type"`
			Text *string `json:"text"`
		}
		if err := json.Unmarshal(f.raw, &parts); err != nil {
			return item{}, invalid(param+"."+f.name, fmt.Sprintf("invalid type for '%s.%s': expected an array of {type: %q, text} parts", param, f.name, f.typ))
		}
		for j, p := range parts {
			if f.name == "content" && p.Type == "text" {
				p.Type = f.typ // the Codex CLI's name for reasoning content
			}
			if p.Type != f.typ || p.Text == nil {
				pp := fmt.Sprintf("%s.%s[%d]", param, f.name, j)
				return item{}, invalid(pp, fmt.Sprintf("%s must be {\"type\": %q, \"text\": ...}", pp, f.typ))
			}
			*f.dst = append(*f.dst, part{Type: f.typ, Text: *p.Text})
		}
	}
	return it, nil
}

// parseContent reads a message's content: a string, or an array of parts: input_text or
// output_text, and in user messages and function outputs input_image and input_audio (checked
// here, decoded by the core). input_file parts are refused with unsupported_input. A
// function's output (role "tool") reads the same way.
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
		Type       string          `json:"type"`
		Text       *string         `json:"text"`
		ImageURL   json.RawMessage `json:"image_url"`
		FileID     *string         `json:"file_id"`
		Detail     *string         `json:"detail"`
		InputAudio json.RawMessage `json:"input_audio"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, invalid(param, fmt.Sprintf("invalid type for '%s': expected an array of {type, text} parts", param))
	}
	out := make([]part, 0, len(parts))
	for j, p := range parts {
		pp := fmt.Sprintf("%s[%d]", param, j)
		media := p.Type == "input_image" || p.Type == "input_audio"
		if media && role != "user" && role != "tool" {
			return nil, invalid(pp, fmt.Sprintf("%s is an %s part in a %s message; images and audio go in user messages", pp, p.Type, role))
		}
		switch p.Type {
		case "input_text", "output_text":
			if p.Text == nil {
				return nil, invalid(pp+".text", fmt.Sprintf("%s is a %s part without text", pp, p.Type))
			}
			out = append(out, part{Type: p.Type, Text: *p.Text})
		case "input_image":
			url, err := responseImageURL(pp, p.ImageURL, p.FileID)
			if err != nil {
				return nil, err
			}
			out = append(out, part{Type: p.Type, ImageURL: url, Detail: deref(p.Detail)})
		case "input_audio":
			if _, err := audioPart(pp, p.InputAudio, 0); err != nil {
				return nil, err
			}
			var a inputAudio
			_ = json.Unmarshal(p.InputAudio, &a) // audioPart read it
			out = append(out, part{Type: p.Type, InputAudio: &a})
		case "input_file":
			return nil, unsupportedInput(pp, fmt.Sprintf("%s is an input_file part; this server takes input_text, input_image and input_audio parts", pp))
		default:
			return nil, invalid(pp+".type", fmt.Sprintf("%s.type is %q; use input_text, input_image or input_audio (or output_text in assistant messages)", pp, p.Type))
		}
	}
	return out, nil
}

// responseImageURL reads an input_image's image_url: a string (a data URL or an http(s) URL),
// or {"url": ...} as chat completions spell it. Images by file_id are not served.
func responseImageURL(param string, raw json.RawMessage, fileID *string) (string, error) {
	raw = bytes.TrimSpace(raw)
	var url string
	switch {
	case (len(raw) == 0 || bytes.Equal(raw, []byte("null"))) && fileID != nil:
		return "", unsupportedInput(param+".file_id", fmt.Sprintf("%s names an image by file_id, which this server does not serve; send image_url with a data URL (data:image/png;base64,...)", param))
	case len(raw) > 0 && raw[0] == '{':
		var obj struct {
			URL string `json:"url"`
		}
		if json.Unmarshal(raw, &obj) != nil {
			return "", invalid(param+".image_url", fmt.Sprintf("%s.image_url must be a string: a data URL or an http(s) URL", param))
		}
		url = obj.URL
	case len(raw) > 0 && raw[0] == '"':
		_ = json.Unmarshal(raw, &url)
	case len(raw) > 0 && !bytes.Equal(raw, []byte("null")):
		return "", invalid(param+".image_url", fmt.Sprintf("%s.image_url must be a string: a data URL or an http(s) URL", param))
	}
	mp, err := imageURLPart(param, param+".image_url", url, 0)
	return mp.URL, err
}
