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
	turns       *fyne.Container // the drawn turns, oldest first, after the "Show earlier" button
	earlier     *widget.Button
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
	// turn is the reply streaming into the conversation on screen (nil: none); reply is its
	// text and cancel stops it, both nil with it.
	turn    *replyTurn
	reply   *strings.Builder
	cancel  context.CancelFunc
	content fyne.CanvasObject

	// rows are the drawn turns of history[first:], then the live reply's row while one streams;
	// rowsBuilt counts every row ever made (tests: a long chat draws a window of it).
	rows      []*turnRow
	live      *turnRow
	first     int
	rowsBuilt int
	// editing is the index of the user turn being edited (-1: none): Send replaces it and
	// drops the turns after it.
	editing int
	tools   *chatTools // chat_tools: the context meter, search and export
}

// replyTurn is one reply being streamed and the conversation it answers, as it was asked.
// Leaving that conversation (New chat, opening or importing another) detaches the turn: it is
// stopped, and what it streamed is saved into its own conversation, never drawn into the one
// on screen.
type replyTurn struct {
	cancel        context.CancelFunc
	reply         strings.Builder
	thought       strings.Builder // its reasoning
	thoughtTokens int             // the reasoning pieces streamed (the core sends one a token)
	conv          Conversation
}

func (t *replyTurn) add(p Piece) {
	if p.Reasoning != "" {
		t.thoughtTokens++
	}
	t.thought.WriteString(p.Reasoning)
	t.reply.WriteString(p.Text)
}

// message is the reply as a turn of the history.
func (t *replyTurn) message() Message {
	return Message{Role: "assistant", Content: t.reply.String(), Reasoning: t.thought.String(), ReasoningTokens: t.thoughtTokens}
}

// transcriptWindow is how many of the latest turns the transcript draws; "Show earlier" draws
// as many more. A chat of 10,000 turns opens with this many rows, not 10,000.
const transcriptWindow = 40

func newPlaygroundView(a *App) *playgroundView {
	v := &playgroundView{app: a, editing: -1}
	v.model = widget.NewSelect(nil, func(string) {
		v.attach.setModel(v.chosen())
		if v.tools != nil {
			v.tools.measureSoon() // another model, another window and tokenizer
		}
	})
	v.model.PlaceHolder = "Choose a model"
	v.system = widget.NewMultiLineEntry()
	v.system.SetPlaceHolder("System prompt (optional)")
	v.system.SetMinRowsVisible(2)
	v.temperature = widget.NewEntry()
	v.temperature.SetText("0.8")
	v.maxTokens = widget.NewEntry()
	v.maxTokens.SetText("256")
	v.turns = container.NewVBox()
	v.earlier = widget.NewButtonWithIcon("Show earlier", theme.MoveUpIcon(), v.showEarlier)
	v.earlier.Importance = widget.LowImportance
	v.earlier.Hide()
	v.scroll = container.NewVScroll(container.NewVBox(v.earlier, v.turns))
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
	v.tools = newChatTools(v)
	// The model and the conversation stay in sight; the rest folds away, so the transcript
	// keeps the height (an image turn is tall, and the settings once covered its first line).
	options := widget.NewForm(
		widget.NewFormItem("System", v.system),
		widget.NewFormItem("Temperature", container.NewGridWithColumns(2, v.temperature,
			container.NewBorder(nil, nil, widget.NewLabelWithStyle("Max tokens", fyne.TextAlignTrailing, fyne.TextStyle{Bold: true}), nil, v.maxTokens))),
	)
	settings := container.NewVBox(
		container.NewBorder(nil, nil, nil, container.NewHBox(
			container.NewGridWrap(fyne.NewSize(230, v.tools.search.MinSize().Height), v.tools.search), v.tools.bar), v.saved),
		container.NewBorder(nil, nil, widget.NewLabelWithStyle("Model", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}), nil, v.model),
		widget.NewAccordion(widget.NewAccordionItem("Options: system prompt, temperature, max tokens", options)),
	)
	// The meter shares the attachments' row (each row given to the controls is one taken from
	// the transcript), at a fixed width so a long note or stats line never widens the window.
	meter := container.NewGridWrap(fyne.NewSize(230, v.tools.meter.MinSize().Height), v.tools.meter)
	bottom := container.NewVBox(widget.NewSeparator(), container.NewBorder(nil, nil, nil, meter, v.attach.row), v.input,
		container.NewBorder(nil, nil, v.stats, container.NewHBox(v.clear, v.stop, v.send)))
	v.content = container.NewBorder(container.NewVBox(settings, widget.NewSeparator()), bottom, nil, nil, v.scroll)
	return v
}

