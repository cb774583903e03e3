package anthropic_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
)

// thinkingReply is a reply of a model that reasons: the reasoning, then the answer.
const thinkingReply = "<think>\nThe user greets me.\n</think>\n\nHello!"

func thinkingParams() anthropic.MessageNewParams {
	return params(func(p *anthropic.MessageNewParams) {
		p.MaxTokens = 2000
		p.Thinking = anthropic.ThinkingConfigParamOfEnabled(1024)
	})
}

// TestThinking: reasoning is served as a thinking block with a signature before the text,
// streamed or not, and the stream reassembles into the same blocks.
func TestThinking(t *testing.T) {
	f := setup(t, config{reply: thinkingReply})
	msg, err := f.client.Messages.New(t.Context(), thinkingParams())
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 2 || msg.StopReason != anthropic.StopReasonEndTurn {
		t.Fatalf("message %s", msg.RawJSON())
	}
	th, text := msg.Content[0].AsThinking(), msg.Content[1].AsText()
	if th.Type != "thinking" || th.Thinking != "The user greets me." || th.Signature == "" {
		t.Errorf("thinking block %s", msg.Content[0].RawJSON())
	}
	if text.Type != "text" || text.Text != "Hello!" {
		t.Errorf("text block %s", msg.Content[1].RawJSON())
	}

	types, streamed, err := stream(t, f, thinkingParams())
	if err != nil {
		t.Fatal(err)
	}
	if len(streamed.Content) != 2 {
		t.Fatalf("events %v, message %s", types, streamed.RawJSON())
	}
	sth := streamed.Content[0].AsThinking()
	if sth.Thinking != th.Thinking || sth.Signature != th.Signature || streamed.Content[1].Text != text.Text {
		t.Errorf("streamed %s, want %s", streamed.RawJSON(), msg.RawJSON())
	}

	// The wire: thinking_delta at token cadence, then one signature_delta, then the stop.
	resp, b := f.do(t, http.MethodPost, "/v1/messages", body(`"max_tokens":2000,"thinking":{"type":"enabled","budget_tokens":1024},"stream":true`))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	blocks := checkBlocks(t, parseSSE(t, b))
	if len(blocks) != 2 {
		t.Fatalf("%d blocks", len(blocks))
	}
	start := blocks[0].start
	if str(start["type"]) != "thinking" || string(start["thinking"]) != `""` || string(start["signature"]) != `""` {
		t.Errorf("thinking start %v", start)
	}
	ds := blocks[0].deltas
	for i, d := range ds {
		want := "thinking_delta"
		if i == len(ds)-1 {
			want = "signature_delta"
		}
		if str(d["type"]) != want {
			t.Errorf("delta %d of %d is %v, want %s", i, len(ds), d, want)
		}
	}
	if len(ds) < 6 {
		t.Errorf("%d thinking deltas; reasoning should stream at token cadence", len(ds)-1)
	}
	if sig := str(ds[len(ds)-1]["signature"]); sig != th.Signature {
		t.Errorf("signature %q, non-streamed %q", sig, th.Signature)
	}
}

// TestThinkingOmitted: display "omitted" keeps the block and its signature, not the text.
func TestThinkingOmitted(t *testing.T) {
	f := setup(t, config{reply: thinkingReply})
	const omitted = `"max_tokens":2000,"thinking":{"type":"enabled","budget_tokens":1024,"display":"omitted"}`
	resp, b := f.do(t, http.MethodPost, "/v1/messages", body(omitted))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var r wireReply
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Content) != 2 || string(r.Content[0]["thinking"]) != `""` || str(r.Content[0]["signature"]) == "" || str(r.Content[1]["text"]) != "Hello!" {
		t.Errorf("reply %s", b)
	}
	resp, b = f.do(t, http.MethodPost, "/v1/messages", body(omitted+`,"stream":true`))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	blocks := checkBlocks(t, parseSSE(t, b))
	if len(blocks) != 2 || len(blocks[0].deltas) != 1 || str(blocks[0].deltas[0]["type"]) != "signature_delta" ||
		str(blocks[0].deltas[0]["signature"]) != str(r.Content[0]["signature"]) {
		t.Errorf("streamed blocks %+v", blocks)
	}

	// Sent back without its text, the thinking comes back from the signature, as Anthropic
	// restores it; a signature that is not this server's restores nothing.
	for _, tt := range []struct{ sig, want string }{
		{str(r.Content[0]["signature"]), "<think>The user greets me.</think>\nHello!"},
		{"RXJyb3JzIGFyZSBub3QgbWluZQ==", "<|im_start|>assistant\nHello!"},
	} {
		f := setup(t, config{template: hermesTemplate})
		f.ok(t, msgs(`[{"role":"user","content":"Say hello."},{"role":"assistant","content":[{"type":"thinking","thinking":"","signature":"`+tt.sig+`"},`+
			`{"type":"text","text":"Hello!"}]},{"role":"user","content":"Again."}]`))
		if p := f.lastPrompt(t); !strings.Contains(p, tt.want) {
			t.Errorf("prompt %q, want it to hold %q", p, tt.want)
		}
	}
}

