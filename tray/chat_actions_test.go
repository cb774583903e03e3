package tray

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/test"
)

// twoTurns is a saved chat of two questions and their replies, open in the playground.
func twoTurns(t *testing.T) (*App, *fakeController, *playgroundView) {
	app, f := newTestApp(t)
	f.convs = []Conversation{{ID: "c", Title: "Foxes", Model: "stories260K", Messages: []Message{
		{Role: "user", Content: "Tell me about foxes"}, {Role: "assistant", Content: "Foxes are quick."},
		{Role: "user", Content: "And owls?"}, {Role: "assistant", Content: "Owls are wise."},
	}}}
	v := app.playground
	ui(app, func() { app.Show("playground") })
	ui(app, func() { v.open("c") })
	return app, f, v
}

func contents(msgs []Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Content)
	}
	return out
}

// TestChatEditResends: Edit puts an earlier question back in the input; Send replaces it, drops
// the turns after it and asks again with the history up to it.
func TestChatEditResends(t *testing.T) {
	app, f, v := twoTurns(t)
	if v.rows[0].edit == nil || v.rows[1].edit != nil || v.rows[1].regen == nil {
		t.Fatal("Edit belongs to questions, Regenerate to replies")
	}
	ui(app, func() { test.Tap(v.rows[0].edit) })
	if v.input.Text != "Tell me about foxes" || !strings.Contains(v.stats.Text, "Editing") {
		t.Fatalf("input %q, stats %q", v.input.Text, v.stats.Text)
	}
	ui(app, func() { v.input.SetText("Tell me about badgers") })
	ui(app, func() { test.Tap(v.send) })
	eventually(t, app, "the reply completes", func() bool { return v.cancel == nil && len(f.asked) == 1 })
	if got := contents(f.asked[0]); !reflect.DeepEqual(got, []string{"Tell me about badgers"}) {
		t.Fatalf("asked %q", got)
	}
	if got := contents(v.history); !reflect.DeepEqual(got, []string{"Tell me about badgers", f.reply}) || strings.Contains(v.transcriptText(), "owls") {
		t.Fatalf("history %q, transcript %q", got, v.transcriptText())
	}
	if saved := f.convs[len(f.convs)-1]; saved.ID != "c" || len(saved.Messages) != 2 {
		t.Fatalf("saved %+v", saved)
	}
}

// TestChatRegenerates: Regenerate on the last reply drops it and asks again with the same
// question; the new reply takes its place.
func TestChatRegenerates(t *testing.T) {
	app, f, v := twoTurns(t)
	ui(app, func() { test.Tap(v.rows[3].regen) })
	eventually(t, app, "the reply completes", func() bool { return v.cancel == nil && len(f.asked) == 1 })
	if got := contents(f.asked[0]); !reflect.DeepEqual(got, []string{"Tell me about foxes", "Foxes are quick.", "And owls?"}) {
		t.Fatalf("asked %q", got)
	}
	if got := contents(v.history); len(got) != 4 || got[3] != f.reply || strings.Contains(v.transcriptText(), "Owls are wise.") {
		t.Fatalf("history %q", got)
	}
}

// TestChatBranches: Branch at the first reply saves a new conversation of the turns up to it
// and shows it; the original is kept whole.
func TestChatBranches(t *testing.T) {
	app, f, v := twoTurns(t)
	ui(app, func() { test.Tap(v.rows[1].branch) })
	if len(f.convs) != 2 {
		t.Fatalf("%d saved conversations", len(f.convs))
	}
	branch := f.convs[1]
	if branch.ID == "c" || v.convID != branch.ID || branch.Title != "Branch: Tell me about foxes" ||
		!reflect.DeepEqual(contents(branch.Messages), []string{"Tell me about foxes", "Foxes are quick."}) {
		t.Fatalf("branch %+v, showing %s", branch, v.convID)
	}
	if len(f.convs[0].Messages) != 4 || len(v.history) != 2 || !strings.Contains(v.saved.Selected, "Branch: ") {
		t.Fatalf("original %d turns, showing %d, picker %q", len(f.convs[0].Messages), len(v.history), v.saved.Selected)
	}
}

// TestChatThoughtIsSaved: a reply's reasoning is saved with the conversation and opens folded.
func TestChatThoughtIsSaved(t *testing.T) {
	app, f := newTestApp(t)
	f.thinking = "A fox, then."
	replyRow(t, app, f, "Once upon a time.")
	saved := f.convs[len(f.convs)-1]
	if m := saved.Messages[1]; m.Reasoning != "A fox, then." || m.ReasoningTokens != 3 {
		t.Fatalf("saved %+v", m)
	}
	v := app.playground
	ui(app, func() { v.reset() })
	ui(app, func() { v.open(saved.ID) })
	if th := v.rows[1].thought; th == nil || th.Items[0].Open || th.Items[0].Title != "Thought for 3 tokens" {
		t.Fatalf("reopened thought %+v", th)
	}
}