// refreshSaved lists the saved conversations, or those the search finds.
func (v *playgroundView) refreshSaved() {
	convs := v.app.c.Conversations()
	if q := strings.TrimSpace(v.tools.search.Text); q != "" {
		found, err := v.app.c.SearchConversations(q, 100)
		if err != nil {
			v.stats.SetText("Cannot search: " + err.Error())
		}
		convs = found
	}
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
	switch {
	case selected == "" && strings.TrimSpace(v.tools.search.Text) != "":
		v.saved.PlaceHolder = fmt.Sprintf("%d found", len(labels))
	default:
		v.saved.PlaceHolder = "Saved conversations"
	}
	v.saved.Refresh()
}

// open shows a saved conversation, ready to continue (a reply still streaming is stopped and
// kept in its own conversation).
func (v *playgroundView) open(id string) {
	c, err := v.app.c.OpenConversation(id)
	if err != nil {
		v.stats.SetText("Cannot open it: " + err.Error())
		return
	}
	v.show(c)
}

// show puts a conversation on screen.
func (v *playgroundView) show(c Conversation) {
	v.detach()
	v.convID, v.history, v.editing = c.ID, c.Messages, -1
	v.system.SetText(c.System)
	if c.Model != "" {
		v.selectModel(c.Model)
	}
	v.attach.thumbs = map[*byte]image.Image{}
	v.stats.SetText("")
	v.redraw()
	v.tools.measureSoon()
}

// save stores the conversation after a reply; its title is the first question.
func (v *playgroundView) save() {
	if len(v.history) == 0 {
		return
	}
	if v.convID == "" {
		v.convID = fmt.Sprintf("conv-%d", time.Now().UnixNano())
	}
	if err := v.app.c.SaveConversation(v.conversation()); err != nil {
		v.stats.SetText(v.stats.Text + " (not saved: " + err.Error() + ")")
	}
	v.refreshSaved()
}

// conversation is the chat on screen as it is saved.
func (v *playgroundView) conversation() Conversation {
	return Conversation{ID: v.convID, Title: titleOf(v.history), Model: v.modelID(),
		System: v.system.Text, Messages: append([]Message(nil), v.history...)}
}

// titleOf is a conversation's title: its first question, cut short.
func titleOf(history []Message) string {
	if len(history) == 0 {
		return ""
	}
	title := history[0].Content
	if r := []rune(title); len(r) > 40 {
		title = string(r[:40]) + "…"
	}
	if title == "" && len(history[0].Attachments) > 0 {
		title = history[0].Attachments[0].Name
	}
	return strings.ReplaceAll(title, "\n", " ")
}

// ask sends the input as the next user turn (or in place of the turn being edited) and
// streams the reply; a prompt longer than the model's window asks first.
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
	history := v.history
	if v.editing >= 0 && v.editing < len(history) {
		history = history[:v.editing]
	}
	next := append(append([]Message(nil), history...), Message{Role: "user", Content: text, Attachments: v.attach.pending})
	v.tools.confirmFits(v.prompt(next), func() {
		if v.turn != nil { // a second Send while the warning was up
			return
		}
		if v.editing >= 0 {
			v.history, v.editing = history, -1
			v.redraw()
		}
		v.history = append(v.history, Message{Role: "user", Content: text, Attachments: v.attach.take()})
		v.input.SetText("")
		v.stream(settings)
	})
}

// prompt is history as the model gets it, the system prompt first.
func (v *playgroundView) prompt(history []Message) []Message {
	msgs := append([]Message(nil), history...)
	if sys := strings.TrimSpace(v.system.Text); sys != "" {
		msgs = append([]Message{{Role: "system", Content: sys}}, msgs...)
	}
	return msgs
}

