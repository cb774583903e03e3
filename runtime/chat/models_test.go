package chat

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf"
)

// modelsDir holds the shared test models; tests that need it skip without it.
const modelsDir = "../../../shared/models"

// loadModel parses the chat template of a shared test model and returns it
// with the text of the model's BOS and EOS tokens.
func loadModel(t *testing.T, name string) (*Template, Options) {
	t.Helper()
	path := filepath.Join(modelsDir, name)
	if _, err := os.Stat(modelsDir); err != nil {
		t.Skipf("no shared models: %v", err)
	}
	f, err := gguf.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	var opts Options
	for _, tok := range []struct {
		name string
		text *string
	}{{"bos", &opts.BOSToken}, {"eos", &opts.EOSToken}} {
		id, ok := f.SpecialToken(tok.name)
		if !ok {
			t.Fatalf("%s: no %s token", name, tok.name)
		}
		if *tok.text, ok = f.TokenText(id); !ok {
			t.Fatalf("%s: no text for %s token %d", name, tok.name, id)
		}
	}
	tmpl, err := Parse(f.ChatTemplate())
	if err != nil {
		t.Fatalf("parse the chat template of %s: %v", name, err)
	}
	return tmpl, opts
}

// TestModelTemplates renders with the templates the real GGUF files carry.
// The wants were worked out from the templates (and agree with Python's
// jinja2 under HF's settings).
func TestModelTemplates(t *testing.T) {
	const deepseekBOS = "<｜begin▁of▁sentence｜>"
	tests := []struct {
		name  string
		model string
		msgs  []Message
		gen   bool
		want  string
	}{
		// Phi-3's template drops system messages (so the system text joins
		// the first user turn, system.go), always ends a user turn with the
		// assistant header and ignores add_generation_prompt.
		{"phi-3", "ggml-vocab-phi-3.gguf", conversation, true,
			"<s><|user|>\nYou are terse.\n\nHi<|end|>\n<|assistant|>\nHello!<|end|>\n<|user|>\nWhat is 2+2?<|end|>\n<|assistant|>\n"},
		{"phi-3 without generation prompt", "ggml-vocab-phi-3.gguf", conversation, false,
			"<s><|user|>\nYou are terse.\n\nHi<|end|>\n<|assistant|>\nHello!<|end|>\n<|user|>\nWhat is 2+2?<|end|>\n<|assistant|>\n"},
		// DeepSeek Coder's puts the system text straight before the first
		// instruction (no newline) and its generation prompt keeps the
		// newline before {% endif %}.
		{"deepseek-coder", "ggml-vocab-deepseek-coder-6.7b-instruct.gguf", conversation, true,
			deepseekBOS + "You are terse.### Instruction:\nHi\n### Response:\nHello!\n<|EOT|>\n" +
				"### Instruction:\nWhat is 2+2?\n### Response:\n"},
		{"deepseek-coder without generation prompt", "ggml-vocab-deepseek-coder-6.7b-instruct.gguf", conversation, false,
			deepseekBOS + "You are terse.### Instruction:\nHi\n### Response:\nHello!\n<|EOT|>\n" +
				"### Instruction:\nWhat is 2+2?\n"},
		{"deepseek-coder default system prompt", "ggml-vocab-deepseek-coder-6.7b-instruct.gguf", conversation[1:2], true,
			deepseekBOS + "You are an AI programming assistant, utilizing the Deepseek Coder model, developed by Deepseek Company, " +
				"and you only answer questions related to computer science. For politically sensitive questions, security and " +
				"privacy issues, and other non-computer science questions, you will refuse to answer\n" +
				"### Instruction:\nHi\n### Response:\n"},
		// stories260K has no template: the fallback, and no BOS text.
		{"stories260K", "stories260K.gguf", []Message{{Role: "user", Content: "Once upon a time"}}, true,
			"Once upon a time"},
		{"stories260K conversation", "stories260K.gguf", conversation, true,
			"System: You are terse.\n\nUser: Hi\n\nAssistant: Hello!\n\nUser: What is 2+2?\n\nAssistant:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, opts := loadModel(t, tt.model)
			if want := tt.model == "stories260K.gguf"; tmpl.IsFallback() != want {
				t.Errorf("IsFallback() = %v, want %v", tmpl.IsFallback(), want)
			}
			opts.AddGenerationPrompt = tt.gen
			got, err := tmpl.Render(tt.msgs, opts)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if got != tt.want {
				t.Errorf("Render =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}
