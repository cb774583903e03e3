package chat

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestLateSystem: a system message after the first renders at its place where the template
// takes it, and is folded into a user turn where the template refuses it (llama2 requires
// alternating roles after the first system message).
func TestLateSystem(t *testing.T) {
	sys := Message{Role: "system", Content: "Be brief."}
	user := Message{Role: "user", Content: "Hi"}
	reminder := Message{Role: "system", Content: "Reminder."}
	asst := Message{Role: "assistant", Content: "Hello"}
	next := Message{Role: "user", Content: "Bye"}
	gen := Options{AddGenerationPrompt: true, BOSToken: "<s>", EOSToken: "</s>"}
	tests := []struct {
		name, tmpl string
		msgs       []Message
		want       string
	}{
		{"ChatML: at its place", chatML, []Message{sys, user, reminder},
			"<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>system\nReminder.<|im_end|>\n<|im_start|>assistant\n"},
		// Claude Code's first request: the reminder ends the conversation, so it joins the
		// user turn before it.
		{"llama2 drops it: trailing, into the user turn before", llama2, []Message{sys, user, reminder},
			"<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi\n\nReminder. [/INST]"},
		{"llama2: into the next user turn", llama2, []Message{sys, user, asst, reminder, next},
			"<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello </s><s>[INST] Reminder.\n\nBye [/INST]"},
		{"llama2: two in a row fold together", llama2, []Message{sys, user, asst, reminder, reminder, next},
			"<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello </s><s>[INST] Reminder.\n\nReminder.\n\nBye [/INST]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := Parse(tt.tmpl)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tmpl.Render(tt.msgs, gen)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}

	// A template that refuses the conversation anyway keeps its own error.
	tmpl, err := Parse(llama2)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tmpl.Render([]Message{sys, asst, reminder}, gen)
	if !errors.Is(err, ErrTemplate) || err.Error() != "chat template: Conversation roles must alternate user/assistant/user/assistant/..." {
		t.Errorf("err = %v", err)
	}
}

// TestLateSystemModels: Claude Code's first conversation (system, user, system reminder) and
// a reminder between turns reach the prompt with every shared model's own template.
func TestLateSystemModels(t *testing.T) {
	convs := [][]Message{
		{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Say hi"}, {Role: "system", Content: "# Environment"}},
		{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Say hi"}, {Role: "assistant", Content: "Hi"},
			{Role: "system", Content: "# Environment"}, {Role: "user", Content: "Bye"}},
	}
	for _, model := range []string{"ggml-vocab-phi-3.gguf", "ggml-vocab-deepseek-coder-6.7b-instruct.gguf", "ggml-vocab-llama-spm.gguf", "llama-2-tiny-random.gguf", "stories260K.gguf"} {
		t.Run(model, func(t *testing.T) {
			tmpl, opts := loadModel(t, model)
			opts.AddGenerationPrompt = true
			for i, msgs := range convs {
				p, err := tmpl.Render(msgs, opts)
				if err != nil {
					t.Fatalf("conversation %d: %v", i, err)
				}
				if !strings.Contains(p, "# Environment") || !strings.Contains(p, "Say hi") {
					t.Errorf("conversation %d: prompt %q", i, p)
				}
			}
		})
	}
}

// TestDroppedSystem: a template that drops every system message (Phi-3's) still gets the
// system text and the tool instruction, in the first user turn; a template that shows the
// system message keeps it there.
func TestDroppedSystem(t *testing.T) {
	tmpl, opts := loadModel(t, "ggml-vocab-phi-3.gguf")
	opts.AddGenerationPrompt = true
	opts.Tools = []Tool{weatherTool}
	msgs := []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"}}
	p, err := tmpl.Render(msgs, opts)
	if err != nil {
		t.Fatal(err)
	}
	if want := "<s><|user|>\n" + weatherInstruction + "\n\nBe brief.\n\nHi<|end|>\n<|assistant|>\n"; p != want {
		t.Errorf("got  %q\nwant %q", p, want)
	}
	ml, err := Parse(chatML)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := ml.Render(msgs, opts); err != nil || p != "<|im_start|>system\nBe brief.\n\n"+weatherInstruction+"<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n" {
		t.Errorf("ChatML: %q %v", p, err)
	}
}

// TestLateSystemLinear: the check that every late system message shows in the prompt is
// linear in the prompt: 20,000 reminders (a 1.5 MB prompt, a body far under the 100 MiB
// limit) took 31 s of CPU when each was looked for in the whole prompt.
func TestLateSystemLinear(t *testing.T) {
	msgs := []Message{{Role: "user", Content: "hi"}}
	for i := range 20000 {
		msgs = append(msgs, Message{Role: "system", Content: fmt.Sprintf("%s%08d", strings.Repeat("a", 40), i)})
	}
	tmpl, err := Parse(chatML)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, err := tmpl.Render(msgs, Options{AddGenerationPrompt: true})
	if err != nil || !strings.Contains(out, "<|im_start|>system\n"+msgs[len(msgs)-1].Content+"<|im_end|>") {
		t.Fatalf("Render = %.80q..., %v; want the reminders at their place", out, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Render of 20,000 system messages took %v, want well under 10 s (0.2 s here)", d)
	}
}
