package core

import (
	"context"
	"strings"
	"sync"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
)

// SharedPrefixes are the texts an admin marked shared in team mode (a team system prompt,
// package prefixes): the one exception to IsolateCache, whose cached tokens any person's
// request may reuse.
type SharedPrefixes interface {
	// SharedTexts lists the shared texts that apply to the model whose id is model.
	SharedTexts(ctx context.Context, model string) []string
}

// sharedPrefix is the shared text gen's prompt has most in common with, in the form the prompt
// holds it: as written (a completion's raw prompt), or as the model's chat template renders it
// as a conversation's system message (a chat). The engine compares its tokens with the
// prompt's (llm.Request.SharedPrefix). "" when no shared text reaches into the prompt: markup
// the template writes before the text is not enough.
func (s *Service) sharedPrefix(ctx context.Context, m *Model, gen *llm.Request) string {
	if s.cfg.SharedPrefixes == nil || gen.CachePartition == "" || gen.NoCache || gen.Prompt == "" || len(gen.Tokens) > 0 {
		return ""
	}
	best, longest := "", 0
	for _, text := range s.cfg.SharedPrefixes.SharedTexts(ctx, m.ID) {
		for _, form := range []string{text, s.sharedForms.systemForm(m, text)} {
			if form == "" {
				continue
			}
			n := commonTextPrefix(gen.Prompt, form)
			if n > max(strings.Index(form, text), 0) && n > longest {
				best, longest = form, n
			}
		}
	}
	return best
}

func commonTextPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// sharedForms keeps how each model's template renders each shared text as a system message,
// so a request renders none of them again. Bounded: it starts over past maxSharedForms.
type sharedForms struct {
	mu    sync.Mutex
	forms map[[2]string]string // {model id, text} → form ("" when the template has none)
}

const maxSharedForms = 1024

// systemForm is how m's template begins a conversation whose system message is text: what
// two conversations with that system message and different user messages render alike.
func (f *sharedForms) systemForm(m *Model, text string) string {
	if m.Template == nil {
		return ""
	}
	key := [2]string{m.ID, text}
	f.mu.Lock()
	form, ok := f.forms[key]
	f.mu.Unlock()
	if ok {
		return form
	}
	render := func(user string) string {
		out, err := m.Template.Render([]chat.Message{{Role: "system", Content: text}, {Role: "user", Content: user}},
			chat.Options{BOSToken: m.BOS, EOSToken: m.EOS, AddGenerationPrompt: true})
		if err != nil {
			return ""
		}
		return out
	}
	a, b := render("A"), render("B")
	form = a[:commonTextPrefix(a, b)]
	f.mu.Lock()
	if f.forms == nil || len(f.forms) >= maxSharedForms {
		f.forms = map[[2]string]string{}
	}
	f.forms[key] = form
	f.mu.Unlock()
	return form
}
