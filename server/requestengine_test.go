package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/ollama/ollama/api"
	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/servertest"
)

// The request every dialect sends the echo engine: a system prompt, a question, the weather
// tool, a temperature, a token cap and (where the dialect has one) a stop sequence.
const (
	echoSystem   = "Be brief."
	echoQuestion = "Weather in Oslo?"
	echoTemp     = 0.25
	echoMax      = 77
	echoStop     = "END"
)

var echoParams = map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}

// echoReply is what a dialect served of the echo engine's reply, whatever its shape.
type echoReply struct {
	content            string
	callName, callArgs string
	finish             string
	prompt, completion int64
}

// TestRequestEngineDialects: a model served by a chat-level engine (core.RequestEngine) is
// reached by all three dialects over HTTP with the official clients, streamed and not. What
// each client sent arrives at the engine typed (messages, the tool, temperature, max tokens,
// stop) with no template rendered, and the engine's content, tool call and usage come back in
// each dialect's shape.
func TestRequestEngineDialects(t *testing.T) {
	echo := &servertest.Echo{}
	svc := core.New(core.Config{}, nil, servertest.EchoModel("echo", echo))
	srv := httptest.NewServer(server.New(server.Config{}, svc))
	t.Cleanup(srv.Close)
	oa := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithMaxRetries(0))
	an := anthropic.NewClient(anthropicoption.WithBaseURL(srv.URL), anthropicoption.WithAPIKey("unused"), anthropicoption.WithMaxRetries(0))
	u, _ := url.Parse(srv.URL)
	ol := api.NewClient(u, http.DefaultClient)

	tests := []struct {
		name   string
		stop   bool // the dialect sends a stop sequence
		finish string
		send   func(t *testing.T, stream bool) echoReply
	}{
		{"openai chat", true, "tool_calls", func(t *testing.T, stream bool) echoReply {
			return openaiChat(t, &oa, stream)
		}},
		{"openai responses", false, "completed", func(t *testing.T, stream bool) echoReply {
			return openaiResponses(t, &oa, stream)
		}},
		{"anthropic messages", true, "tool_use", func(t *testing.T, stream bool) echoReply {
			return anthropicMessages(t, &an, stream)
		}},
		{"ollama chat", true, "stop", func(t *testing.T, stream bool) echoReply {
			return ollamaChat(t, ol, stream)
		}},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			name := tt.name
			if stream {
				name += " streamed"
			}
			t.Run(name, func(t *testing.T) {
				before := len(echo.Chats())
				got := tt.send(t, stream)
				chats := echo.Chats()
				if len(chats) != before+1 {
					t.Fatalf("the engine got %d chat requests, want 1", len(chats)-before)
				}
				checkTyped(t, &chats[len(chats)-1], tt.stop)

				var echoed servertest.Echoed
				if err := json.Unmarshal([]byte(got.content), &echoed); err != nil {
					t.Fatalf("content %q is not the engine's echo: %v", got.content, err)
				}
				want := []servertest.EchoedMessage{{Role: "system", Content: echoSystem}, {Role: "user", Content: echoQuestion}}
				if !slices.Equal(echoed.Messages, want) || echoed.Temperature == nil || *echoed.Temperature != echoTemp || echoed.MaxTokens != echoMax {
					t.Errorf("echoed %+v; want the messages %v, temperature %v, max tokens %d", echoed, want, echoTemp, echoMax)
				}
				if got.callName != "get_weather" || got.callArgs != servertest.EchoArguments {
					t.Errorf("call %s(%s); want get_weather(%s)", got.callName, got.callArgs, servertest.EchoArguments)
				}
				if got.finish != tt.finish {
					t.Errorf("finish %q, want %q", got.finish, tt.finish)
				}
				if got.prompt != 2 || got.completion != 4 {
					t.Errorf("usage %d prompt, %d completion tokens; want the engine's 2 and 4", got.prompt, got.completion)
				}
			})
		}
	}
}

