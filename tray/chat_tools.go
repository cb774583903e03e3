package tray

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// chatDebounce is how long typing must pause before the context meter counts again (the
// count renders the chat template and tokenizes, too much for every key).
const chatDebounce = 300 * time.Millisecond

// chatTools are the playground's tools around the chat: the "context used" meter under the
// input, search over saved conversations, and export and import.
type chatTools struct {
	v      *playgroundView
	meter  *widget.ProgressBar
	search *widget.Entry
	bar    *fyne.Container // Export, Import

	mu    sync.Mutex
	timer *time.Timer // the meter's debounce
	// searchTimer is the search's own, so typing a query does not drop a pending count.
	searchTimer *time.Timer
	seq         int // the latest count asked for; older answers are dropped
	used        int
	window      int
	note        string // why there is no count ("" when there is)
	// media is how many images and audio clips the count leaves out: the core counts text
	// only (a file's positions are its projector's to say, once encoded), so the meter says so.
	media   int
	warning dialog.Dialog
}

func newChatTools(v *playgroundView) *chatTools {
	t := &chatTools{v: v}
	t.meter = widget.NewProgressBar()
	t.meter.TextFormatter = t.meterText
	t.search = widget.NewEntry()
	t.search.SetPlaceHolder("Search conversations")
	t.search.OnChanged = func(string) { t.after(&t.searchTimer, v.refreshSaved) }
	t.bar = container.NewHBox(
		widget.NewButtonWithIcon("Export", theme.DocumentSaveIcon(), t.exportDialog),
		widget.NewButtonWithIcon("Import", theme.FolderOpenIcon(), t.importDialog))
	v.input.OnChanged = func(string) { t.measureSoon() }
	return t
}

func (t *chatTools) meterText() string {
	files := ""
	if t.media > 0 {
		files = fmt.Sprintf(" + %d files not counted", t.media)
	}
	switch {
	case t.note != "":
		return t.note
	case t.window == 0:
		return fmt.Sprintf("Context: %d tokens%s", t.used, files)
	}
	return fmt.Sprintf("Context: %d of %d tokens%s", t.used, t.window, files)
}

// mediaCount is how many attachments msgs carry.
func mediaCount(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Attachments)
	}
	return n
}

// after runs fn on the UI goroutine once chatDebounce has passed without another call.
func (t *chatTools) after(timer **time.Timer, fn func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if *timer != nil {
		(*timer).Stop()
	}
	*timer = time.AfterFunc(chatDebounce, func() { t.v.app.do(fn) })
}

// measureSoon counts the conversation and the draft once typing pauses.
func (t *chatTools) measureSoon() {
	t.after(&t.timer, t.measure)
}

// draft is the conversation as it would be sent with what the input holds now.
func (t *chatTools) draft() []Message {
	msgs := append([]Message(nil), t.v.history...)
	if t.v.editing >= 0 && t.v.editing < len(msgs) {
		msgs = msgs[:t.v.editing]
	}
	if text := strings.TrimSpace(t.v.input.Text); text != "" || len(t.v.attach.pending) > 0 {
		msgs = append(msgs, Message{Role: "user", Content: text, Attachments: t.v.attach.pending})
	}
	return t.v.prompt(msgs)
}

// measure counts off the UI goroutine and shows the latest answer.
func (t *chatTools) measure() {
	model, msgs := t.v.modelID(), t.draft()
	if model == "" {
		t.show(0, 0, "Context: choose a model")
		return
	}
	t.mu.Lock()
	t.seq++
	seq := t.seq
	t.mu.Unlock()
	media := mediaCount(msgs)
	go func() {
		used, window, err := t.v.app.c.ContextUse(model, msgs)
		t.v.app.do(func() {
			t.mu.Lock()
			stale := seq != t.seq
			t.mu.Unlock()
			if stale {
				return
			}
			t.media = media
			if err != nil {
				t.show(0, 0, "Context: cannot count ("+err.Error()+")")
				return
			}
			t.show(used, window, "")
		})
	}()
}

func (t *chatTools) show(used, window int, note string) {
	t.used, t.window, t.note = used, window, note
	t.meter.Max = float64(max(window, 1))
	t.meter.Value = min(float64(used), t.meter.Max)
	if window == 0 {
		t.meter.Value = 0
	}
	t.meter.Refresh()
}

// confirmFits sends at once when msgs fit the model's window, and asks first when they do
// not (the count is done now, not left to the debounce: the warning must match the prompt).
func (t *chatTools) confirmFits(msgs []Message, send func()) {
	used, window, err := t.v.app.c.ContextUse(t.v.modelID(), msgs)
	if err == nil {
		t.media = mediaCount(msgs)
		t.show(used, window, "")
	}
	if err != nil || window == 0 || used < window {
		send()
		return
	}
	msg := fmt.Sprintf("This prompt takes %d tokens, and %s reads at most %d.\n"+
		"The reply may be cut off or fail. Start a new chat, branch from an earlier turn,\n"+
		"or give the model a longer context in its settings. Send anyway?", used, t.v.modelID(), window)
	t.warning = dialog.NewConfirm("Longer than the model's context", msg, func(ok bool) {
		t.warning = nil
		if ok {
			send()
		}
	}, t.v.app.win)
	t.warning.Show()
}
