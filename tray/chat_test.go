package tray

import (
	"fmt"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// replyRow sends a question and waits for the fake's reply; it returns the reply's row.
func replyRow(t *testing.T, app *App, f *fakeController, reply string) *turnRow {
	t.Helper()
	f.reply = reply
	v := app.playground
	ui(app, func() { app.Show("playground") })
	ui(app, func() { test.Type(v.input, "Show me") })
	ui(app, func() { test.Tap(v.send) })
	eventually(t, app, "the reply completes", func() bool { return v.cancel == nil && strings.Contains(v.stats.Text, "tokens/s") })
	return v.rows[len(v.rows)-1]
}

// segmentsOf are every RichText segment under o, paragraphs and lists opened.
func segmentsOf(o fyne.CanvasObject) []widget.RichTextSegment {
	var out []widget.RichTextSegment
	var open func([]widget.RichTextSegment)
	open = func(segs []widget.RichTextSegment) {
		for _, s := range segs {
			out = append(out, s)
			switch t := s.(type) {
			case *widget.ParagraphSegment:
				open(t.Texts)
			case *widget.ListSegment:
				open(t.Items)
			}
		}
	}
	walkObjects(o, func(o fyne.CanvasObject) bool {
		if rt, ok := o.(*widget.RichText); ok {
			open(rt.Segments)
		}
		return true
	})
	return out
}

// TestChatRendersMarkdown: a reply's heading, list, bold, link and table are drawn as such, its
// code block is highlighted with the theme's colours, and Copy puts the code on the clipboard.
func TestChatRendersMarkdown(t *testing.T) {
	app, f := newTestApp(t)
	row := replyRow(t, app, f, "# Plan\n\n- **one**\n- two\n\nSee [the docs](https://example.com/docs).\n\n"+
		"| Name | Size |\n|------|-----:|\n| fox | 3 |\n| owl | `2` |\n\n```go\nfunc main() { println(\"hi\") } // go\n```\nDone.")
	var heading, list, bold, link bool
	for _, s := range segmentsOf(row.text) {
		switch t := s.(type) {
		case *widget.TextSegment:
			heading = heading || t.Text == "Plan" && t.Style.SizeName == theme.SizeNameHeadingText
			bold = bold || t.Text == "one" && t.Style.TextStyle.Bold
		case *widget.ListSegment:
			list = len(t.Items) == 2
		case *widget.HyperlinkSegment:
			link = t.URL.String() == "https://example.com/docs" && t.Text == "the docs"
		}
	}
	if !heading || !list || !bold || !link {
		t.Fatalf("heading %v, list %v, bold %v, link %v: %q", heading, list, bold, link, row.plainText())
	}
	var grid *fyne.Container
	walkObjects(row.text, func(o fyne.CanvasObject) bool {
		if c, ok := o.(*fyne.Container); ok && len(c.Objects) == 6 {
			grid = c
		}
		return true
	})
	if grid == nil {
		t.Fatalf("no 2×3 table grid in %q", row.plainText())
	}
	if head, ok := segmentsOf(grid.Objects[0])[0].(*widget.TextSegment); !ok || head.Text != "Name" || !head.Style.TextStyle.Bold {
		t.Error("the table's header is not bold")
	}
	if cell := grid.Objects[5].(*widget.RichText).String(); cell != "2" {
		t.Errorf("the last cell reads %q", cell)
	}
	colours := map[fyne.ThemeColorName]bool{}
	for _, s := range segmentsOf(row.text) {
		if ts, ok := s.(*widget.TextSegment); ok && ts.Style.TextStyle.Monospace && ts.Style.Inline {
			colours[ts.Style.ColorName] = true
		}
	}
	if !colours[theme.ColorNamePrimary] || !colours[theme.ColorNameSuccess] || !colours[theme.ColorNamePlaceHolder] {
		t.Fatalf("the Go code's keyword, string and comment colours: %v", colours)
	}
	if len(row.copies) != 1 {
		t.Fatalf("%d Copy buttons", len(row.copies))
	}
	ui(app, func() { test.Tap(row.copies[0]) })
	if got := app.fyne.Clipboard().Content(); got != "func main() { println(\"hi\") } // go" || row.copies[0].Text != "Copied" {
		t.Fatalf("copied %q (button %q)", got, row.copies[0].Text)
	}
	if !strings.HasSuffix(strings.TrimSpace(row.plainText()), "Done.") {
		t.Fatalf("the prose after the code is lost: %q", row.plainText())
	}
}

// TestChatHostileMarkdown: HTML shows as text, only http(s) links are links, and an image is
// its name in brackets, never fetched.
func TestChatHostileMarkdown(t *testing.T) {
	app, f := newTestApp(t)
	row := replyRow(t, app, f, "<script>alert(1)</script> [run](javascript:alert(1)) [secrets](file:///etc/passwd) "+
		"[ok](http://example.com) ![tracker](https://evil.example/pixel.png) <img src=x onerror=alert(1)>")
	text := row.plainText()
	for _, want := range []string{"<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "run", "secrets", "[image: https://evil.example/pixel.png]"} {
		if !strings.Contains(text, want) {
			t.Errorf("%q is not shown as text: %q", want, text)
		}
	}
	var links []string
	for _, s := range segmentsOf(row.text) {
		switch seg := s.(type) {
		case *widget.HyperlinkSegment:
			links = append(links, seg.URL.String())
		case *widget.ImageSegment:
			t.Errorf("an image segment for %v", seg.Source)
		}
	}
	if len(links) != 1 || links[0] != "http://example.com" {
		t.Fatalf("clickable links %v", links)
	}
}

// TestChatUnterminatedFence: a code block still streaming is drawn as code as it grows, and
// the prose after its closing fence is prose.
func TestChatUnterminatedFence(t *testing.T) {
	for _, tc := range []struct {
		src          string
		code, closed bool
		after        string
	}{
		{"Here:\n```py", true, false, ""},
		{"Here:\n```py\ndef f(x):\n    return x *", true, false, ""},
		{"Here:\n```py\ndef f(x):\n    return x * 2\n```\nThat doubles", true, true, "That doubles"},
	} {
		blocks := splitMarkdown(tc.src)
		if len(blocks) < 2 || blocks[0].kind != mdProse || blocks[1].kind != mdCode || blocks[1].lang != "py" || blocks[1].closed != tc.closed {
			t.Fatalf("%q: %+v", tc.src, blocks)
		}
		if tc.after != "" && (len(blocks) != 3 || blocks[2].text != tc.after) {
			t.Fatalf("%q: after the code %+v", tc.src, blocks)
		}
		if view := markdownView(tc.src+"▌", func(string) {}); len(copyButtons(view)) != 1 {
			t.Fatalf("%q: not drawn as one code block", tc.src)
		}
	}
	// Streamed: held after its first piece, the open fence is already a code block (the cursor
	// inside it); the finished reply has its code closed and the prose after it.
	app, f := newTestApp(t)
	f.gate = make(chan struct{})
	f.reply = "```py\ndef f(x):\n    return x * 2\n```\nThat doubles"
	v := app.playground
	ui(app, func() { test.Type(v.input, "Double it") })
	ui(app, func() { test.Tap(v.send) })
	eventually(t, app, "the first piece", func() bool { return v.live != nil && v.reply.Len() > 0 })
	ui(app, func() {
		if len(v.live.copies) != 1 || !strings.Contains(v.live.plainText(), "def\n \n▌") {
			t.Errorf("mid-stream the open fence is %q", v.live.plainText())
		}
	})
	close(f.gate)
	eventually(t, app, "the reply completes", func() bool { return v.cancel == nil })
	row := v.rows[len(v.rows)-1]
	if len(row.copies) != 1 || !strings.Contains(row.plainText(), "That doubles") {
		t.Fatalf("the finished reply %q", row.plainText())
	}
}

// TestChatToolCalls: tool calls and results show as cards; arguments that are not JSON are
// shown as written, said to be broken, never parsed.
func TestChatToolCalls(t *testing.T) {
	app, f := newTestApp(t)
	f.convs = []Conversation{{ID: "w", Title: "Weather", Model: "stories260K", Messages: []Message{
		{Role: "user", Content: "Rain in Oslo?"},
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "call_1", Name: "weather", Arguments: `{"city":"Oslo"}`},
			{ID: "call_2", Name: "weather", Arguments: `{"city": <b>Oslo`}}},
		{Role: "tool", ToolCallID: "call_1", Content: `{"rain": true}`},
		{Role: "assistant", Content: "Yes."},
	}}}
	v := app.playground
	ui(app, func() { v.open("w") })
	calls, result := v.rows[1].plainText(), v.rows[2].plainText()
	for _, want := range []string{"Called weather · call_1", "{\n  \"city\": \"Oslo\"\n}",
		"Called weather · call_2 (arguments are not valid JSON)", `{"city": <b>Oslo`} {
		if !strings.Contains(calls, want) {
			t.Errorf("the calls' cards lack %q: %q", want, calls)
		}
	}
	if !strings.Contains(result, "Tool result") || !strings.Contains(result, "Result of call_1") || !strings.Contains(result, `{"rain": true}`) {
		t.Errorf("the result's card %q", result)
	}
	// The next question sends the calls back with the history.
	ui(app, func() { test.Type(v.input, "And tomorrow?") })
	ui(app, func() { test.Tap(v.send) })
	eventually(t, app, "the reply completes", func() bool { return v.cancel == nil && len(f.asked) == 1 })
	if sent := f.asked[0]; len(sent[1].ToolCalls) != 2 || sent[2].ToolCallID != "call_1" {
		t.Fatalf("sent %+v", sent)
	}
}

