package tray

import (
	"fmt"
	"time"
)

// render brings the transcript up to the history: it draws only the turns added since the
// last call, and the live reply's row anew, so a reply streaming into a long chat costs one
// row a piece. A history that shrank (an edit, a regenerate) is drawn afresh.
func (v *playgroundView) render() {
	if v.first+len(v.rows) > len(v.history) {
		v.redraw()
		return
	}
	if v.live != nil {
		v.turns.Remove(v.live.obj)
		v.live = nil
	}
	for i := v.first + len(v.rows); i < len(v.history); i++ {
		r := v.newTurnRow(i, v.history[i], false)
		v.rows = append(v.rows, r)
		v.turns.Add(r.obj)
	}
	if v.turn != nil {
		v.live = v.newTurnRow(len(v.history), v.turn.message(), true)
		v.turns.Add(v.live.obj)
	}
	v.scroll.ScrollToBottom()
	// Again once the new rows are laid out at the transcript's width: a wrapped text's height
	// is known only then, and the first scroll may stop short of the end.
	go v.app.do(v.scroll.ScrollToBottom)
}

// redraw draws the latest transcriptWindow turns from scratch.
func (v *playgroundView) redraw() {
	v.first = max(0, len(v.history)-transcriptWindow)
	v.rows, v.live = nil, nil
	v.turns.RemoveAll()
	v.showEarlierButton()
	v.render()
}

// showEarlier draws the transcriptWindow turns before the first one drawn.
func (v *playgroundView) showEarlier() {
	from := max(0, v.first-transcriptWindow)
	var rows []*turnRow
	for i := from; i < v.first; i++ {
		rows = append(rows, v.newTurnRow(i, v.history[i], false))
	}
	objs := v.turns.Objects
	v.turns.Objects = nil
	for _, r := range rows {
		v.turns.Objects = append(v.turns.Objects, r.obj)
	}
	v.turns.Objects = append(v.turns.Objects, objs...)
	v.rows = append(rows, v.rows...)
	v.first = from
	v.turns.Refresh()
	v.showEarlierButton()
}

func (v *playgroundView) showEarlierButton() {
	if v.first == 0 {
		v.earlier.Hide()
		return
	}
	v.earlier.SetText(fmt.Sprintf("Show earlier (%d more)", v.first))
	v.earlier.Show()
}

// editTurn puts user turn i back in the input: Send replaces it and drops the turns after it.
func (v *playgroundView) editTurn(i int) {
	if v.cancel != nil || i >= len(v.history) {
		return
	}
	v.editing = i
	v.input.SetText(v.history[i].Content)
	v.attach.restore(v.history[i].Attachments)
	v.stats.SetText("Editing your message: Send replaces it and the replies after it.")
	v.app.win.Canvas().Focus(v.input)
}

// regenerate drops reply i and the turns after it, and asks for the reply again.
func (v *playgroundView) regenerate(i int) {
	if v.cancel != nil || i == 0 || i >= len(v.history) {
		return
	}
	settings, err := v.settings()
	if err != nil {
		v.stats.SetText(err.Error())
		return
	}
	v.history = v.history[:i]
	v.stream(settings)
}

// branchAt saves the turns up to i as a new conversation and shows it; the original stays.
func (v *playgroundView) branchAt(i int) {
	if v.cancel != nil || i >= len(v.history) {
		return
	}
	c := v.conversation()
	c.ID = fmt.Sprintf("conv-%d", time.Now().UnixNano())
	c.Messages = append([]Message(nil), v.history[:i+1]...)
	c.Title = "Branch: " + titleOf(c.Messages)
	if err := v.app.c.SaveConversation(c); err != nil {
		v.stats.SetText("Cannot branch: " + err.Error())
		return
	}
	v.show(c)
	v.refreshSaved()
	v.stats.SetText("A new conversation, branched from the other one; the original is kept.")
}

// copyCode puts a code block on the clipboard.
func (v *playgroundView) copyCode(code string) {
	v.app.fyne.Clipboard().SetContent(code)
}
