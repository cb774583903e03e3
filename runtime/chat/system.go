package chat

// System turns after the first message (Claude Code's reminders, the Responses API's
// developer items) go to the template at their place. Many templates render them as they
// render any turn; some refuse them (raise_exception: roles must alternate, or system only
// first) and some drop them without a word (Llama 2's renders only user and assistant turns
// after the first; Phi-3's drops every system message). For those, Render tries again with
// such system turns folded into a user turn, as llama.cpp's server polyfills a template
// without a system role (minja's polyfill_system_role): the text joins the next user
// message, before its own.

import (
	"errors"
	"strings"
)

// renderSystem renders msgs, folding the system messages the template refuses or drops:
// first those after the first message; then, if the template shows no system message at all
// (Phi-3's drops them), the first one too, which then joins the first user turn. A fold is
// kept only when it renders and shows the text.
func (t *Template) renderSystem(msgs []Message, opts Options) (string, error) {
	out, err := t.renderTools(msgs, opts)
	if hasLateSystem(msgs) && (err != nil && errors.Is(err, ErrTemplate) || err == nil && !systemShown(out, msgs, 1)) {
		folded := foldSystem(msgs, 1)
		if fout, ferr := t.renderTools(folded, opts); ferr == nil {
			out, err, msgs = fout, nil, folded
		}
	}
	if err == nil && len(msgs) > 0 && msgs[0].Role == "system" && !systemShown(out, msgs[:1], 0) {
		if fout, ferr := t.renderTools(foldSystem(msgs, 0), opts); ferr == nil && systemShown(fout, msgs[:1], 0) {
			return fout, nil
		}
	}
	return out, err
}

// hasLateSystem reports whether a system message follows the first message.
func hasLateSystem(msgs []Message) bool {
	for i, m := range msgs {
		if i > 0 && m.Role == "system" {
			return true
		}
	}
	return false
}

// systemShown reports whether the text of every system message from index from on appears in
// the rendered prompt, in their order (minja detects a template's system role the same way:
// by looking for the message in the output). Each is looked for after the one before, so the
// check is linear in the prompt: a search of the whole prompt for each of many system messages
// took minutes of CPU for one request. A template that renders system messages out of order
// has them folded.
func systemShown(prompt string, msgs []Message, from int) bool {
	at := 0
	for i, m := range msgs {
		if i < from || m.Role != "system" {
			continue
		}
		text := strings.TrimSpace(m.Content)
		j := strings.Index(prompt[at:], text)
		if j < 0 {
			return false
		}
		at += j + len(text)
	}
	return true
}

// foldSystem folds every system message from index from on into a user turn: into the next
// message when that is a user message (joined before its text with a blank line, JoinText's
// separator), else into the message before it when that is a user message (a trailing
// reminder, so roles still alternate), else into a user message of its own at its place
// (llama.cpp's flush). Consecutive system messages fold together.
func foldSystem(msgs []Message, from int) []Message {
	out := make([]Message, 0, len(msgs))
	pending := ""
	flush := func() {
		if pending == "" {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == "user" {
			out[n-1].Content = JoinText(out[n-1].Content, pending)
		} else {
			out = append(out, Message{Role: "user", Content: pending})
		}
		pending = ""
	}
	for i, m := range msgs {
		switch {
		case i >= from && m.Role == "system":
			pending = JoinText(pending, m.Content)
			continue
		case m.Role == "user" && pending != "":
			m.Content = JoinText(pending, m.Content)
			pending = ""
		default:
			flush()
		}
		out = append(out, m)
	}
	flush()
	return out
}
