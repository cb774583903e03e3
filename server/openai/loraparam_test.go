package openai_test

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
)

// TestLoraParam: chat, completions and responses take the lora extension into the request's
// adapters (scale 1 when absent; [] is an empty, non-nil list; absent is nil); a bad one is a
// 400 naming lora.
func TestLoraParam(t *testing.T) {
	f := setup(t, config{})
	bodies := map[string]func(extra string) string{
		"/v1/chat/completions": chatBody,
		"/v1/completions": func(extra string) string {
			return `{"model":"fake","prompt":"Once",` + extra + `}`
		},
		"/v1/responses": func(extra string) string {
			return `{"model":"fake","input":"hi",` + extra + `}`
		},
	}
	for path, body := range bodies {
		for _, tt := range []struct {
			extra string
			want  []llm.AdapterRef
		}{
			{`"lora":[{"id":"pirate","scale":0.5},{"id":"poet"}]`, []llm.AdapterRef{{ID: "pirate", Scale: 0.5}, {ID: "poet", Scale: 1}}},
			{`"lora":[]`, []llm.AdapterRef{}},
			{`"lora":null`, nil},
		} {
			resp, b := f.do(t, http.MethodPost, path, body(tt.extra))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s %s: %d %s", path, tt.extra, resp.StatusCode, b)
			}
			got, _ := f.eng.LastRequest()
			if !reflect.DeepEqual(got.Adapters, tt.want) || (got.Adapters == nil) != (tt.want == nil) {
				t.Errorf("%s %s: adapters %#v, want %#v", path, tt.extra, got.Adapters, tt.want)
			}
		}
		for _, tt := range []struct{ extra, msg string }{
			{`"lora":{"id":"pirate"}`, "lora must be an array"},
			{`"lora":[{"scale":1}]`, "lora[0].id must be a non-empty string"},
			{`"lora":[{"id":"pirate","scale":"NaN"}]`, "lora[0].scale must be a number"},
		} {
			resp, b := f.do(t, http.MethodPost, path, body(tt.extra))
			checkError(t, resp, b, wantError{400, "invalid_request_error", "lora", "", tt.msg})
		}
	}
}
