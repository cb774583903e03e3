package openai_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	sfopenai "github.com/superfluid/superfluid/server/openai"
)

// userHello is the prompt most tests send; with the fallback template it renders as itself.
const userHello = "Say hello."

func params(mod func(*openai.ChatCompletionNewParams)) openai.ChatCompletionNewParams {
	p := openai.ChatCompletionNewParams{
		Model:    "fake",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(userHello)},
	}
	if mod != nil {
		mod(&p)
	}
	return p
}

func TestChatSDK(t *testing.T) {
	const reply = "Hello world! How are you?"
	prompt := len(userHello) + 1 // one token per byte plus BOS
	tests := []struct {
		name       string
		maxTokens  int // operator default
		mod        func(*openai.ChatCompletionNewParams)
		contents   []string
		finish     string
		completion int // total over choices
	}{
		{name: "plain", contents: []string{reply}, finish: "stop", completion: len(reply)},
		{name: "max_tokens cut", mod: func(p *openai.ChatCompletionNewParams) { p.MaxTokens = openai.Int(5) },
			contents: []string{"Hello"}, finish: "length", completion: 5},
		{name: "max_completion_tokens wins", mod: func(p *openai.ChatCompletionNewParams) {
			p.MaxTokens, p.MaxCompletionTokens = openai.Int(20), openai.Int(3)
		}, contents: []string{"Hel"}, finish: "length", completion: 3},
		{name: "operator max tokens", maxTokens: 4, contents: []string{"Hell"}, finish: "length", completion: 4},
		{name: "request cap beats operator", maxTokens: 4, mod: func(p *openai.ChatCompletionNewParams) { p.MaxTokens = openai.Int(8) },
			contents: []string{"Hello wo"}, finish: "length", completion: 8},
		{name: "stop string", mod: func(p *openai.ChatCompletionNewParams) {
			p.Stop = openai.ChatCompletionNewParamsStopUnion{OfString: openai.String("world")}
		}, contents: []string{"Hello "}, finish: "stop", completion: len("Hello world")},
		{name: "stop array, first hit wins", mod: func(p *openai.ChatCompletionNewParams) {
			p.Stop = openai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{"are", "!"}}
		}, contents: []string{"Hello world"}, finish: "stop", completion: len("Hello world!")},
		{name: "stop never met", mod: func(p *openai.ChatCompletionNewParams) {
			p.Stop = openai.ChatCompletionNewParamsStopUnion{OfString: openai.String("you?!")}
		}, contents: []string{reply}, finish: "stop", completion: len(reply)},
		{name: "n=3", mod: func(p *openai.ChatCompletionNewParams) { p.N = openai.Int(3) },
			contents: []string{reply, reply, reply}, finish: "stop", completion: 3 * len(reply)},
		{name: "n=3 with a cap", mod: func(p *openai.ChatCompletionNewParams) { p.N, p.MaxTokens = openai.Int(3), openai.Int(2) },
			contents: []string{"He", "He", "He"}, finish: "length", completion: 6},
		{name: "sampling fields accepted", mod: func(p *openai.ChatCompletionNewParams) {
			p.Temperature, p.TopP, p.Seed = openai.Float(0), openai.Float(1), openai.Int(42)
			p.PresencePenalty, p.FrequencyPenalty = openai.Float(-2), openai.Float(2)
			p.LogitBias = map[string]int64{"7": -100}
		}, contents: []string{reply}, finish: "stop", completion: len(reply)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := setup(t, config{reply: reply, maxTokens: tt.maxTokens})
			var raw *http.Response
			got, err := f.client.Chat.Completions.New(t.Context(), params(tt.mod), option.WithResponseInto(&raw))
			if err != nil {
				t.Fatal(err)
			}
			if got.Object != "chat.completion" || !strings.HasPrefix(got.ID, "chatcmpl-") || got.Model != "fake" {
				t.Errorf("object %q id %q model %q", got.Object, got.ID, got.Model)
			}
			if len(got.Choices) != len(tt.contents) {
				t.Fatalf("%d choices, want %d", len(got.Choices), len(tt.contents))
			}
			for i, c := range got.Choices {
				if c.Index != int64(i) {
					t.Errorf("choice %d has index %d", i, c.Index)
				}
				if c.Message.Role != "assistant" || c.Message.Content != tt.contents[i] {
					t.Errorf("choice %d: %s %q, want assistant %q", i, c.Message.Role, c.Message.Content, tt.contents[i])
				}
				if c.FinishReason != tt.finish {
					t.Errorf("choice %d: finish_reason %q, want %q", i, c.FinishReason, tt.finish)
				}
			}
			u := got.Usage
			if u.PromptTokens != int64(prompt) || u.CompletionTokens != int64(tt.completion) || u.TotalTokens != int64(prompt+tt.completion) {
				t.Errorf("usage %d+%d=%d, want %d+%d", u.PromptTokens, u.CompletionTokens, u.TotalTokens, prompt, tt.completion)
			}
			if !u.PromptTokensDetails.JSON.CachedTokens.Valid() || u.PromptTokensDetails.CachedTokens != 0 {
				t.Errorf("prompt_tokens_details.cached_tokens: %s", u.PromptTokensDetails.RawJSON())
			}
			if warm := raw.Header.Get(sfopenai.WarmHeader); warm != "0" {
				t.Errorf("%s = %q, want \"0\"", sfopenai.WarmHeader, warm)
			}
		})
	}
}

