package tray

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
)

// streamHeld asks a question in the open conversation and returns once its reply's first piece
// is on screen, the rest held back by the fake's gate.
func streamHeld(t *testing.T, app *App, f *fakeController, v *playgroundView, question string) {
	t.Helper()
	f.gate = make(chan struct{})
	f.reply = "Once upon a time."
	ui(app, func() { test.Type(v.input, question) })
	ui(app, func() { test.Tap(v.send) })
	eventually(t, app, "the first piece", func() bool { return v.live != nil && v.reply != nil && v.reply.Len() > 0 })
}

func savedConv(f *fakeController, id string) Conversation {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.convs {
		if c.ID == id {
			return c
		}
	}
	return Conversation{}
}

// TestChatNewChatWhileStreaming: New chat during a reply shows an empty chat at once, ready to
// send; the stopped reply is saved into its own conversation, never painted into the new one.
func TestChatNewChatWhileStreaming(t *testing.T) {
	app, f, v := twoTurns(t)
	streamHeld(t, app, f, v, "And badgers?")
	ui(app, func() { test.Tap(v.clear) })
	ui(app, func() {
		if v.transcriptText() != "" || v.send.Disabled() || !v.stop.Disabled() || v.stats.Text != "" || v.convID != "" {
			t.Errorf("after New chat: transcript %q, send disabled %v, stop disabled %v, stats %q, conv %q",
				v.transcriptText(), v.send.Disabled(), v.stop.Disabled(), v.stats.Text, v.convID)
		}
	})
	eventually(t, app, "the stopped reply is saved in its conversation", func() bool { return len(savedConv(f, "c").Messages) == 6 })
	if got := contents(savedConv(f, "c").Messages[4:]); !reflect.DeepEqual(got, []string{"And badgers?", "Once "}) {
		t.Fatalf("the first conversation ends %q", got)
	}
	// The new chat works, and none of the old reply is in it.
	close(f.gate)
	f.gate = nil
	f.reply = "Hello there."
	ui(app, func() { test.Type(v.input, "Hi") })
	ui(app, func() { test.Tap(v.send) })
	eventually(t, app, "the new chat's reply", func() bool { return v.cancel == nil && strings.Contains(v.stats.Text, "tokens/s") })
	if got := contents(v.history); !reflect.DeepEqual(got, []string{"Hi", "Hello there."}) || strings.Contains(v.transcriptText(), "Once") {
		t.Fatalf("new chat %q, transcript %q", got, v.transcriptText())
	}
	if v.convID == "c" || len(savedConv(f, "c").Messages) != 6 || len(savedConv(f, v.convID).Messages) != 2 {
		t.Fatalf("showing %q; c has %d turns", v.convID, len(savedConv(f, "c").Messages))
	}
}

// TestChatOpenWhileStreaming: picking another saved conversation during a reply opens it; the
// reply's pieces never reach it, and what was streamed is saved where it was asked.
func TestChatOpenWhileStreaming(t *testing.T) {
	app, f, v := twoTurns(t)
	f.convs = append(f.convs, Conversation{ID: "d", Title: "Gardens", Model: "stories260K",
		Messages: []Message{{Role: "user", Content: "Grow tomatoes"}, {Role: "assistant", Content: "Water them."}}})
	ui(app, func() { v.refreshSaved() })
	streamHeld(t, app, f, v, "And badgers?")
	var gardens string
	for label, id := range v.savedID {
		if id == "d" {
			gardens = label
		}
	}
	ui(app, func() { v.saved.SetSelected(gardens) })
	close(f.gate) // were the reply still going, its pieces would come now
	eventually(t, app, "the first conversation keeps its stopped reply", func() bool { return len(savedConv(f, "c").Messages) == 6 })
	ui(app, func() {
		if v.convID != "d" || !reflect.DeepEqual(contents(v.history), []string{"Grow tomatoes", "Water them."}) ||
			strings.Contains(v.transcriptText(), "Once") || strings.Contains(v.transcriptText(), "badgers") {
			t.Errorf("showing %q: %q", v.convID, v.transcriptText())
		}
		if v.send.Disabled() || !v.stop.Disabled() || v.stats.Text != "" {
			t.Errorf("send disabled %v, stop disabled %v, stats %q", v.send.Disabled(), v.stop.Disabled(), v.stats.Text)
		}
	})
	if d := savedConv(f, "d"); len(d.Messages) != 2 {
		t.Fatalf("the conversation opened got %q", contents(d.Messages))
	}
}

