package tray

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"
	"github.com/dustin/go-humanize"
)

// settingsForm edits one model's settings: exact numbers, not sliders, and the memory the model
// will take before it is loaded.
type settingsForm struct {
	app                     *App
	id                      string
	ctx, lanes, keepAlive   *widget.Entry
	runtime                 *widget.Select
	temperature, topP, topK *widget.Entry
	maxTokens               *widget.Entry
	system                  *widget.Entry
	speculative, flash      *widget.Select
	draftModel, draftTokens *widget.Entry
	memory                  *widget.Label
	form                    *widget.Form
	ctxHint                 *widget.Label // below the context field, wrapped (a FormItem's hint would widen the dialog)
	facts                   ModelSettings // the windows the hint names
}

func newSettingsForm(a *App, id string, s ModelSettings) *settingsForm {
	f := &settingsForm{app: a, id: id, facts: s}
	num := func(n int) string {
		if n == 0 {
			return ""
		}
		return strconv.Itoa(n)
	}
	entry := func(text, placeholder string) *widget.Entry {
		e := widget.NewEntry()
		e.SetText(text)
		e.SetPlaceHolder(placeholder)
		return e
	}
	f.ctx = entry(num(s.ContextLength), "server default")
	if s.DefaultContext > 0 {
		f.ctx.SetPlaceHolder(fmt.Sprintf("server default: %d tokens", s.DefaultContext))
	}
	f.lanes = entry(num(s.Lanes), "server default")
	f.keepAlive = entry(s.KeepAlive, "server default (e.g. 5m, 0, -1)")
	f.runtime = widget.NewSelect(a.c.Runtimes(), nil)
	f.runtime.SetSelected(s.Runtime)
	if s.Runtime == "" {
		f.runtime.SetSelected("cpu")
	}
	f.temperature = entry(s.Temperature, "model default")
	f.topP = entry(s.TopP, "model default")
	f.topK = entry(s.TopK, "model default")
	f.maxTokens = entry(num(s.MaxTokens), "fill the context")
	f.system = widget.NewMultiLineEntry()
	f.system.SetText(s.SystemPrompt)
	f.system.SetPlaceHolder("none")
	f.speculative = widget.NewSelect([]string{serverDefault, "off", "ngram", "draft"}, nil)
	f.speculative.SetSelected(cmp.Or(s.Speculative, serverDefault))
	f.draftModel = entry(s.DraftModel, "none (a model id or a .gguf file with the same vocabulary)")
	f.draftTokens = entry(num(s.DraftTokens), "engine default")
	f.draftTokens.Validator = optionalCount
	f.flash = widget.NewSelect([]string{"auto", "on", "off"}, nil)
	f.flash.SetSelected(cmp.Or(s.FlashAttention, "auto"))
	f.memory = widget.NewLabel("")
	f.memory.Wrapping = fyne.TextWrapWord
	f.ctx.OnChanged = func(string) { f.showMemory(); f.showHint() }
	f.lanes.OnChanged = func(string) { f.showMemory() }
	f.ctx.Validator, f.lanes.Validator, f.maxTokens.Validator = optionalCount, optionalCount, optionalCount
	f.ctxHint = widget.NewLabel(contextHint(s))
	f.ctxHint.Wrapping = fyne.TextWrapWord
	f.form = widget.NewForm(
		widget.NewFormItem("Context length", container.NewVBox(f.ctx, f.ctxHint)),
		widget.NewFormItem("Lanes", f.lanes),
		widget.NewFormItem("Memory", f.memory),
		widget.NewFormItem("Keep loaded for", f.keepAlive),
		widget.NewFormItem("Runtime", f.runtime),
		widget.NewFormItem("Temperature", f.temperature),
		widget.NewFormItem("Top P", f.topP),
		widget.NewFormItem("Top K", f.topK),
		widget.NewFormItem("Max tokens", f.maxTokens),
		widget.NewFormItem("System prompt", f.system),
		widget.NewFormItem("Speculative decoding", f.speculative),
		widget.NewFormItem("Draft model", f.draftModel),
		widget.NewFormItem("Draft tokens", f.draftTokens),
		widget.NewFormItem("Flash attention", f.flash),
	)
	f.showMemory()
	return f
}

// serverDefault is the speculation choice that leaves the mode to the server (--speculative).
const serverDefault = "server default"

// agentPrompt is about what a coding agent's first request takes (Claude Code's system prompt
// and tools are about 20k tokens); agentContext the window to suggest for it.
const (
	agentPrompt  = 20000
	agentContext = 32768
)