// TestChatContextMeter: the meter follows the draft once typing pauses, says why when it cannot
// count, and a prompt over the window asks before it is sent.
func TestChatContextMeter(t *testing.T) {
	app, f := newTestApp(t)
	f.chat = &fakeChat{window: 30}
	v := app.playground
	ui(app, func() { app.Show("playground") })
	ui(app, func() { test.Type(v.input, "one two three") })
	eventually(t, app, "the meter counts the draft", func() bool { return v.tools.meterText() == "Context: 7 of 30 tokens" })
	if v.tools.meter.Value != 7 || v.tools.meter.Max != 30 {
		t.Fatalf("meter %v of %v", v.tools.meter.Value, v.tools.meter.Max)
	}
	counted := f.chat.counted
	ui(app, func() { test.Type(v.input, " four five six seven eight nine ten") }) // one key at a time
	eventually(t, app, "the meter counts again", func() bool { return v.tools.meterText() == "Context: 14 of 30 tokens" })
	if n := f.chat.counted - counted; n > 3 {
		t.Fatalf("typing 35 keys counted %d times: not debounced", n)
	}
	ui(app, func() { v.input.SetText(strings.Repeat("word ", 40)) })
	ui(app, func() { test.Tap(v.send) })
	warning, ok := v.tools.warning.(*dialog.ConfirmDialog)
	if !ok || len(f.asked) != 0 {
		t.Fatalf("no warning before sending 44 tokens into 30 (asked %d)", len(f.asked))
	}
	ui(app, func() { warning.Dismiss() }) // Cancel: nothing is sent, the draft stays
	if len(f.asked) != 0 || v.input.Text == "" || len(v.history) != 0 {
		t.Fatalf("cancelled, yet asked %d, input %q", len(f.asked), v.input.Text)
	}
	ui(app, func() { test.Tap(v.send) })
	ui(app, func() { v.tools.warning.(*dialog.ConfirmDialog).Confirm() })
	eventually(t, app, "sent anyway", func() bool { return v.cancel == nil && len(f.asked) == 1 })

	f.chat.err = errors.New("the tokenizer is gone")
	ui(app, func() { test.Type(v.input, "x") })
	eventually(t, app, "the meter says it cannot count", func() bool {
		return v.tools.meterText() == "Context: cannot count (the tokenizer is gone)"
	})
}

// TestChatSearchAndExport: the search narrows the saved list by text; an export's JSON reads
// back as the same conversation (imported as a new one) and its markdown has every turn.
func TestChatSearchAndExport(t *testing.T) {
	app, f, v := twoTurns(t)
	f.convs = append(f.convs, Conversation{ID: "d", Title: "Gardens", Model: "stories260K",
		Messages: []Message{{Role: "user", Content: "Grow tomatoes"}}})
	ui(app, func() { v.refreshSaved() })
	if len(v.saved.Options) != 2 {
		t.Fatalf("options %q", v.saved.Options)
	}
	ui(app, func() { test.Type(v.tools.search, "owls") })
	eventually(t, app, "the search narrows the list", func() bool {
		return len(v.saved.Options) == 1 && strings.HasPrefix(v.saved.Options[0], "Foxes · ")
	})
	if got := f.chat.searched; got[len(got)-1] != "owls" || len(got) > 2 {
		t.Fatalf("searched %q: not debounced", got)
	}

	c := v.conversation()
	c.Messages[3].Reasoning = "Owls, hm."
	c.Messages = append(c.Messages, Message{Role: "assistant", ToolCalls: []ToolCall{{ID: "call_1", Name: "look", Arguments: `{"q":`}}},
		Message{Role: "tool", ToolCallID: "call_1", Content: "nothing"})
	b, err := conversationJSON(c)
	if err != nil {
		t.Fatal(err)
	}
	back, err := parseConversationJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	c.ID = ""
	if !reflect.DeepEqual(back, c) {
		t.Fatalf("exported %+v\nread back %+v", c, back)
	}
	if _, err := parseConversationJSON([]byte(`{"title": "x"}`)); err == nil {
		t.Fatal("a JSON file that is not an export was read")
	}
	ui(app, func() {
		if err := v.importConversation(b); err != nil {
			t.Fatal(err)
		}
	})
	if len(f.convs) != 3 || v.convID == "c" || len(v.history) != 6 {
		t.Fatalf("imported: %d saved, showing %s with %d turns", len(f.convs), v.convID, len(v.history))
	}
	md := conversationMarkdown(c)
	for _, want := range []string{"# Tell me about foxes\n", "## You\n\nTell me about foxes", "## Assistant\n\n> Owls, hm.\n\nOwls are wise.",
		"Tool call `look` (call_1):\n\n```json\n{\"q\":\n```", "## Tool result call_1\n\n```\nnothing\n```"} {
		if !strings.Contains(md, want) {
			t.Errorf("the markdown lacks %q:\n%s", want, md)
		}
	}
}
