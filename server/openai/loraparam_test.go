package openai_test

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
)

// TestLoraParam: chat, completions and responses take the lora extension into the request's
// adapters, resolved by the core to the loaded adapters' files (scale 1 when absent; [] is an
// empty, non-nil list; absent is nil, the model's active ones, none here); a bad one is a 400
// naming lora.
func TestLoraParam(t *testing.T) {
	files := servertest.WriteLoRAFiles(t, "pirate", "poet")
	f := setup(t, config{model: func(m *core.Model) { m.Path = files.Model }})
	files.Load(t, f.srv.URL, "fake")
	pirate, poet := files.Adapters["pirate"], files.Adapters["poet"]
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
			{`"lora":[{"id":"pirate","scale":0.5},{"id":"poet"}]`, []llm.AdapterRef{{ID: "pirate", Path: pirate, Scale: 0.5}, {ID: "poet", Path: poet, Scale: 1}}},
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

// TestLoraParamResolved: a lora naming an adapter the model does not have, or one at a scale
// out of range, is a 400 naming lora and the adapter, in every OpenAI route.
func TestLoraParamResolved(t *testing.T) {
	files := servertest.WriteLoRAFiles(t, "pirate")
	f := setup(t, config{model: func(m *core.Model) { m.Path = files.Model }})
	files.Load(t, f.srv.URL, "fake")
	bodies := map[string]func(lora string) string{
		"/v1/chat/completions": func(lora string) string { return chatBody(`"lora":` + lora) },
		"/v1/completions":      func(lora string) string { return `{"model":"fake","prompt":"Once","lora":` + lora + `}` },
		"/v1/responses":        func(lora string) string { return `{"model":"fake","input":"hi","lora":` + lora + `}` },
	}
	for path, body := range bodies {
		resp, b := f.do(t, http.MethodPost, path, body(`[{"id":"pirate"},{"id":"ghost"}]`))
		checkError(t, resp, b, wantError{400, invalidReq, "lora", "", `has no adapter "ghost"`})
		resp, b = f.do(t, http.MethodPost, path, body(`[{"id":"pirate","scale":1000}]`))
		checkError(t, resp, b, wantError{400, invalidReq, "lora", "", "from -100 to 100"})
	}
}