// TestThinkingToTemplate: `thinking` sets enable_thinking for the template; an explicit
// chat_template_kwargs entry wins. The Qwen 3 style template closes an empty think block when
// thinking is off.
func TestThinkingToTemplate(t *testing.T) {
	const off = "<|im_start|>assistant\n<think>\n\n</think>\n\n"
	tests := []struct {
		name, extra string
		off         bool
	}{
		{"absent", "", false},
		{"enabled", `"thinking":{"type":"enabled","budget_tokens":1024}`, false},
		{"adaptive", `"thinking":{"type":"adaptive"}`, false},
		{"disabled", `"thinking":{"type":"disabled"}`, true},
		{"kwargs win over enabled", `"thinking":{"type":"enabled","budget_tokens":1024},"chat_template_kwargs":{"enable_thinking":false}`, true},
		{"kwargs win over disabled", `"thinking":{"type":"disabled"},"chat_template_kwargs":{"enable_thinking":true}`, false},
	}
	f := setup(t, config{template: hermesTemplate})
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			extra := `"max_tokens":2000`
			if tt.extra != "" {
				extra += "," + tt.extra
			}
			resp, b := f.do(t, http.MethodPost, "/v1/messages", body(extra))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			if p := f.eng.Requests()[i].Prompt; strings.HasSuffix(p, off) != tt.off {
				t.Errorf("prompt %q; thinking off %v", p, tt.off)
			}
		})
	}
}

// TestThinkingHistory: thinking blocks of earlier turns reach the template as reasoning;
// redacted thinking (encrypted by Anthropic) is dropped.
func TestThinkingHistory(t *testing.T) {
	f := setup(t, config{template: hermesTemplate})
	resp, b := f.do(t, http.MethodPost, "/v1/messages", msgs(`[{"role":"user","content":"Hi."},`+
		`{"role":"assistant","content":[{"type":"thinking","thinking":"A greeting.","signature":"c2ln"},{"type":"redacted_thinking","data":"ZW5j"},{"type":"text","text":"Hello."}]},`+
		`{"role":"user","content":"More."}]`))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if p, want := f.eng.Requests()[0].Prompt, "<|im_start|>assistant\n<think>A greeting.</think>\nHello.<|im_end|>\n"; !strings.Contains(p, want) {
		t.Errorf("prompt %q, want it to hold %q", p, want)
	}
}

func TestThinkingBadInput(t *testing.T) {
	f := setup(t, config{})
	tests := []struct {
		name, extra string
		want        wantError
	}{
		{"budget missing", `"thinking":{"type":"enabled"}`, wantError{400, invalidReq, "thinking.enabled.budget_tokens: Field required"}},
		{"budget too small", `"max_tokens":2000,"thinking":{"type":"enabled","budget_tokens":1023}`,
			wantError{400, invalidReq, "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"}},
		{"budget not below max_tokens", `"max_tokens":1024,"thinking":{"type":"enabled","budget_tokens":1024}`,
			wantError{400, invalidReq, "max_tokens: must be greater than thinking.budget_tokens"}},
		{"budget a string", `"thinking":{"type":"enabled","budget_tokens":"many"}`, wantError{400, invalidReq, "thinking.budget_tokens: Input should be a valid integer"}},
		{"type missing", `"thinking":{}`, wantError{400, invalidReq, "thinking.type: Field required"}},
		{"type unknown", `"thinking":{"type":"on"}`, wantError{400, invalidReq, "thinking.type: Input should be 'enabled', 'adaptive' or 'disabled'"}},
		{"display unknown", `"thinking":{"type":"adaptive","display":"full"}`, wantError{400, invalidReq, "thinking.display: Input should be 'summarized' or 'omitted'"}},
		{"thinking without text", ``, wantError{400, invalidReq, "messages.1.content.0.thinking: Field required"}},
		{"reserved template variable", `"chat_template_kwargs":{"messages":[]}`, wantError{400, invalidReq, "messages is set by the server"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := body(tt.extra)
			if tt.extra == "" {
				b = msgs(`[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"thinking","signature":"s"}]},{"role":"user","content":"y"}]`)
			}
			resp, out := f.do(t, http.MethodPost, "/v1/messages", b)
			checkError(t, resp, out, tt.want)
		})
	}
	if n := len(f.eng.Requests()); n != 0 {
		t.Errorf("bad requests reached the engine %d times", n)
	}
}