// contextHint says what the window should be for a coding agent, and what the model was
// trained for: a request longer than the window is refused (context_length_exceeded).
func contextHint(s ModelSettings) string {
	hint := fmt.Sprintf("Coding agents (Claude Code, Codex) send about %dk tokens at once: use %d or more.", agentPrompt/1000, agentContext)
	if window := cmp.Or(s.ContextLength, s.DefaultContext); window >= agentContext {
		hint = fmt.Sprintf("%d tokens fit a coding agent's prompt (about %dk).", window, agentPrompt/1000)
	}
	switch {
	case s.TrainContext > 0 && s.TrainContext < agentContext:
		// A window past the trained one does not help: the model's output degrades beyond it.
		hint = fmt.Sprintf("Trained for %d tokens only: too few for a coding agent's prompt (about %dk); pick a model trained for %d or more.",
			s.TrainContext, agentPrompt/1000, agentContext)
	case s.TrainContext > 0:
		hint += fmt.Sprintf(" Trained for %d.", s.TrainContext)
	}
	return hint
}

// optionalCount accepts "" or a whole number above 0.
func optionalCount(s string) error {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	if n, err := strconv.Atoi(strings.TrimSpace(s)); err != nil || n < 1 {
		return fmt.Errorf("a whole number above 0, or empty for the default")
	}
	return nil
}

func atoiOr0(s string) int {
	n, _ := strconv.Atoi(strings.TrimSpace(s))
	return n
}

// showMemory estimates the model's memory for the window and lanes typed so far.
func (f *settingsForm) showMemory() {
	need, free := f.app.c.Memory(f.id, atoiOr0(f.ctx.Text), atoiOr0(f.lanes.Text))
	text := fmt.Sprintf("about %s loaded (weights + KV cache for context × lanes); %s free", humanize.Bytes(uint64(need)), humanize.Bytes(uint64(max(0, free))))
	if free > 0 && need > free {
		text += " — too much: lower the context or the lanes"
	}
	f.memory.SetText(text)
}

// showHint updates the context field's hint for the window typed so far.
func (f *settingsForm) showHint() {
	s := f.facts
	s.ContextLength = atoiOr0(f.ctx.Text)
	f.ctxHint.SetText(contextHint(s))
}

// settings reads the form.
func (f *settingsForm) settings() (ModelSettings, error) {
	for _, e := range []*widget.Entry{f.ctx, f.lanes, f.maxTokens, f.draftTokens} {
		if err := e.Validate(); err != nil {
			return ModelSettings{}, err
		}
	}
	s := ModelSettings{
		ContextLength: atoiOr0(f.ctx.Text), Lanes: atoiOr0(f.lanes.Text), MaxTokens: atoiOr0(f.maxTokens.Text),
		KeepAlive: strings.TrimSpace(f.keepAlive.Text), Runtime: f.runtime.Selected,
		Temperature: strings.TrimSpace(f.temperature.Text), TopP: strings.TrimSpace(f.topP.Text), TopK: strings.TrimSpace(f.topK.Text),
		SystemPrompt: f.system.Text, DraftModel: strings.TrimSpace(f.draftModel.Text), DraftTokens: atoiOr0(f.draftTokens.Text),
	}
	if f.speculative.Selected != serverDefault {
		s.Speculative = f.speculative.Selected
	}
	if f.flash.Selected != "auto" {
		s.FlashAttention = f.flash.Selected
	}
	return s, nil
}

// save stores the settings; errors (a bad number, a runtime that cannot run) are shown.
func (f *settingsForm) save() error {
	s, err := f.settings()
	if err == nil {
		err = f.app.c.SetSettings(f.id, s)
	}
	return err
}

// showSettings opens a model's settings in a dialog.
func (v *modelsView) showSettings(id string) {
	s, err := v.app.c.Settings(id)
	if err != nil {
		v.app.showError(err)
		return
	}
	f := newSettingsForm(v.app, id, s)
	d := dialog.NewCustomConfirm("Settings of "+id, "Save", "Cancel", container.NewVScroll(f.form), func(ok bool) {
		if !ok {
			return
		}
		if err := f.save(); err != nil {
			v.app.showError(err)
			return
		}
		v.app.refresh()
	}, v.app.win)
	d.Resize(fyne.NewSize(620, 600)) // room for the context hint: the whole form without scrolling at the default window size
	v.settings = f
	d.Show()
}
