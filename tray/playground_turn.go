package tray

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// turnRow is one turn as the transcript draws it: who spoke, with the turn's actions, then
// its attachments, folded thought, tool calls and text.
type turnRow struct {
	obj                 fyne.CanvasObject
	edit, regen, branch *widget.Button // nil where the turn has no such action
	thought             *widget.Accordion
	text                fyne.CanvasObject   // the rendered markdown (nil for none)
	copies              []*widget.Button    // the code blocks' Copy buttons
	atts                *attachmentsSegment // the turn's attachments (nil for none)
	attsRow             fyne.CanvasObject   // and their chips
}

// newTurnRow draws history turn i; live is the reply being streamed (no actions yet).
func (v *playgroundView) newTurnRow(i int, m Message, live bool) *turnRow {
	v.rowsBuilt++
	r := &turnRow{}
	who, color := "You", theme.ColorNameForeground
	switch m.Role {
	case "assistant":
		who, color = v.modelID(), theme.ColorNamePrimary
		if who == "" {
			who = "Assistant"
		}
	case "tool":
		who, color = "Tool result", theme.ColorNamePlaceHolder
	}
	name := widget.NewRichText(&widget.TextSegment{Text: who,
		Style: widget.RichTextStyle{ColorName: color, TextStyle: fyne.TextStyle{Bold: true}}})
	header := container.NewHBox(name, layout.NewSpacer())
	action := func(label string, icon fyne.Resource, do func(int)) *widget.Button {
		b := widget.NewButtonWithIcon(label, icon, func() { do(i) })
		b.Importance = widget.LowImportance
		header.Add(b)
		return b
	}
	if !live {
		switch m.Role {
		case "user":
			r.edit = action("Edit", theme.DocumentCreateIcon(), v.editTurn)
		case "assistant":
			r.regen = action("Regenerate", theme.ViewRefreshIcon(), v.regenerate)
		}
		r.branch = action("Branch", theme.ContentCopyIcon(), v.branchAt)
	}
	box := container.NewVBox(header)
	if len(m.Attachments) > 0 {
		// Their own row, as tall as the chips: inside a RichText they overlapped the turn.
		r.atts = &attachmentsSegment{bar: v.attach, atts: m.Attachments}
		r.attsRow = r.atts.Visual()
		box.Add(r.attsRow)
	}
	if m.Reasoning != "" {
		r.thought = widget.NewAccordion(widget.NewAccordionItem(thoughtTitle(m, live), thoughtView(m.Reasoning)))
		box.Add(r.thought)
	}
	for _, tc := range m.ToolCalls {
		box.Add(toolCallCard(tc))
	}
	text := m.Content
	if live {
		text += "▌"
	}
	switch {
	case m.Role == "tool":
		box.Add(toolResultCard(m))
	case m.Role == "user":
		// A user's words are shown as typed: markdown is for the model's replies.
		rt, note := plainTurnText(text, func(s string) widget.RichTextSegment {
			return &widget.TextSegment{Text: s, Style: widget.RichTextStyleParagraph}
		}, fyne.TextWrapWord)
		r.text = rt
		box.Add(rt)
		if note != nil {
			box.Add(note)
		}
	case text != "":
		r.text = markdownView(text, v.copyCode)
		r.copies = copyButtons(r.text)
		box.Add(r.text)
	}
	r.obj = box
	r.enableActions(v.turn == nil)
	return r
}

// enableActions turns the turn's Edit, Regenerate and Branch on or off (off while a reply
// streams: they would change the history it is answering).
func (r *turnRow) enableActions(on bool) {
	for _, b := range []*widget.Button{r.edit, r.regen, r.branch} {
		switch {
		case b == nil:
		case on:
			b.Enable()
		default:
			b.Disable()
		}
	}
}

// thoughtTitle is the folded thought's title: how long it was, when known.
func thoughtTitle(m Message, live bool) string {
	switch {
	case live && m.Content == "":
		return "Thinking…"
	case m.ReasoningTokens > 0:
		return fmt.Sprintf("Thought for %d tokens", m.ReasoningTokens)
	}
	return fmt.Sprintf("Thought (%d words)", len(strings.Fields(m.Reasoning)))
}