// longChat is a saved conversation of n turns.
func longChat(n int) Conversation {
	c := Conversation{ID: "long", Title: "Long", Model: "stories260K"}
	for i := 0; i < n; i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		c.Messages = append(c.Messages, Message{Role: role, Content: fmt.Sprintf("turn %d with **bold** text", i)})
	}
	return c
}

// TestChatTenThousandMessages: a 10,000-turn chat opens drawing one window of rows, a reply
// added to it draws its own rows only, and Show earlier draws one window more.
func TestChatTenThousandMessages(t *testing.T) {
	app, f := newTestApp(t)
	f.convs = []Conversation{longChat(10000)}
	f.chat = &fakeChat{window: 1 << 20} // a window it fits (else Send warns first)
	v := app.playground
	ui(app, func() { v.open("long") })
	if v.rowsBuilt != transcriptWindow || len(v.turns.Objects) != transcriptWindow || !v.earlier.Visible() ||
		v.earlier.Text != fmt.Sprintf("Show earlier (%d more)", 10000-transcriptWindow) {
		t.Fatalf("opening drew %d rows (%d shown), earlier %q", v.rowsBuilt, len(v.turns.Objects), v.earlier.Text)
	}
	if !strings.Contains(v.transcriptText(), "turn 9998 with **bold** text") || strings.Contains(v.transcriptText(), "turn 9959 ") {
		t.Fatal("the window is not the latest turns")
	}
	before := v.rowsBuilt
	f.reply = "three words here"
	ui(app, func() { test.Type(v.input, "one more") })
	ui(app, func() { test.Tap(v.send) })
	eventually(t, app, "the reply completes", func() bool { return v.cancel == nil && len(v.history) == 10002 })
	// The question, the reply, and the live row once a piece (plus the empty start).
	if built := v.rowsBuilt - before; built > 2+len(strings.Fields(f.reply))+1 {
		t.Fatalf("appending a turn drew %d rows", built)
	}
	if len(v.turns.Objects) != transcriptWindow+2 {
		t.Fatalf("%d rows shown after the reply", len(v.turns.Objects))
	}
	before = v.rowsBuilt
	ui(app, func() { test.Tap(v.earlier) })
	if v.rowsBuilt-before != transcriptWindow || !strings.Contains(v.transcriptText(), "turn 9959 ") {
		t.Fatalf("Show earlier drew %d rows", v.rowsBuilt-before)
	}
}