// TestChatStopAfterTheReply: a Stop click after the reply ended, before the view took it, does
// not turn the finished reply's stats into "Stopped.".
func TestChatStopAfterTheReply(t *testing.T) {
	app, f := newTestApp(t)
	v := app.playground
	ui(app, func() { app.Show("playground") })
	f.gate, f.returned = make(chan struct{}), make(chan struct{})
	f.reply = "Done."
	ui(app, func() { test.Type(v.input, "Quick") })
	ui(app, func() { test.Tap(v.send) })
	eventually(t, app, "the only piece", func() bool { return v.live != nil && v.reply != nil && v.reply.Len() > 0 })
	ui(app, func() {
		close(f.gate)
		// Holding the UI, the fake's Chat returns and its end waits for the UI: a Stop click
		// now comes after the reply's end (waited for, not slept on).
		<-f.returned
		test.Tap(v.stop)
	})
	eventually(t, app, "the reply ends", func() bool { return v.cancel == nil })
	if !strings.Contains(v.stats.Text, "tokens/s") || !v.stop.Disabled() {
		t.Fatalf("stats %q, stop disabled %v", v.stats.Text, v.stop.Disabled())
	}
}

// TestChatActionsWaitForTheReply: a turn's Edit, Regenerate and Branch are disabled while a
// reply streams (a click did nothing), and come back when it ends, stopped or not.
func TestChatActionsWaitForTheReply(t *testing.T) {
	app, f, v := twoTurns(t)
	streamHeld(t, app, f, v, "And badgers?")
	ui(app, func() {
		for i, r := range v.rows {
			for _, b := range []interface{ Disabled() bool }{r.edit, r.regen, r.branch} {
				if b != nil && !reflect.ValueOf(b).IsNil() && !b.Disabled() {
					t.Errorf("row %d has an action enabled while the reply streams", i)
				}
			}
		}
	})
	ui(app, func() { test.Tap(v.stop) })
	eventually(t, app, "stopped", func() bool { return v.cancel == nil })
	ui(app, func() {
		if len(v.rows) != 6 || v.rows[0].edit.Disabled() || v.rows[3].regen.Disabled() || v.rows[4].edit.Disabled() || v.rows[5].branch.Disabled() {
			t.Errorf("%d rows; actions still disabled after the reply", len(v.rows))
		}
	})
	ui(app, func() { test.Tap(v.rows[5].regen) })
	eventually(t, app, "regenerating", func() bool { return v.live != nil && v.reply != nil && v.reply.Len() > 0 })
	ui(app, func() {
		if !v.rows[0].edit.Disabled() {
			t.Error("Edit enabled while a regenerated reply streams")
		}
	})
	close(f.gate)
	eventually(t, app, "regenerated", func() bool { return v.cancel == nil })
	ui(app, func() {
		if v.rows[0].edit.Disabled() || v.rows[len(v.rows)-1].regen.Disabled() {
			t.Error("actions disabled after the regenerated reply")
		}
	})
}

