package app

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// weatherParams is get_weather's parameters schema as the dialects take it.
const weatherParams = `{"type":"object","properties":{"city":{"type":"string","maxLength":12}},"required":["city"]}`

// TestForcedCallCutEndToEnd: on the real engine, a call forced by tool_choice and cut at 10
// tokens comes back as a tool call with the finish reason of a cut reply, in every dialect;
// never as text.
func TestForcedCallCutEndToEnd(t *testing.T) {
	_, srv := startServer(t, toolConfig(t), true)
	model := modelID(testModel)
	user := `"messages":[{"role":"user","content":"What is the weather in Oslo?"}]`
	t.Run("chat completions", func(t *testing.T) {
		var r struct {
			Choices []struct {
				FinishReason string `json:"finish_reason"`
				Message      struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				} `json:"message"`
			} `json:"choices"`
		}
		postJSON(t, srv.URL+"/v1/chat/completions", `{"model":"`+model+`","max_tokens":10,"temperature":0,`+user+
			`,"tools":[{"type":"function","function":{"name":"get_weather","parameters":`+weatherParams+`}}],"tool_choice":{"type":"function","function":{"name":"get_weather"}}}`, http.StatusOK, &r)
		c := r.Choices[0]
		if c.FinishReason != "length" || len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].Function.Name != "get_weather" || c.Message.Content != nil && *c.Message.Content != "" {
			t.Fatalf("reply %+v, want one cut call to get_weather, finish length, no content", c)
		}
		t.Logf("arguments %q", c.Message.ToolCalls[0].Function.Arguments)
	})
	t.Run("messages", func(t *testing.T) {
		var r struct {
			StopReason string `json:"stop_reason"`
			Content    []struct {
				Type, Name string
				Input      json.RawMessage
			} `json:"content"`
		}
		postJSON(t, srv.URL+"/v1/messages", `{"model":"`+model+`","max_tokens":10,"temperature":0,`+user+
			`,"tools":[{"name":"get_weather","input_schema":`+weatherParams+`}],"tool_choice":{"type":"tool","name":"get_weather"}}`, http.StatusOK, &r)
		if r.StopReason != "max_tokens" || len(r.Content) != 1 || r.Content[0].Type != "tool_use" || r.Content[0].Name != "get_weather" || !json.Valid(r.Content[0].Input) {
			t.Fatalf("reply %+v, want one tool_use block, stop max_tokens", r)
		}
	})
	t.Run("ollama chat", func(t *testing.T) {
		var r struct {
			DoneReason string `json:"done_reason"`
			Message    struct {
				Content   string
				ToolCalls []struct {
					Function struct {
						Name      string
						Arguments json.RawMessage
					}
				} `json:"tool_calls"`
			}
		}
		postJSON(t, srv.URL+"/api/chat", `{"model":"`+model+`","stream":false,"options":{"num_predict":10,"temperature":0,"tool_choice":"get_weather"},`+user+
			`,"tools":[{"type":"function","function":{"name":"get_weather","parameters":`+weatherParams+`}}]}`, http.StatusOK, &r)
		if r.DoneReason != "length" || len(r.Message.ToolCalls) != 1 || r.Message.ToolCalls[0].Function.Name != "get_weather" || r.Message.Content != "" {
			t.Fatalf("reply %+v, want one cut call, done_reason length", r)
		}
	})
	t.Run("responses", func(t *testing.T) {
		var r struct {
			Status            string
			IncompleteDetails *struct{ Reason string } `json:"incomplete_details"`
			Output            []struct {
				Type, Status, Name string
			}
		}
		postJSON(t, srv.URL+"/v1/responses", `{"model":"`+model+`","max_output_tokens":10,"temperature":0,"input":"What is the weather in Oslo?"`+
			`,"tools":[{"type":"function","name":"get_weather","parameters":`+weatherParams+`}],"tool_choice":{"type":"function","name":"get_weather"}}`, http.StatusOK, &r)
		if r.Status != "incomplete" || r.IncompleteDetails == nil || r.IncompleteDetails.Reason != "max_output_tokens" ||
			len(r.Output) != 1 || r.Output[0].Type != "function_call" || r.Output[0].Status != "incomplete" || r.Output[0].Name != "get_weather" {
			t.Fatalf("reply %+v, want one incomplete function_call", r)
		}
	})
	t.Run("messages streamed", func(t *testing.T) {
		resp, err := http.Post(srv.URL+"/v1/messages", "application/json", strings.NewReader(`{"model":"`+model+`","max_tokens":10,"stream":true,"temperature":0,`+user+
			`,"tools":[{"name":"get_weather","input_schema":`+weatherParams+`}],"tool_choice":{"type":"tool","name":"get_weather"}}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var events bytes.Buffer
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			events.WriteString(sc.Text() + "\n")
		}
		s := events.String()
		if !strings.Contains(s, `"type":"tool_use"`) || !strings.Contains(s, `"stop_reason":"max_tokens"`) || strings.Contains(s, `"text_delta"`) {
			t.Fatalf("stream %s, want a tool_use block, max_tokens, no text", s)
		}
	})
}

// TestUnexpressibleSchemaEndToEnd: a call forced to a tool whose schema the grammar cannot
// express (Claude Code's Workflow maxLength 524288, a backreference, an unknown format) compiles
// on the real engine and is served, with a warning for what nothing enforced; a json_schema
// response_format beside tool_choice required is served with the call.
func TestUnexpressibleSchemaEndToEnd(t *testing.T) {
	_, srv := startServer(t, toolConfig(t), true)
	model := modelID(testModel)
	params := `{"type":"object","properties":{"script":{"type":"string","maxLength":524288},"tag":{"type":"string","pattern":"^(a)\\1$"},` +
		`"color":{"type":"string","format":"x-color"}},"required":["script"]}`
	var r struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
			Message      struct {
				ToolCalls []struct {
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
		Superfluid struct{ Warnings []string } `json:"superfluid"`
	}
	postJSON(t, srv.URL+"/v1/chat/completions", `{"model":"`+model+`","max_tokens":60,"temperature":0,"messages":[{"role":"user","content":"Run ls"}]`+
		`,"tools":[{"type":"function","function":{"name":"Workflow","parameters":`+params+`}}],"tool_choice":{"type":"function","function":{"name":"Workflow"}}}`, http.StatusOK, &r)
	c := r.Choices[0]
	if len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].Function.Name != "Workflow" {
		t.Fatalf("reply %+v, want a call to Workflow", r)
	}
	w := strings.Join(r.Superfluid.Warnings, "; ")
	if !strings.Contains(w, "#/properties/tag/pattern") || !strings.Contains(w, "#/properties/color/format") {
		t.Errorf("warnings %q, want the pattern and the format named", w)
	}
	t.Logf("%s(%s), finish %s", c.Message.ToolCalls[0].Function.Name, c.Message.ToolCalls[0].Function.Arguments, c.FinishReason)

	var f struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
			Message      struct {
				ToolCalls []json.RawMessage `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	}
	postJSON(t, srv.URL+"/v1/chat/completions", `{"model":"`+model+`","max_tokens":60,"temperature":0,"messages":[{"role":"user","content":"Weather in Oslo?"}]`+
		`,"tools":[{"type":"function","function":{"name":"get_weather","parameters":`+weatherParams+`}}],"tool_choice":"required",`+
		`"response_format":{"type":"json_schema","json_schema":{"name":"answer","schema":{"type":"object","properties":{"summary":{"type":"string"}},"required":["summary"]}}}}`, http.StatusOK, &f)
	if len(f.Choices[0].Message.ToolCalls) == 0 {
		t.Errorf("response_format with tool_choice required: %+v, want a call", f)
	}
}

// TestResponseFormatWithToolsEndToEnd: on the real engine, the grammar of a json_schema format
// beside tool_choice auto (the format or a call) compiles, and the reply is one of the two.
func TestResponseFormatWithToolsEndToEnd(t *testing.T) {
	_, srv := startServer(t, toolConfig(t), true)
	var r struct {
		Choices []struct {
			Message struct {
				Content   *string           `json:"content"`
				ToolCalls []json.RawMessage `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	}
	postJSON(t, srv.URL+"/v1/chat/completions", `{"model":"`+modelID(testModel)+`","max_tokens":80,"temperature":0,"messages":[`+
		`{"role":"user","content":"Weather in Oslo?"},{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},`+
		`{"role":"tool","tool_call_id":"call_1","content":"sunny"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":`+weatherParams+`}}],`+
		`"response_format":{"type":"json_schema","json_schema":{"name":"answer","schema":{"type":"object","properties":{"summary":{"type":"string","maxLength":40}},"required":["summary"]}}}}`, http.StatusOK, &r)
	m := r.Choices[0].Message
	// The grammar's JSON either way: a call, the format's object, or (cut by the cap inside a
	// call's name, which no tool then completes) the start of a list of calls.
	if c := ""; len(m.ToolCalls) == 0 {
		if m.Content != nil {
			c = strings.TrimSpace(*m.Content)
		}
		if !strings.HasPrefix(c, "{") && !strings.HasPrefix(c, "[") {
			t.Errorf("reply %q, want the format's JSON or a call", c)
		}
	}
}
