package chat

import "testing"

// TestFallbackKeepsReplySpacing: a reply that begins with a space (as a model's first token
// often does) joins "Assistant:" without a second space, so the rendered history repeats what
// the model generated after the "Assistant:" prompt and the prefix cache can serve it.
func TestFallbackKeepsReplySpacing(t *testing.T) {
	tmpl, err := Parse("")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ reply, want string }{
		{" Once upon", "User: hi\n\nAssistant: Once upon\n\nUser: more\n\nAssistant:"},
		{"Once upon", "User: hi\n\nAssistant: Once upon\n\nUser: more\n\nAssistant:"},
		{"\nOnce", "User: hi\n\nAssistant:\nOnce\n\nUser: more\n\nAssistant:"},
	}
	for _, c := range cases {
		got, err := tmpl.Render([]Message{{Role: "user", Content: "hi"}, {Role: "assistant", Content: c.reply}, {Role: "user", Content: "more"}},
			Options{AddGenerationPrompt: true})
		if err != nil || got != c.want {
			t.Errorf("reply %q: got %q (%v), want %q", c.reply, got, err, c.want)
		}
	}
}