// The fake sees the request as the dialect converted it.
func TestChatConversion(t *testing.T) {
	f := setup(t, config{template: chatML})
	p := params(func(p *openai.ChatCompletionNewParams) {
		p.Messages = []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("Be brief."),
			openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{openai.TextContentPart("Say "), openai.TextContentPart("hi.")}),
		}
		p.Temperature, p.Seed = openai.Float(0.5), openai.Int(9)
		p.Stop = openai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{"x", "y"}}
		p.LogitBias = map[string]int64{"3": 5}
	})
	got, err := f.client.Chat.Completions.New(t.Context(), p, option.WithJSONSet("developer_extra", true))
	if err != nil {
		t.Fatal(err)
	}
	const rendered = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nSay hi.<|im_end|>\n<|im_start|>assistant\n"
	if got.Usage.PromptTokens != int64(len(rendered)+1) {
		t.Errorf("prompt_tokens %d, want %d (rendered bytes + BOS)", got.Usage.PromptTokens, len(rendered)+1)
	}
	reqs := f.eng.Requests()
	if len(reqs) != 1 {
		t.Fatalf("engine saw %d requests", len(reqs))
	}
	r := reqs[0]
	if r.Prompt != rendered || !r.AddSpecial {
		t.Errorf("prompt %q add_special %v, want %q true", r.Prompt, r.AddSpecial, rendered)
	}
	s := r.Sampling
	if s.Temperature == nil || *s.Temperature != 0.5 || s.Seed != 9 || s.LogitBias[3] != 5 || strings.Join(r.Stop, ",") != "x,y" {
		t.Errorf("engine request %+v", r)
	}
	if s.TopP != nil || s.TopK != nil || r.MaxTokens != 0 {
		t.Errorf("unset fields reached the engine: %+v", r)
	}
}

func TestChatSDKError(t *testing.T) {
	f := setup(t, config{})
	_, err := f.client.Chat.Completions.New(t.Context(), params(func(p *openai.ChatCompletionNewParams) { p.Model = "nope" }))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want *openai.Error", err)
	}
	if apiErr.StatusCode != 404 || apiErr.Code != "model_not_found" || apiErr.Param != "model" || apiErr.Type != invalidReq || apiErr.Message == "" {
		t.Errorf("error %d %+v", apiErr.StatusCode, apiErr)
	}
}

