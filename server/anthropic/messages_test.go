package anthropic_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	openai "github.com/openai/openai-go/v3"
	oaoption "github.com/openai/openai-go/v3/option"
)

// params is a minimal request: one user turn, a roomy max_tokens.
func params(edit ...func(*anthropic.MessageNewParams)) anthropic.MessageNewParams {
	p := anthropic.MessageNewParams{
		Model:     "fake",
		MaxTokens: 100,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(userHello))},
	}
	for _, e := range edit {
		e(&p)
	}
	return p
}

func TestMessagesSDK(t *testing.T) {
	f := setup(t, config{})
	var raw *http.Response
	msg, err := f.client.Messages.New(t.Context(), params(), option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(msg.ID, "msg_") || msg.Type != "message" || msg.Role != "assistant" || msg.Model != "fake" {
		t.Errorf("message %s", msg.RawJSON())
	}
	if len(msg.Content) != 1 || msg.Content[0].Type != "text" || msg.Content[0].Text != defaultReply {
		t.Errorf("content %s, want one text block %q", msg.RawJSON(), defaultReply)
	}
	if msg.StopReason != anthropic.StopReasonEndTurn || msg.JSON.StopSequence.Raw() != "null" {
		t.Errorf("stop_reason %q stop_sequence %s", msg.StopReason, msg.JSON.StopSequence.Raw())
	}
	prompt := int64(len(rendered("", userHello)) + 1) // one token per byte plus BOS
	u := msg.Usage
	if u.InputTokens != prompt || u.OutputTokens != int64(len(defaultReply)) || u.CacheReadInputTokens != 0 || u.CacheCreationInputTokens != 0 {
		t.Errorf("usage %s, want input %d output %d", u.RawJSON(), prompt, len(defaultReply))
	}
	for _, k := range []string{"cache_read_input_tokens", "cache_creation_input_tokens"} {
		if !strings.Contains(u.RawJSON(), `"`+k+`":0`) {
			t.Errorf("usage lacks %s: %s", k, u.RawJSON())
		}
	}
	if id := raw.Header.Get("request-id"); !strings.HasPrefix(id, "req_") {
		t.Errorf("request-id header %q", id)
	}
	if w := raw.Header.Get("x-superfluid-warm"); w != "0" {
		t.Errorf("x-superfluid-warm %q", w)
	}
}

// The request reaches the engine as the ChatML rendering of system then turns, with its caps,
// stops and sampling.
func TestMessagesToEngine(t *testing.T) {
	f := setup(t, config{})
	p := params(func(p *anthropic.MessageNewParams) {
		p.System = []anthropic.TextBlockParam{{Text: "Be "}, {Text: "brief."}}
		p.Messages = []anthropic.MessageParam{
			anthropic.NewUserMessage(anthropic.NewTextBlock("Hi.")),
			anthropic.NewAssistantMessage(anthropic.NewTextBlock("Hello.")),
			anthropic.NewUserMessage(anthropic.NewTextBlock("Say "), anthropic.NewTextBlock("more.")),
		}
		p.StopSequences = []string{"x", "y"}
		p.MaxTokens = 50
		p.Metadata = anthropic.MetadataParam{UserID: anthropic.String("u1")}
	})
	_, err := f.client.Messages.New(t.Context(), p,
		option.WithJSONSet("temperature", 0.5), option.WithJSONSet("top_p", 0.9), option.WithJSONSet("top_k", 7),
		option.WithJSONSet("ignore_eos", true))
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.eng.Requests()
	if len(reqs) != 1 {
		t.Fatalf("engine saw %d requests", len(reqs))
	}
	r := reqs[0]
	if want := rendered("Be brief.", "Hi.", "Hello.", "Say more."); r.Prompt != want || !r.AddSpecial {
		t.Errorf("prompt %q add_special %v, want %q true", r.Prompt, r.AddSpecial, want)
	}
	s := r.Sampling
	if r.MaxTokens != 50 || strings.Join(r.Stop, ",") != "x,y" || !r.IgnoreEOS || s.Temperature == nil || *s.Temperature != 0.5 ||
		s.TopP == nil || *s.TopP != 0.9 || s.TopK == nil || *s.TopK != 7 {
		t.Errorf("engine request %+v", r)
	}
	if !strings.HasPrefix(r.ID, "msg_") {
		t.Errorf("engine request id %q", r.ID)
	}
}

// System as a plain string; consecutive turns of one role are combined into one turn.
func TestMessagesSystemStringAndCombinedTurns(t *testing.T) {
	f := setup(t, config{})
	resp, b := f.do(t, http.MethodPost, "/v1/messages", `{"model":"fake","max_tokens":5,"system":"Be brief.",
		"messages":[{"role":"user","content":"One."},{"role":"user","content":[{"type":"text","text":"Two."}]}]}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if got, want := f.eng.Requests()[0].Prompt, rendered("Be brief.", "One.\n\nTwo."); got != want {
		t.Errorf("prompt %q, want %q", got, want)
	}
}

func TestMessagesStopReasons(t *testing.T) {
	tests := []struct {
		name, reply string
		edit        func(*anthropic.MessageNewParams)
		text        string
		reason      anthropic.StopReason
		seq         string
		output      int64
	}{
		{"end_turn", "Hello world!", nil, "Hello world!", anthropic.StopReasonEndTurn, "", 12},
		{"stop_sequence", "Hello world!", func(p *anthropic.MessageNewParams) { p.StopSequences = []string{"zzz", "wor"} },
			"Hello ", anthropic.StopReasonStopSequence, "wor", 9},
		{"stop_sequence unmatched", "Hello world!", func(p *anthropic.MessageNewParams) { p.StopSequences = []string{"zzz"} },
			"Hello world!", anthropic.StopReasonEndTurn, "", 12},
		{"max_tokens", "Hello world!", func(p *anthropic.MessageNewParams) { p.MaxTokens = 5 },
			"Hello", anthropic.StopReasonMaxTokens, "", 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := setup(t, config{reply: tt.reply})
			p := params()
			if tt.edit != nil {
				tt.edit(&p)
			}
			msg, err := f.client.Messages.New(t.Context(), p)
			if err != nil {
				t.Fatal(err)
			}
			if msg.Content[0].Text != tt.text || msg.StopReason != tt.reason || msg.StopSequence != tt.seq || msg.Usage.OutputTokens != tt.output {
				t.Errorf("got %q %q %q %d, want %q %q %q %d", msg.Content[0].Text, msg.StopReason, msg.StopSequence, msg.Usage.OutputTokens,
					tt.text, tt.reason, tt.seq, tt.output)
			}
			if tt.seq == "" && msg.JSON.StopSequence.Raw() != "null" {
				t.Errorf("stop_sequence %s, want null", msg.JSON.StopSequence.Raw())
			}
		})
	}
}

func TestCountTokensSDK(t *testing.T) {
	f := setup(t, config{})
	got, err := f.client.Messages.CountTokens(t.Context(), anthropic.MessageCountTokensParams{
		Model:    "fake",
		System:   anthropic.MessageCountTokensParamsSystemUnion{OfString: anthropic.String("Be brief.")},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(userHello))},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(len(rendered("Be brief.", userHello)) + 1); got.InputTokens != want {
		t.Errorf("input_tokens %d, want %d", got.InputTokens, want)
	}
	if n := len(f.eng.Requests()); n != 0 {
		t.Errorf("counting ran %d generations", n)
	}
	// The count is what a generation of the same conversation reports as its input.
	msg, err := f.client.Messages.New(t.Context(), params(func(p *anthropic.MessageNewParams) {
		p.System = []anthropic.TextBlockParam{{Text: "Be brief."}}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if msg.Usage.InputTokens != got.InputTokens {
		t.Errorf("generation input_tokens %d, count %d", msg.Usage.InputTokens, got.InputTokens)
	}
}

func TestMessagesSDKError(t *testing.T) {
	f := setup(t, config{})
	_, err := f.client.Messages.New(t.Context(), params(func(p *anthropic.MessageNewParams) { p.Model = "nope" }))
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want *anthropic.Error", err)
	}
	if apiErr.StatusCode != 404 || apiErr.Type() != "not_found_error" || !strings.Contains(apiErr.Message, `"nope"`) ||
		!strings.HasPrefix(apiErr.RequestID, "req_") {
		t.Errorf("error %d %q %q %q", apiErr.StatusCode, apiErr.Type(), apiErr.Message, apiErr.RequestID)
	}
}

// Headers are optional: no x-api-key and no anthropic-version is still served.
func TestMessagesWithoutHeaders(t *testing.T) {
	f := setup(t, config{})
	resp, err := http.Post(f.srv.URL+"/v1/messages", "application/json", strings.NewReader(body("")))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %d", resp.StatusCode)
	}
}

// One conversation sent through the OpenAI and the Anthropic endpoints reaches the engine as
// the same prompt, so either dialect can continue it warm from the prefix cache.
func TestSamePromptAcrossDialects(t *testing.T) {
	f := setup(t, config{})
	oa := openai.NewClient(oaoption.WithBaseURL(f.srv.URL+"/v1"), oaoption.WithAPIKey("x"), oaoption.WithMaxRetries(0))
	_, err := oa.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
		Model: "fake",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("Be brief."), openai.UserMessage("Hi."), openai.AssistantMessage("Hello."), openai.UserMessage("More."),
		},
		MaxTokens: openai.Int(100),
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.client.Messages.New(t.Context(), params(func(p *anthropic.MessageNewParams) {
		p.System = []anthropic.TextBlockParam{{Text: "Be brief."}}
		p.Messages = []anthropic.MessageParam{
			anthropic.NewUserMessage(anthropic.NewTextBlock("Hi.")),
			anthropic.NewAssistantMessage(anthropic.NewTextBlock("Hello.")),
			anthropic.NewUserMessage(anthropic.NewTextBlock("More.")),
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.eng.Requests()
	if len(reqs) != 2 {
		t.Fatalf("engine saw %d requests", len(reqs))
	}
	if reqs[0].Prompt != reqs[1].Prompt || reqs[0].AddSpecial != reqs[1].AddSpecial {
		t.Errorf("OpenAI prompt %q, Anthropic prompt %q", reqs[0].Prompt, reqs[1].Prompt)
	}
	if want := rendered("Be brief.", "Hi.", "Hello.", "More."); reqs[1].Prompt != want {
		t.Errorf("prompt %q, want %q", reqs[1].Prompt, want)
	}
}

// Every request is recorded under /v1/messages with its id.
func TestMessagesRecorded(t *testing.T) {
	f := setup(t, config{})
	msg, err := f.client.Messages.New(t.Context(), params())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.st.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	rec, err := f.st.Request(t.Context(), msg.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Endpoint != "/v1/messages" || rec.Status != 200 || rec.Model != "fake" || rec.CompletionTokens != len(defaultReply) {
		t.Errorf("record %+v", rec)
	}
}

// A request for an unknown model is recorded too, streaming or not.
func TestUnknownModelRecorded(t *testing.T) {
	f := setup(t, config{})
	for _, stream := range []string{"false", "true"} {
		resp, b := f.do(t, http.MethodPost, "/v1/messages", `{"model":"nope","max_tokens":5,"stream":`+stream+`,"messages":[{"role":"user","content":"x"}]}`)
		checkError(t, resp, b, wantError{404, "not_found_error", `"nope"`})
	}
	if err := f.st.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	recs, err := f.st.RecentRequests(t.Context(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Status != 404 || recs[1].Status != 404 || recs[0].Endpoint != "/v1/messages" {
		t.Errorf("records %+v", recs)
	}
}