// TestChatHugeReply: a saved reply with a 2,000 × 50 table and a 5 MB code block, and a 5 MB
// question, open drawing a bounded part of each, with notes saying what was left out; Copy
// still copies the whole code.
func TestChatHugeReply(t *testing.T) {
	var table, code strings.Builder
	for r := 0; r <= 2000; r++ {
		for c := 0; c < 50; c++ {
			switch {
			case r == 0:
				fmt.Fprintf(&table, "| h%d ", c)
			default:
				fmt.Fprintf(&table, "| r%dc%d ", r, c)
			}
		}
		table.WriteString("|\n")
		if r == 0 {
			table.WriteString(strings.Repeat("|---", 50) + "|\n")
		}
	}
	for i := 0; code.Len() < 5<<20; i++ {
		fmt.Fprintf(&code, "x%d = %d  # a line of generated code\n", i, i)
	}
	src := code.String()
	app, f := newTestApp(t)
	f.convs = []Conversation{{ID: "big", Title: "Big", Model: "stories260K", Messages: []Message{
		{Role: "user", Content: strings.Repeat("a long question ", 330000)},
		{Role: "assistant", Content: table.String() + "\n```python\n" + src + "```\nThe end."},
		{Role: "assistant", Content: strings.Repeat("Step:\n```\nx\n```\n", 5000)},
	}}}
	v := app.playground
	ui(app, func() { app.Show("playground"); v.open("big") })
	row := v.rows[1]
	var grid *fyne.Container
	walkObjects(row.text, func(o fyne.CanvasObject) bool {
		if c, ok := o.(*fyne.Container); ok && len(c.Objects) > 50 && grid == nil {
			grid = c
		}
		return true
	})
	text := row.plainText()
	if grid == nil || len(grid.Objects) != (maxTableRows+1)*maxTableCols {
		t.Fatalf("the table drew %v cells", grid)
	}
	last, next := fmt.Sprintf("r%dc%d\n", maxTableRows, maxTableCols-1), fmt.Sprintf("r%dc0\n", maxTableRows+1)
	if !strings.Contains(text, fmt.Sprintf("Showing %d of 2000 rows and %d of 50 columns", maxTableRows, maxTableCols)) ||
		!strings.Contains(text, last) || strings.Contains(text, next) || strings.Contains(text, fmt.Sprintf("c%d\n", maxTableCols)) {
		t.Errorf("the table's note or cells: %.300q", text)
	}
	if len(text) > 6*maxTextBytes || !strings.Contains(text, "more lines not shown: Copy copies the whole block") || !strings.Contains(text, "The end.") {
		t.Errorf("the reply shows %d bytes: %.200q … %.300q", len(text), text, text[max(0, len(text)-300):])
	}
	ui(app, func() { test.Tap(row.copies[0]) })
	if got := app.fyne.Clipboard().Content(); got != strings.TrimSuffix(src, "\n") {
		t.Errorf("Copy copied %d bytes of %d", len(got), len(src))
	}
	if blocks := v.rows[2].plainText(); !strings.Contains(blocks, "more blocks not shown") || len(v.rows[2].copies) > maxReplyBlock {
		t.Errorf("10,000 blocks drew %d code blocks", len(v.rows[2].copies))
	}
	if q := v.rows[0].plainText(); len(q) > 2*maxTextBytes || !strings.Contains(q, "export the conversation to read it all") {
		t.Errorf("the question shows %d bytes", len(q))
	}
}

// TestChatMeterSaysFilesAreNotCounted: the context count is of text only, so with images in
// the conversation the meter says how many files it left out.
func TestChatMeterSaysFilesAreNotCounted(t *testing.T) {
	app, f := newTestApp(t)
	f.convs = []Conversation{{ID: "p", Title: "Pics", Model: "stories260K", Messages: []Message{
		{Role: "user", Content: "What is this?", Attachments: []Attachment{{Name: "a.png", MIME: "image/png"}, {Name: "b.png", MIME: "image/png"}}},
		{Role: "assistant", Content: "Two foxes."},
	}}}
	v := app.playground
	ui(app, func() { app.Show("playground"); v.open("p") })
	eventually(t, app, "the meter counts", func() bool { return v.tools.meterText() == "Context: 13 of 2048 tokens + 2 files not counted" })
	ui(app, func() { v.reset() })
	eventually(t, app, "no files, no note", func() bool { return v.tools.meterText() == "Context: 0 of 2048 tokens" })
}