func thoughtView(text string) fyne.CanvasObject {
	rt, note := plainTurnText(strings.TrimSpace(text), func(s string) widget.RichTextSegment {
		return &widget.TextSegment{Text: s, Style: widget.RichTextStyle{ColorName: theme.ColorNamePlaceHolder, TextStyle: fyne.TextStyle{Italic: true}}}
	}, fyne.TextWrapWord)
	if note == nil {
		return rt
	}
	return container.NewVBox(rt, note)
}

// toolCallCard is a compact card for one call: the tool's name and id, then its arguments,
// indented when they are JSON and shown as written (with a note) when not.
func toolCallCard(tc ToolCall) fyne.CanvasObject {
	title := "Called " + tc.Name
	if tc.ID != "" {
		title += " · " + tc.ID
	}
	args := tc.Arguments
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, []byte(args), "", "  "); err == nil {
		args = pretty.String()
	} else if strings.TrimSpace(args) != "" {
		title += " (arguments are not valid JSON)"
	}
	return card(title, theme.ComputerIcon(), args)
}

// toolResultCard is a tool turn: what the call it answers returned.
func toolResultCard(m Message) fyne.CanvasObject {
	title := "Result"
	if m.ToolCallID != "" {
		title += " of " + m.ToolCallID
	}
	return card(title, theme.ConfirmIcon(), m.Content)
}

// card is a small boxed title over monospace text, always text: nothing in it is parsed.
func card(title string, icon fyne.Resource, body string) fyne.CanvasObject {
	head := container.NewHBox(widget.NewIcon(icon), widget.NewLabelWithStyle(title, fyne.TextAlignLeading, fyne.TextStyle{Bold: true}))
	content := container.NewVBox(head)
	if body != "" {
		rt, note := plainTurnText(body, func(s string) widget.RichTextSegment { return codeSegment(s, theme.ColorNameForeground) }, fyne.TextWrapBreak)
		content.Add(rt)
		if note != nil {
			content.Add(note)
		}
	}
	bg := canvas.NewRectangle(theme.Color(theme.ColorNameInputBackground))
	bg.StrokeColor = theme.Color(theme.ColorNameSeparator)
	bg.StrokeWidth = 1
	bg.CornerRadius = theme.Size(theme.SizeNameInputRadius)
	return container.NewStack(bg, content)
}

// copyButtons are the Copy buttons of a rendered reply's code blocks, in order.
func copyButtons(o fyne.CanvasObject) []*widget.Button {
	var out []*widget.Button
	walkObjects(o, func(o fyne.CanvasObject) bool {
		if b, ok := o.(*widget.Button); ok && (b.Text == "Copy" || b.Text == "Copied") {
			out = append(out, b)
		}
		return true
	})
	return out
}

// walkObjects calls fn on o and, while fn returns true, everything inside its containers and
// accordions.
func walkObjects(o fyne.CanvasObject, fn func(fyne.CanvasObject) bool) {
	if !fn(o) {
		return
	}
	switch t := o.(type) {
	case *fyne.Container:
		for _, c := range t.Objects {
			walkObjects(c, fn)
		}
	case *widget.Accordion:
		for _, it := range t.Items {
			walkObjects(it.Detail, fn)
		}
	}
}

// plainText is what the row shows, one piece a line (tests, and the transcript's text).
func (r *turnRow) plainText() string {
	var b strings.Builder
	walkObjects(r.obj, func(o fyne.CanvasObject) bool {
		switch t := o.(type) {
		case *widget.RichText:
			for _, s := range t.Segments {
				b.WriteString(s.Textual())
				b.WriteString("\n")
			}
		case *widget.Label:
			b.WriteString(t.Text + "\n")
		case *widget.Accordion:
			for _, it := range t.Items {
				b.WriteString(it.Title + "\n")
			}
		}
		if r.attsRow != nil && o == r.attsRow {
			b.WriteString(r.atts.Textual() + "\n")
			return false
		}
		return true
	})
	return b.String()
}
