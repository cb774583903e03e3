package tray

import (
	"context"
	"fmt"
	"image"
	"strconv"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// playgroundView is the Playground tab: a multi-turn chat with a chosen model that streams the
// reply as it arrives, with Stop, and the speed and cached tokens of each reply.
type playgroundView struct {
	app         *App
	model       *widget.Select
	system      *widget.Entry
	temperature *widget.Entry
	maxTokens   *widget.Entry
	transcript  *widget.RichText
	scroll      *container.Scroll
	input       *pasteEntry
	attach      *attachBar
	send, stop  *widget.Button
	clear       *widget.Button
	stats       *widget.Label

	saved   *widget.Select // the saved conversations
	savedID map[string]string
	// models are the picker's models by label: a model that sees or hears says so after its
	// id ("llava (vision)").
	models  map[string]Model
	convID  string // the conversation being shown ("" until its first reply)
	history []Message
	reply   *strings.Builder
	thought strings.Builder // the reasoning of the reply being streamed
	cancel  context.CancelFunc
	content fyne.CanvasObject
}

func newPlaygroundView(a *App) *playgroundView {
	v := &playgroundView{app: a}
	v.model = widget.NewSelect(nil, func(string) { v.attach.setModel(v.chosen()) })
	v.model.PlaceHolder = "Choose a model"
	v.system = widget.NewMultiLineEntry()
	v.system.SetPlaceHolder("System prompt (optional)")
	v.system.SetMinRowsVisible(2)
	v.temperature = widget.NewEntry()
	v.temperature.SetText("0.8")
	v.maxTokens = widget.NewEntry()
	v.maxTokens.SetText("256")
	v.transcript = widget.NewRichText()
	v.transcript.Wrapping = fyne.TextWrapWord
	v.scroll = container.NewVScroll(v.transcript)
	v.input = newPasteEntry()
	v.input.SetPlaceHolder("Write a message, then Send")
	v.input.SetMinRowsVisible(3)
	v.stats = widget.NewLabel("")
	v.attach = newAttachBar(a, v.stats.SetText)
	v.input.onPaste = v.paste
	v.send = widget.NewButtonWithIcon("Send", theme.MailSendIcon(), v.ask)
	v.send.Importance = widget.HighImportance
	v.stop = widget.NewButtonWithIcon("Stop", theme.MediaStopIcon(), func() {
		if v.cancel != nil {
			v.cancel()
		}
	})
	v.stop.Disable()
	v.clear = widget.NewButtonWithIcon("New chat", theme.ContentClearIcon(), v.reset)

	v.saved = widget.NewSelect(nil, func(label string) {
		if id := v.savedID[label]; id != "" && id != v.convID {
			v.open(id)
		}
	})
	v.saved.PlaceHolder = "Saved conversations"
	settings := widget.NewForm(
		widget.NewFormItem("Conversation", v.saved),
		widget.NewFormItem("Model", v.model),
		widget.NewFormItem("System", v.system),
		// One row for both: the transcript keeps the height (an image turn is tall).
		widget.NewFormItem("Temperature", container.NewGridWithColumns(2, v.temperature,
			container.NewBorder(nil, nil, widget.NewLabelWithStyle("Max tokens", fyne.TextAlignTrailing, fyne.TextStyle{Bold: true}), nil, v.maxTokens))),
	)
	bottom := container.NewVBox(widget.NewSeparator(), v.attach.row, v.input,
		container.NewBorder(nil, nil, v.stats, container.NewHBox(v.clear, v.stop, v.send)))
	v.content = container.NewBorder(container.NewVBox(
		widget.NewLabelWithStyle("Playground", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		settings, widget.NewSeparator()), bottom, nil, nil, v.scroll)
	return v
}

// refreshSaved lists the saved conversations (called off the UI goroutine's hot path: one read).
func (v *playgroundView) refreshSaved() {
	convs := v.app.c.Conversations()
	v.savedID = map[string]string{}
	var labels []string
	selected := ""
	for _, c := range convs {
		label := fmt.Sprintf("%s · %s · %s", c.Title, c.Model, c.Updated)
		v.savedID[label] = c.ID
		labels = append(labels, label)
		if c.ID == v.convID {
			selected = label
		}
	}
	v.saved.Options = labels
	v.saved.Selected = selected
	v.saved.Refresh()
}

// open shows a saved conversation, ready to continue.
func (v *playgroundView) open(id string) {
	if v.cancel != nil {
		return
	}
	c, err := v.app.c.OpenConversation(id)
	if err != nil {
		v.stats.SetText("Cannot open it: " + err.Error())
		return
	}
	v.convID, v.history, v.reply = c.ID, c.Messages, nil
	v.system.SetText(c.System)
	if c.Model != "" {
		v.selectModel(c.Model)
	}
	v.attach.thumbs = map[*byte]image.Image{}
	v.stats.SetText("")
	v.render()
}

// save stores the conversation after a reply; its title is the first question.
func (v *playgroundView) save() {
	if len(v.history) == 0 {
		return
	}
	if v.convID == "" {
		v.convID = fmt.Sprintf("conv-%d", time.Now().UnixNano())
	}
	title := v.history[0].Content
	if r := []rune(title); len(r) > 40 {
		title = string(r[:40]) + "…"
	}
	if title == "" && len(v.history[0].Attachments) > 0 {
		title = v.history[0].Attachments[0].Name
	}
	c := Conversation{ID: v.convID, Title: strings.ReplaceAll(title, "\n", " "), Model: v.modelID(),
		System: v.system.Text, Messages: append([]Message(nil), v.history...)}
	if err := v.app.c.SaveConversation(c); err != nil {
		v.stats.SetText(v.stats.Text + " (not saved: " + err.Error() + ")")
	}
	v.refreshSaved()
}

// ask sends the input as the next user turn and streams the reply.
func (v *playgroundView) ask() {
	text := strings.TrimSpace(v.input.Text)
	if text == "" && len(v.attach.pending) == 0 || v.cancel != nil {
		return
	}
	if v.modelID() == "" {
		v.stats.SetText("Choose a model first.")
		return
	}
	settings, err := v.settings()
	if err != nil {
		v.stats.SetText(err.Error())
		return
	}
	v.history = append(v.history, Message{Role: "user", Content: text, Attachments: v.attach.take()})
	msgs := append([]Message(nil), v.history...)
	if sys := strings.TrimSpace(v.system.Text); sys != "" {
		msgs = append([]Message{{Role: "system", Content: sys}}, msgs...)
	}
	v.input.SetText("")
	v.reply = &strings.Builder{}
	v.thought.Reset()
	ctx, cancel := context.WithCancel(context.Background())
	v.cancel = cancel
	v.send.Disable()
	v.stop.Enable()
	v.stats.SetText("Generating…")
	v.render()
	go func() {
		stats, err := v.app.c.Chat(ctx, settings, msgs, func(piece Piece) {
			v.app.do(func() {
				v.thought.WriteString(piece.Reasoning)
				v.reply.WriteString(piece.Text)
				v.render()
			})
		})
		v.app.do(func() { v.finish(stats, err, ctx.Err() != nil) })
	}()
}

func (v *playgroundView) settings() (ChatSettings, error) {
	s := ChatSettings{Model: v.modelID()}
	t, err := strconv.ParseFloat(strings.TrimSpace(v.temperature.Text), 64)
	if err != nil || t < 0 || t > 2 {
		return s, fmt.Errorf("temperature must be a number from 0 to 2")
	}
	n, err := strconv.Atoi(strings.TrimSpace(v.maxTokens.Text))
	if err != nil || n < 1 {
		return s, fmt.Errorf("max tokens must be a whole number above 0")
	}
	s.Temperature, s.MaxTokens = t, n
	return s, nil
}

// finish ends a reply: it joins the history, or shows why it stopped.
func (v *playgroundView) finish(stats ChatStats, err error, stopped bool) {
	text := v.reply.String()
	v.cancel = nil
	v.send.Enable()
	v.stop.Disable()
	switch {
	case stopped:
		v.stats.SetText("Stopped.")
	case err != nil:
		v.stats.SetText("Error: " + err.Error())
	default:
		v.stats.SetText(fmt.Sprintf("%d tokens · %.1f tokens/s · %d of %d prompt tokens cached · %s",
			stats.CompletionTokens, stats.TokensPerSecond, stats.CachedTokens, stats.PromptTokens, stats.FinishReason))
	}
	if text != "" {
		v.history = append(v.history, Message{Role: "assistant", Content: text, Reasoning: v.thought.String()})
	} else if err != nil || stopped {
		// The question got no answer: let it be asked again, its text and files back in place.
		asked := v.history[len(v.history)-1]
		v.history = v.history[:len(v.history)-1]
		if v.input.Text == "" {
			v.input.SetText(asked.Content)
		}
		v.attach.restore(asked.Attachments)
	}
	v.reply = nil
	v.render()
	if text != "" {
		v.save()
	}
}

func (v *playgroundView) reset() {
	if v.cancel != nil {
		v.cancel()
	}
	v.convID, v.history, v.reply = "", nil, nil
	v.attach.thumbs = map[*byte]image.Image{}
	v.saved.ClearSelected()
	v.stats.SetText("")
	v.render()
}

// render writes the conversation, each turn under its speaker's name, with the reply being
// streamed last.
func (v *playgroundView) render() {
	var segs []widget.RichTextSegment
	turn := func(who, thought, text string, atts []Attachment, color fyne.ThemeColorName) {
		segs = append(segs,
			&widget.TextSegment{Text: who, Style: widget.RichTextStyle{ColorName: color, TextStyle: fyne.TextStyle{Bold: true}}})
		if len(atts) > 0 {
			segs = append(segs, &attachmentsSegment{bar: v.attach, atts: atts})
		}
		if thought != "" {
			// A thinking model's reasoning, set apart from its answer as the APIs set it apart.
			segs = append(segs, &widget.TextSegment{Text: "Thinking: " + strings.TrimSpace(thought),
				Style: widget.RichTextStyle{ColorName: theme.ColorNamePlaceHolder, TextStyle: fyne.TextStyle{Italic: true}}})
		}
		segs = append(segs, &widget.TextSegment{Text: text, Style: widget.RichTextStyleParagraph})
	}
	for _, m := range v.history {
		if m.Role == "assistant" {
			turn(v.modelID(), m.Reasoning, m.Content, nil, theme.ColorNamePrimary)
		} else {
			turn("You", "", m.Content, m.Attachments, theme.ColorNameForeground)
		}
	}
	if v.reply != nil {
		turn(v.modelID(), v.thought.String(), v.reply.String()+"▌", nil, theme.ColorNamePrimary)
	}
	v.transcript.Segments = segs
	v.transcript.Refresh()
	v.scroll.ScrollToBottom()
}

// transcriptText is the conversation as plain text (tests).
func (v *playgroundView) transcriptText() string {
	var b strings.Builder
	for _, s := range v.transcript.Segments {
		b.WriteString(s.Textual())
		b.WriteString("\n")
	}
	return b.String()
}