// checkTyped checks what reached the engine: the request as the client typed it, no prompt.
func checkTyped(t *testing.T, req *core.ChatRequest, stop bool) {
	t.Helper()
	if len(req.Messages) != 2 || req.Messages[0].Role != "system" || req.Messages[0].Content != echoSystem ||
		req.Messages[1].Role != "user" || req.Messages[1].Content != echoQuestion {
		t.Errorf("messages %+v", req.Messages)
	}
	if len(req.Tools) != 1 || req.Tools[0].Name != "get_weather" || !strings.Contains(string(req.Tools[0].Parameters), `"city"`) {
		t.Errorf("tools %+v", req.Tools)
	}
	gen := req.Generation
	if temp := gen.Sampling.Temperature; temp == nil || *temp != echoTemp {
		t.Errorf("temperature %v, want %v", temp, echoTemp)
	}
	if gen.MaxTokens != echoMax || gen.Prompt != "" || req.N != 1 {
		t.Errorf("max tokens %d, prompt %q, n %d; want %d, no prompt (nothing rendered), one choice", gen.MaxTokens, gen.Prompt, req.N, echoMax)
	}
	if stop && !slices.Equal(gen.Stop, []string{echoStop}) {
		t.Errorf("stop %q, want [%s]", gen.Stop, echoStop)
	}
}

func openaiChat(t *testing.T, c *openai.Client, stream bool) echoReply {
	p := openai.ChatCompletionNewParams{
		Model:    "echo",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(echoSystem), openai.UserMessage(echoQuestion)},
		Tools: []openai.ChatCompletionToolUnionParam{{OfFunction: &openai.ChatCompletionFunctionToolParam{
			Function: openai.FunctionDefinitionParam{Name: "get_weather", Parameters: echoParams},
		}}},
		Temperature: openai.Float(echoTemp), MaxCompletionTokens: openai.Int(echoMax),
		Stop: openai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{echoStop}},
	}
	var res *openai.ChatCompletion
	if stream {
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		s := c.Chat.Completions.NewStreaming(t.Context(), p)
		var acc openai.ChatCompletionAccumulator
		for s.Next() {
			acc.AddChunk(s.Current())
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		res = &acc.ChatCompletion
	} else {
		var err error
		if res, err = c.Chat.Completions.New(t.Context(), p); err != nil {
			t.Fatal(err)
		}
	}
	if len(res.Choices) != 1 {
		t.Fatalf("%d choices", len(res.Choices))
	}
	msg := res.Choices[0].Message
	r := echoReply{content: msg.Content, finish: res.Choices[0].FinishReason, prompt: res.Usage.PromptTokens, completion: res.Usage.CompletionTokens}
	if len(msg.ToolCalls) == 1 {
		r.callName, r.callArgs = msg.ToolCalls[0].Function.Name, msg.ToolCalls[0].Function.Arguments
	}
	return r
}

func openaiResponses(t *testing.T, c *openai.Client, stream bool) echoReply {
	p := responses.ResponseNewParams{
		Model: "echo", Instructions: openai.String(echoSystem),
		Input:       responses.ResponseNewParamsInputUnion{OfString: openai.String(echoQuestion)},
		Tools:       []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: "get_weather", Parameters: echoParams}}},
		Temperature: openai.Float(echoTemp), MaxOutputTokens: openai.Int(echoMax),
	}
	var res *responses.Response
	if stream {
		s := c.Responses.NewStreaming(t.Context(), p)
		for s.Next() {
			if ev := s.Current(); ev.Type == "response.completed" {
				r := ev.Response
				res = &r
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if res == nil {
			t.Fatal("no response.completed event")
		}
	} else {
		var err error
		if res, err = c.Responses.New(t.Context(), p); err != nil {
			t.Fatal(err)
		}
	}
	r := echoReply{content: res.OutputText(), finish: string(res.Status), prompt: res.Usage.InputTokens, completion: res.Usage.OutputTokens}
	for _, it := range res.Output {
		if it.Type == "function_call" {
			call := it.AsFunctionCall()
			r.callName, r.callArgs = call.Name, call.Arguments
		}
	}
	return r
}

func anthropicMessages(t *testing.T, c *anthropic.Client, stream bool) echoReply {
	p := anthropic.MessageNewParams{
		Model: "echo", MaxTokens: echoMax, StopSequences: []string{echoStop},
		System:   []anthropic.TextBlockParam{{Text: echoSystem}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(echoQuestion))},
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather",
			InputSchema: anthropic.ToolInputSchemaParam{Properties: echoParams["properties"], Required: []string{"city"}}}}},
	}
	// This client has no temperature field any more; the API still takes one.
	temp := anthropicoption.WithJSONSet("temperature", echoTemp)
	var msg *anthropic.Message
	if stream {
		s := c.Messages.NewStreaming(t.Context(), p, temp)
		msg = &anthropic.Message{}
		for s.Next() {
			if err := msg.Accumulate(s.Current()); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
	} else {
		var err error
		if msg, err = c.Messages.New(t.Context(), p, temp); err != nil {
			t.Fatal(err)
		}
	}
	r := echoReply{finish: string(msg.StopReason), prompt: msg.Usage.InputTokens, completion: msg.Usage.OutputTokens}
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			r.content += b.Text
		case "tool_use":
			if !strings.HasPrefix(b.ID, "toolu_") {
				t.Errorf("tool_use id %q", b.ID)
			}
			r.callName, r.callArgs = b.Name, string(b.Input)
		}
	}
	return r
}