// stream asks for the reply to the history and shows it as it arrives.
func (v *playgroundView) stream(settings ChatSettings) {
	msgs := v.prompt(v.history)
	ctx, cancel := context.WithCancel(context.Background())
	t := &replyTurn{cancel: cancel, conv: v.conversation()}
	v.turn, v.reply, v.cancel = t, &t.reply, cancel
	v.busy(true)
	v.stats.SetText("Generating…")
	v.render()
	go func() {
		defer cancel()
		stats, err := v.app.c.Chat(ctx, settings, msgs, func(piece Piece) {
			v.app.do(func() {
				t.add(piece)
				if v.turn == t {
					v.render()
				}
			})
		})
		// Stopped is decided here, not when the UI gets to it: a Stop clicked after the reply
		// ended would otherwise write "Stopped." over its stats.
		stopped := err != nil && ctx.Err() != nil
		v.app.do(func() { v.finish(t, stats, err, stopped) })
	}()
}

// busy turns the controls for a reply streaming (on) or not: Send, Stop, and each turn's Edit,
// Regenerate and Branch, which wait for the reply.
func (v *playgroundView) busy(on bool) {
	if on {
		v.send.Disable()
		v.stop.Enable()
	} else {
		v.send.Enable()
		v.stop.Disable()
	}
	for _, r := range v.rows {
		r.enableActions(!on)
	}
}

// detach lets go of the reply streaming into the conversation on screen: it is stopped, and
// its finish saves what came into the conversation it answers.
func (v *playgroundView) detach() {
	if v.turn == nil {
		return
	}
	v.turn.cancel()
	v.turn, v.reply, v.cancel = nil, nil, nil
	v.busy(false)
}

// keepReply stops the reply streaming, if one is, and saves what came of it now.
func (v *playgroundView) keepReply() {
	if t := v.turn; t != nil {
		v.detach()
		v.saveDetached(t)
	}
}

// saveDetached saves a detached reply's text into the conversation it answers.
func (v *playgroundView) saveDetached(t *replyTurn) {
	c := t.conv
	if c.ID == "" {
		c.ID = fmt.Sprintf("conv-%d", time.Now().UnixNano())
	}
	// No text yet (the prompt still being read): the question is kept, without an empty reply.
	if t.reply.Len() > 0 || t.thought.Len() > 0 {
		c.Messages = append(c.Messages, t.message())
	}
	c.Title = titleOf(c.Messages)
	if err := v.app.c.SaveConversation(c); err != nil {
		v.stats.SetText("The stopped reply was not saved: " + err.Error())
	}
	// The same conversation opened again before the reply stopped shows it without the reply,
	// and its next save would write over it: while nothing was added there, it takes it too.
	if v.convID == c.ID && v.turn == nil && v.editing < 0 && isPrefix(v.history, c.Messages) {
		v.history = c.Messages
		v.redraw()
	}
	v.refreshSaved()
}

// isPrefix reports whether the turns of a begin the turns of b (by role and text).
func isPrefix(a, b []Message) bool {
	if len(a) > len(b) {
		return false
	}
	for i := range a {
		if a[i].Role != b[i].Role || a[i].Content != b[i].Content {
			return false
		}
	}
	return true
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

// finish ends a reply: it joins the history, or shows why it stopped. A detached one is only
// saved where it belongs.
func (v *playgroundView) finish(t *replyTurn, stats ChatStats, err error, stopped bool) {
	if v.turn != t {
		v.saveDetached(t)
		return
	}
	text := t.reply.String()
	v.turn, v.reply, v.cancel = nil, nil, nil
	v.busy(false)
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
		v.history = append(v.history, t.message())
	} else if (err != nil || stopped) && len(v.history) > 0 && v.history[len(v.history)-1].Role == "user" {
		// The question got no answer: let it be asked again, its text and files back in place.
		asked := v.history[len(v.history)-1]
		v.history = v.history[:len(v.history)-1]
		if v.input.Text == "" {
			v.input.SetText(asked.Content)
		}
		v.attach.restore(asked.Attachments)
	}
	v.render()
	if text != "" {
		v.save()
	}
	v.tools.measureSoon()
}

// reset starts a new chat (a reply still streaming is stopped and kept in its own conversation).
func (v *playgroundView) reset() {
	v.detach()
	v.convID, v.history, v.editing = "", nil, -1
	v.attach.thumbs = map[*byte]image.Image{}
	v.saved.ClearSelected()
	v.stats.SetText("")
	v.redraw()
	v.tools.measureSoon()
}

// transcriptText is the conversation as plain text (tests).
func (v *playgroundView) transcriptText() string {
	var b strings.Builder
	for _, r := range v.rows {
		b.WriteString(r.plainText())
	}
	if v.live != nil {
		b.WriteString(v.live.plainText())
	}
	return b.String()
}
