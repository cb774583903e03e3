package server

import (
	"net/http/httptest"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

// TestUsageTapShapes: a forwarded reply's tokens are read in every shape the servers a lane
// forwards to send, so a forwarded route (team mode's POST /v1/*) is recorded and charged to
// the key's meter and quotas: chat's, the Responses API's input_tokens/output_tokens (a JSON
// reply, and a stream's response.completed event), and rerank's total_tokens alone.
func TestUsageTapShapes(t *testing.T) {
	for _, c := range []struct {
		name, contentType, body string
		want                    llm.Usage
	}{
		{"chat", "application/json", `{"usage": {"prompt_tokens": 7, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 4}}}`,
			llm.Usage{PromptTokens: 7, CompletionTokens: 3, CachedTokens: 4}},
		{"responses", "application/json", `{"object": "response", "usage": {"input_tokens": 11, "output_tokens": 5, "input_tokens_details": {"cached_tokens": 2}, "total_tokens": 16}}`,
			llm.Usage{PromptTokens: 11, CompletionTokens: 5, CachedTokens: 2}},
		{"responses stream", "text/event-stream", "event: response.created\ndata: {\"type\": \"response.created\", \"response\": {\"usage\": null}}\n\n" +
			"event: response.completed\ndata: {\"type\": \"response.completed\", \"response\": {\"usage\": {\"input_tokens\": 9, \"output_tokens\": 6}}}\n\n",
			llm.Usage{PromptTokens: 9, CompletionTokens: 6}},
		{"rerank", "application/json", `{"results": [], "usage": {"total_tokens": 21}}`, llm.Usage{PromptTokens: 21}},
	} {
		rec := httptest.NewRecorder()
		tap := &usageTap{ResponseWriter: rec}
		tap.Header().Set("Content-Type", c.contentType)
		if _, err := tap.Write([]byte(c.body)); err != nil {
			t.Fatal(err)
		}
		if got, ok := tap.Usage(); !ok || got != c.want {
			t.Errorf("%s: usage %+v (found %v), want %+v", c.name, got, ok, c.want)
		}
	}
}