func ollamaChat(t *testing.T, c *api.Client, stream bool) echoReply {
	props := api.NewToolPropertiesMap()
	props.Set("city", api.ToolProperty{Type: api.PropertyType{"string"}})
	req := &api.ChatRequest{
		Model: "echo", Stream: &stream,
		Messages: []api.Message{{Role: "system", Content: echoSystem}, {Role: "user", Content: echoQuestion}},
		Tools: []api.Tool{{Type: "function", Function: api.ToolFunction{Name: "get_weather",
			Parameters: api.ToolFunctionParameters{Type: "object", Properties: props, Required: []string{"city"}}}}},
		Options: map[string]any{"temperature": echoTemp, "num_predict": echoMax, "stop": []string{echoStop}},
	}
	var r echoReply
	lines := 0
	err := c.Chat(t.Context(), req, func(res api.ChatResponse) error {
		lines++
		r.content += res.Message.Content
		for _, call := range res.Message.ToolCalls {
			args, err := json.Marshal(call.Function.Arguments)
			if err != nil {
				return err
			}
			r.callName, r.callArgs = call.Function.Name, string(args)
		}
		if res.Done {
			r.finish, r.prompt, r.completion = res.DoneReason, int64(res.PromptEvalCount), int64(res.EvalCount)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if stream && lines < 3 {
		t.Errorf("%d lines streamed, want the engine's pieces apart", lines)
	}
	return r
}

// TestRequestEngineOwnCapabilities: a model served by a chat-level engine has no chat
// template of its own, and says what it can do through the engine (core.CapabilityReporter),
// not through a template: every dialect's listing and show serve it, and Ollama's think,
// which a template that cannot think refuses, reaches an engine that says it reasons.
func TestRequestEngineOwnCapabilities(t *testing.T) {
	echo := &servertest.Echo{Caps: core.Capabilities{Tools: true, Thinking: true}}
	m := servertest.EchoModel("echo", echo)
	m.Template = nil // a forwarding engine renders its own prompts
	svc := core.New(core.Config{}, nil, m)
	srv := httptest.NewServer(server.New(server.Config{}, svc))
	t.Cleanup(srv.Close)
	for _, c := range []struct{ method, path, body, want string }{
		{"GET", "/v1/models", "", `"thinking":true`},
		{"GET", "/v1/models/echo", "", `"echo"`},
		{"POST", "/api/show", `{"model":"echo"}`, `"thinking"`},
		{"GET", "/api/tags", "", `"echo:latest"`},
		{"POST", "/api/chat", `{"model":"echo","stream":false,"think":true,"messages":[{"role":"user","content":"hi"}]}`, `"done":true`},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(b.String(), c.want) {
			t.Errorf("%s %s: %d %.300s; want 200 with %s", c.method, c.path, resp.StatusCode, b.String(), c.want)
		}
	}
	chats := echo.Chats()
	if len(chats) != 1 || chats[0].TemplateKwargs["enable_thinking"] != true {
		t.Errorf("the engine got %d chats; want one asking to think", len(chats))
	}
}