func TestChatStreamSDK(t *testing.T) {
	const reply = "Streaming works."
	f := setup(t, config{reply: reply})
	stream := f.client.Chat.Completions.NewStreaming(t.Context(), params(func(p *openai.ChatCompletionNewParams) {
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	}))
	defer stream.Close()
	acc := openai.ChatCompletionAccumulator{}
	var chunks []openai.ChatCompletionChunk
	for stream.Next() {
		c := stream.Current()
		if !acc.AddChunk(c) {
			t.Fatalf("accumulator refused chunk %d: %s", len(chunks), c.RawJSON())
		}
		chunks = append(chunks, c)
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(chunks) < 3 {
		t.Fatalf("%d chunks", len(chunks))
	}
	if d := chunks[0].Choices[0].Delta; d.Role != "assistant" || d.Content != "" {
		t.Errorf("first delta %s, want role assistant only", chunks[0].Choices[0].Delta.RawJSON())
	}
	for i, c := range chunks {
		if c.ID != chunks[0].ID || c.Object != "chat.completion.chunk" || len(c.Choices) != 1 || c.Choices[0].Index != 0 {
			t.Errorf("chunk %d: %s", i, c.RawJSON())
		}
		if last := i == len(chunks)-1; last != (c.Choices[0].FinishReason != "") {
			t.Errorf("chunk %d of %d has finish_reason %q", i, len(chunks), c.Choices[0].FinishReason)
		}
	}
	if got := acc.Choices[0].Message.Content; got != reply {
		t.Errorf("accumulated content %q, want %q", got, reply)
	}
	if acc.Choices[0].FinishReason != "stop" {
		t.Errorf("finish_reason %q", acc.Choices[0].FinishReason)
	}
	prompt := int64(len(userHello) + 1)
	if u := acc.Usage; u.PromptTokens != prompt || u.CompletionTokens != int64(len(reply)) || u.TotalTokens != prompt+int64(len(reply)) {
		t.Errorf("usage %+v", u)
	}
	var last struct {
		Usage      map[string]any  `json:"usage"`
		Superfluid map[string]*int `json:"superfluid"`
	}
	if err := json.Unmarshal([]byte(chunks[len(chunks)-1].RawJSON()), &last); err != nil {
		t.Fatal(err)
	}
	if w := last.Superfluid["warm"]; w == nil || *w != 0 {
		t.Errorf("terminal chunk lacks superfluid.warm: %s", chunks[len(chunks)-1].RawJSON())
	}
	for _, c := range chunks[:len(chunks)-1] {
		var keys map[string]json.RawMessage
		if err := json.Unmarshal([]byte(c.RawJSON()), &keys); err != nil {
			t.Fatal(err)
		}
		if _, ok := keys["usage"]; ok {
			t.Errorf("usage before the terminal chunk: %s", c.RawJSON())
		}
		if _, ok := keys["superfluid"]; ok {
			t.Errorf("superfluid before the terminal chunk: %s", c.RawJSON())
		}
	}
}

// Streaming serves one choice whatever n says.
func TestChatStreamOneChoice(t *testing.T) {
	f := setup(t, config{})
	stream := f.client.Chat.Completions.NewStreaming(t.Context(), params(func(p *openai.ChatCompletionNewParams) { p.N = openai.Int(4) }))
	defer stream.Close()
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		c := stream.Current()
		if len(c.Choices) != 1 || c.Choices[0].Index != 0 {
			t.Errorf("chunk %s", c.RawJSON())
		}
		acc.AddChunk(c)
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != defaultReply {
		t.Errorf("choices %+v", acc.Choices)
	}
}

func TestChatRecorded(t *testing.T) {
	f := setup(t, config{})
	got, err := f.client.Chat.Completions.New(t.Context(), params(func(p *openai.ChatCompletionNewParams) { p.MaxTokens = openai.Int(5) }))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.st.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	rec, err := f.st.Request(t.Context(), got.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Model != "fake" || rec.Endpoint != "/v1/chat/completions" || rec.Status != 200 || rec.Stream || rec.Error != "" ||
		rec.PromptTokens != len(userHello)+1 || rec.CompletionTokens != 5 || rec.FinishReason != "length" || rec.ClientDisconnected {
		t.Errorf("record %+v", rec)
	}
	if rec.CreatedAt.IsZero() || rec.Total <= 0 {
		t.Errorf("record lacks times: %+v", rec)
	}

	// A request that names the model by path is refused: names come from the catalog.
	resp, b := f.do(t, http.MethodPost, "/v1/chat/completions", `{"model":"/models/fake.gguf","messages":[{"role":"user","content":"x"}]}`)
	checkError(t, resp, b, wantError{400, invalidReq, "", "", "is a path"})

	// Failures the core sees are recorded too, with their status.
	resp, b = f.do(t, http.MethodPost, "/v1/chat/completions", `{"model":"nope","messages":[{"role":"user","content":"x"}]}`)
	checkError(t, resp, b, wantError{404, invalidReq, "model", "model_not_found", "nope"})
	if err := f.st.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	recent, err := f.st.RecentRequests(t.Context(), 1)
	if err != nil || len(recent) != 1 {
		t.Fatalf("recent: %v %v", recent, err)
	}
	if r := recent[0]; r.Model != "nope" || r.Status != 404 || !strings.Contains(r.Error, "nope") || r.Endpoint != "/v1/chat/completions" {
		t.Errorf("record of the failure %+v", r)
	}
	for i := range 3 {
		if _, err := f.client.Chat.Completions.New(t.Context(), params(nil)); err != nil {
			t.Fatal(i, err)
		}
	}
	if err := f.st.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if recent, _ = f.st.RecentRequests(t.Context(), 100); len(recent) != 6 {
		t.Errorf("%d records, want 6", len(recent))
	}
}

func TestWarmHeaderStreaming(t *testing.T) {
	f := setup(t, config{})
	resp, b := f.do(t, http.MethodPost, "/v1/chat/completions", chatBody(`"stream":true`))
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	if warm, err := strconv.Atoi(resp.Header.Get(sfopenai.WarmHeader)); err != nil || warm != 0 {
		t.Errorf("%s = %q", sfopenai.WarmHeader, resp.Header.Get(sfopenai.WarmHeader))
	}
}
