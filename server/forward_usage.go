package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/superfluid/superfluid/runtime/llm"
)

// maxTappedBody bounds how much of a relayed JSON reply usageTap keeps to read its usage.
const maxTappedBody = 4 << 20

// usageTap passes a relayed reply through to the client and reads the token counts it
// carries, for the request's record: a JSON body's "usage" object, or in an event stream the
// last event whose data has one (a chat stream's final chunk). Unwrap lets
// http.ResponseController flush the connection under it.
type usageTap struct {
	http.ResponseWriter
	stream bool // the reply is an event stream; decided at the first write
	began  bool
	body   bytes.Buffer // a JSON reply so far, or an event stream's unfinished line
	over   bool         // the JSON reply outgrew maxTappedBody: its usage is not read
	usage  llm.Usage
	found  bool
}

func (t *usageTap) Unwrap() http.ResponseWriter { return t.ResponseWriter }

func (t *usageTap) Write(p []byte) (int, error) {
	if !t.began {
		t.began = true
		t.stream = strings.HasPrefix(t.Header().Get("Content-Type"), "text/event-stream")
	}
	switch {
	case t.stream:
		t.body.Write(p)
		for {
			line, err := t.body.ReadBytes('\n')
			if err != nil { // no full line yet: keep the part for the next write
				rest := append([]byte(nil), line...)
				t.body.Reset()
				t.body.Write(rest)
				break
			}
			if data, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data:")); ok {
				t.read(bytes.TrimSpace(data))
			}
		}
	case !t.over && t.body.Len()+len(p) <= maxTappedBody:
		t.body.Write(p)
	default:
		t.over = true
		t.body.Reset()
	}
	return t.ResponseWriter.Write(p)
}

// Usage is the token counts the reply carried, and whether it carried any.
func (t *usageTap) Usage() (llm.Usage, bool) {
	if !t.stream && !t.over {
		t.read(t.body.Bytes())
	}
	return t.usage, t.found
}

// tokenCounts is a reply's usage object in the shapes the servers a lane forwards to send:
// chat and completions' prompt_tokens and completion_tokens, the Responses API's (and
// Anthropic's) input_tokens and output_tokens, or only total_tokens (vLLM's rerank and score).
type tokenCounts struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	InputTokens         int `json:"input_tokens"`
	OutputTokens        int `json:"output_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	InputTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
}

// read takes the usage of one JSON object, when it has one: its "usage", or its response's
// (a Responses stream's response.completed event).
func (t *usageTap) read(b []byte) {
	if !bytes.Contains(b, []byte(`"usage"`)) {
		return
	}
	var v struct {
		Usage    *tokenCounts `json:"usage"`
		Response *struct {
			Usage *tokenCounts `json:"usage"`
		} `json:"response"`
	}
	if json.Unmarshal(b, &v) != nil {
		return
	}
	u := v.Usage
	if u == nil && v.Response != nil {
		u = v.Response.Usage
	}
	if u == nil {
		return
	}
	t.usage = llm.Usage{PromptTokens: u.PromptTokens + u.InputTokens, CompletionTokens: u.CompletionTokens + u.OutputTokens}
	if t.usage.PromptTokens+t.usage.CompletionTokens == 0 {
		t.usage.PromptTokens = u.TotalTokens // all of it input (rerank, score)
	}
	switch {
	case u.PromptTokensDetails != nil:
		t.usage.CachedTokens = u.PromptTokensDetails.CachedTokens
	case u.InputTokensDetails != nil:
		t.usage.CachedTokens = u.InputTokensDetails.CachedTokens
	}
	t.found = true
}