// TestChatReopenWhileStopping: New chat during a reply, then the same conversation opened again
// before the stopped reply was saved: the conversation on screen gets the stopped reply too, so
// the next question is asked after it and saving that one keeps it (it was written over).
func TestChatReopenWhileStopping(t *testing.T) {
	app, f, v := twoTurns(t)
	ui(app, func() { v.refreshSaved() })
	streamHeld(t, app, f, v, "And badgers?")
	ui(app, func() {
		test.Tap(v.clear) // the reply is stopped; its end waits for the UI, held here
		for label, id := range v.savedID {
			if id == "c" {
				v.saved.SetSelected(label)
			}
		}
	})
	eventually(t, app, "the stopped reply is saved", func() bool { return len(savedConv(f, "c").Messages) == 6 })
	eventually(t, app, "the stopped reply on screen", func() bool {
		return v.convID == "c" && strings.Contains(v.transcriptText(), "Once") && strings.Contains(v.transcriptText(), "And badgers?")
	})
	close(f.gate)
	f.gate = nil
	f.reply = "Badgers dig."
	ui(app, func() { test.Type(v.input, "More?") })
	ui(app, func() { test.Tap(v.send) })
	eventually(t, app, "the next reply", func() bool { return v.cancel == nil && strings.Contains(v.stats.Text, "tokens/s") })
	want := []string{"Tell me about foxes", "Foxes are quick.", "And owls?", "Owls are wise.", "And badgers?", "Once ", "More?", "Badgers dig."}
	if got := contents(savedConv(f, "c").Messages); !reflect.DeepEqual(got, want) {
		t.Fatalf("saved c: %q", got)
	}
}

// TestChatHugeTableCell: a table whose one cell holds a megabyte (a model's runaway row) draws
// that cell cut, with the table's note saying so; the export keeps the whole cell.
func TestChatHugeTableCell(t *testing.T) {
	huge := strings.Repeat("word ", 200000)
	reply := "| name | notes |\n|---|---|\n| fox | " + huge + "|\n| owl | wise |\n"
	app, f := newTestApp(t)
	f.convs = []Conversation{{ID: "t", Title: "Table", Model: "stories260K", Messages: []Message{
		{Role: "user", Content: "A table"}, {Role: "assistant", Content: reply}}}}
	v := app.playground
	ui(app, func() { app.Show("playground"); v.open("t") })
	text := v.rows[1].plainText()
	if len(text) > 4*maxCellBytes || !strings.Contains(text, "long cells cut") || !strings.Contains(text, "wise") {
		t.Fatalf("the table shows %d bytes: %.300q", len(text), text)
	}
	if md := conversationMarkdown(v.conversation()); !strings.Contains(md, strings.TrimSpace(huge)) {
		t.Fatal("the export lost the long cell")
	}
}

// TestChatQuitWhileStreaming: quitting during a reply (the confirmation says it ends where it
// is) saves the question and the reply as far as it came; its end, dropped after Quit, did not.
func TestChatQuitWhileStreaming(t *testing.T) {
	app, f, v := twoTurns(t)
	streamHeld(t, app, f, v, "And badgers?")
	ui(app, app.Quit)
	if got := contents(savedConv(f, "c").Messages); !reflect.DeepEqual(got[min(4, len(got)):], []string{"And badgers?", "Once "}) {
		t.Fatalf("saved at Quit: %q", got)
	}
	close(f.gate)
}

// TestChatNewChatBeforeTheFirstPiece: New chat while the model still reads the prompt (no
// text yet) keeps the question in its conversation; nothing the user sent is lost.
func TestChatNewChatBeforeTheFirstPiece(t *testing.T) {
	app, f, v := twoTurns(t)
	f.prefill = make(chan struct{})
	defer close(f.prefill)
	f.reply = "Once upon a time."
	ui(app, func() { test.Type(v.input, "And badgers?") })
	ui(app, func() { test.Tap(v.send) })
	eventually(t, app, "the reply under way", func() bool { return v.turn != nil })
	ui(app, func() { test.Tap(v.clear) })
	eventually(t, app, "the question saved in its conversation", func() bool { return len(savedConv(f, "c").Messages) == 5 })
	if got := contents(savedConv(f, "c").Messages[4:]); !reflect.DeepEqual(got, []string{"And badgers?"}) {
		t.Fatalf("the first conversation ends %q", got)
	}
}
