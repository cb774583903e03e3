package chat

// System turns after the first message (Claude Code's reminders, the Responses API's
// developer items) go to the template at their place. Many templates render them as they
// render any turn; some refuse them (raise_exception: roles must alternate, or system only
// first) and some drop them without a word (Llama 2's renders only user and assistant turns
// after the first). For those, Render tries again with each such system turn folded into a user turn,
// as llama.cpp's server polyfills a template without a system role (minja's
// polyfill_system_role): the text joins the next user message, before its own.

import "strings"

// hasLateSystem reports whether a system message follows the first message.
func hasLateSystem(msgs []Message) bool {
	for i, m := range msgs {
		if i > 0 && m.Role == "system" {
			return true
		}
	}
	return false
}

// lateSystemShown reports whether the text of every system message after the first appears
// in the rendered prompt (minja detects a template's system role the same way: by looking
// for the message in the output).
func lateSystemShown(prompt string, msgs []Message) bool {
	for i, m := range msgs {
		if i > 0 && m.Role == "system" && !strings.Contains(prompt, strings.TrimSpace(m.Content)) {
			return false
		}
	}
	return true
}

// foldLateSystem folds every system message after the first message into a user turn: into
// the next message when that is a user message (joined before its text with a blank line,
// JoinText's separator), else into the message before it when that is a user message (a
// trailing reminder, so roles still alternate), else into a user message of its own at its
// place (llama.cpp's flush). Consecutive system messages fold together.
func foldLateSystem(msgs []Message) []Message {
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
		case i > 0 && m.Role == "system":
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
