package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llamacpp"
	"github.com/superfluid/superfluid/runtime/llm"
)

// The speed suite: issue 21's ratios in one run on one model, each a median over o.Repeat runs
// with its target and a verdict. (a) and (c) go through the HTTP API (the request field
// speculative, the reply's superfluid.spec, a server restarted on the same data folder); (b)
// and (d) through the engine in this process, which loads a draft model and either flash
// attention setting without the per-model settings of a server.

// speedRow is one ratio: runs without the feature (base) and with it, in unit.
type speedRow struct {
	name, unit string
	base, with []float64
	// lowerWins says smaller is better (a time): the ratio is then with/base, else also
	// with/base, and target compares it.
	lowerWins bool
	target    float64
	// note explains a missing measurement ("not available: ...") or adds what the runs saw
	// (acceptance rates, cached tokens).
	note        string
	unavailable bool
}

func (r speedRow) ratio() float64 {
	b, _ := medianMin(r.base)
	w, _ := medianMin(r.with)
	if b == 0 {
		return 0
	}
	return w / b
}

func (r speedRow) verdict() string {
	switch {
	case r.unavailable || len(r.base) == 0 || len(r.with) == 0:
		return "n/a"
	case r.lowerWins && r.ratio() <= r.target, !r.lowerWins && r.ratio() >= r.target:
		return "PASS"
	}
	return "FAIL"
}

func (r speedRow) targetText() string {
	if r.lowerWins {
		return fmt.Sprintf("<= %.2fx", r.target)
	}
	return fmt.Sprintf(">= %.2fx", r.target)
}

// printSpeed prints the rows as one table.
func printSpeed(w io.Writer, rows []speedRow) { printRatios(w, "without", "with", rows) }

// printRatios prints the rows as one table, their base and with columns titled so.
func printRatios(w io.Writer, base, with string, rows []speedRow) {
	fmt.Fprintf(w, "%-50s %-6s %18s %18s %8s %9s %7s\n", "", "unit", base+" med [min]", with+" med [min]", "ratio", "target", "verdict")
	for _, r := range rows {
		bm, bi := medianMin(r.base)
		wm, wi := medianMin(r.with)
		ratio := "-"
		if !r.unavailable && bm > 0 && len(r.with) > 0 {
			ratio = fmt.Sprintf("%.2fx", r.ratio())
		}
		fmt.Fprintf(w, "%-50s %-6s %9.1f [%6.1f] %9.1f [%6.1f] %8s %9s %7s\n", r.name, r.unit, bm, bi, wm, wi, ratio, r.targetText(), r.verdict())
		if r.note != "" {
			fmt.Fprintf(w, "    %s\n", r.note)
		}
	}
}

// benchSpeed runs the speed suite.
func benchSpeed(model string, o Options, w io.Writer) error {
	fmt.Fprintf(w, "model %s, %d runs each, %d tokens per decode; medians [min]\n", model, o.Repeat, o.DecodeTokens)
	var rows []speedRow
	api, stop, err := serve(o, ServeOptions{Model: model, Parallel: 1, Threads: o.Threads})
	if err != nil {
		return err
	}
	edit, free, err := ngramRows(api, o)
	if err == nil {
		rows = append(rows, edit, free)
		var restart speedRow
		restart, api, stop, err = restartRow(api, stop, model, o)
		rows = append(rows, restart)
	}
	stop()
	if err != nil {
		return err
	}
	draft, err := draftRow(model, o)
	if err != nil {
		return err
	}
	flash, err := flashRow(model, o)
	if err != nil {
		return err
	}
	rows = append(rows, draft, flash)
	printSpeed(w, rows)
	return nil
}

// editPrompt is the edit workload: a reply that rewrites an input of about n words. The input
// is gguftest.CopyText (no three words twice), so a model that copies its input (a trained one,
// or the hand-set copy model of WriteCopyModel) has one right continuation at every step, and
// what speculation gains is what a rewrite gains, not a repeating pattern's.
func editPrompt(n int) string {
	return "Rewrite the text below exactly as it is.\n\n" + gguftest.CopyText(n, 21)
}

// ngramRows measures (a): single-stream decode with speculative "ngram" vs "off", on the edit
// workload and on free text, runs interleaved.
func ngramRows(api *apiClient, o Options) (edit, free speedRow, err error) {
	editText := editPrompt(orDefault(o.EditTokens, 1000))
	edit = speedRow{name: "(a) n-gram vs off, edit workload (decode)", unit: "tok/s", target: 1.8}
	free = speedRow{name: "(a) n-gram vs off, free text (decode)", unit: "tok/s", target: 1.0}
	for _, c := range []struct {
		row    *speedRow
		prompt func(run int) string
	}{
		{&edit, func(int) string { return editText }},
		{&free, func(run int) string { return fmt.Sprintf("%d. Tell me a long story about a dog and a girl.", run) }},
	} {
		var proposed, accepted int
		var missing string
		for run := range o.Repeat {
			for _, mode := range []string{llm.SpecOff, llm.SpecNgram} {
				s, err := api.stream(map[string]any{
					"max_tokens": o.DecodeTokens, "ignore_eos": true, "temperature": 0, "speculative": mode,
					"messages": []map[string]string{{"role": "user", "content": c.prompt(run)}},
				})
				if err != nil {
					if run == 0 {
						// The server does not take the field (a build before issue 21's wire).
						c.row.unavailable, c.row.note = true, "not available: "+err.Error()
						break
					}
					return edit, free, fmt.Errorf("%s, speculative %s: %w", c.row.name, mode, err)
				}
				if mode == llm.SpecOff {
					c.row.base = append(c.row.base, s.decodeRate())
					continue
				}
				c.row.with = append(c.row.with, s.decodeRate())
				if s.spec == nil {
					if missing == "" {
						missing = "the replies carried no superfluid.spec: speculation did not run"
					}
					continue
				}
				proposed, accepted = proposed+s.spec.Proposed, accepted+s.spec.Accepted
				if s.spec.Note != "" {
					missing = "note: " + s.spec.Note
				}
			}
			if c.row.unavailable {
				break
			}
		}
		if !c.row.unavailable {
			c.row.note = acceptance(proposed, accepted)
			if missing != "" {
				c.row.note += "; " + missing
			}
			// No reply said speculation ran: the server does not have it, nothing to compare.
			c.row.unavailable = proposed == 0 && strings.HasPrefix(missing, "the replies carried no")
		}
	}
	return edit, free, nil
}

func acceptance(proposed, accepted int) string {
	rate := 0.0
	if proposed > 0 {
		rate = float64(accepted) / float64(proposed)
	}
	return fmt.Sprintf("drafted %d tokens, accepted %d (%.1f%%)", proposed, accepted, 100*rate)
}

// restartRow measures (c): the time to the first token of a prompt of about o.PrefixTokens
// (2,000) tokens sent right after a server restart, when the same prompt ran before the
// restart, vs the same prompt cold. Each run sends a new prompt cold, restarts the server on
// the same data folder and sends it again. It returns the server running at the end.
func restartRow(api *apiClient, stop func(), model string, o Options) (speedRow, *apiClient, func(), error) {
	n := orDefault(o.PrefixTokens, 2000)
	row := speedRow{name: fmt.Sprintf("(c) TTFT, %d-token prefix after restart vs cold", n), unit: "ms", lowerWins: true, target: 0.10}
	var cached, prompt []int
	for run := range o.Repeat {
		text, err := api.textOfTokens(n, 100+run)
		if err != nil {
			return row, api, stop, err
		}
		body := func() map[string]any {
			return map[string]any{"max_tokens": 4, "temperature": 0, "messages": []map[string]string{{"role": "user", "content": text}}}
		}
		cold, err := api.stream(body())
		if err != nil {
			return row, api, stop, err
		}
		stop()
		if api, stop, err = serve(o, ServeOptions{Model: model, Parallel: 1, Threads: o.Threads}); err != nil {
			return row, api, func() {}, fmt.Errorf("restart: %w", err)
		}
		warm, err := api.stream(body())
		if err != nil {
			return row, api, stop, err
		}
		row.base = append(row.base, ms(cold.ttft()))
		row.with = append(row.with, ms(warm.ttft()))
		cached, prompt = append(cached, warm.cached), append(prompt, warm.promptTokens)
	}
	row.note = fmt.Sprintf("after the restart, cached tokens of the prompt: %v of %v", cached, prompt)
	return row, api, stop, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// draftRow measures (b): single-stream decode with a draft model (o.DraftModel) vs plain,
// through the engine, runs interleaved.
func draftRow(model string, o Options) (speedRow, error) {
	row := speedRow{name: "(b) draft model vs off, free text (engine decode)", unit: "tok/s", target: 1.0}
	if o.DraftModel == "" {
		row.unavailable, row.note = true, "not available: no draft model given (--draft-model)"
		return row, nil
	}
	e, err := llamacpp.Load(llamacpp.Options{ModelPath: model, ContextLength: o.ContextLength, Parallel: 1, Threads: o.Threads, DraftModelPath: o.DraftModel})
	if err != nil {
		return row, err
	}
	defer e.Close()
	var proposed, accepted int
	var missing string
	for run := range o.Repeat {
		for _, mode := range []string{llm.SpecOff, llm.SpecDraft} {
			s, done, err := engineDecode(e, fmt.Sprintf("%d. Once upon a time", run), o.DecodeTokens, &llm.Speculative{Mode: mode})
			if err != nil {
				return row, err
			}
			if mode == llm.SpecOff {
				row.base = append(row.base, s.decodeRate())
				continue
			}
			row.with = append(row.with, s.decodeRate())
			switch {
			case done.Spec == nil:
				missing = "the engine reported no speculation (Done.Spec): the draft model did not run"
			case done.Spec.Mode != llm.SpecDraft:
				missing = fmt.Sprintf("the engine ran %q instead: %s", done.Spec.Mode, done.Spec.Note)
			default:
				proposed, accepted = proposed+done.Spec.Proposed, accepted+done.Spec.Accepted
			}
		}
	}
	row.note = fmt.Sprintf("draft model %s; %s", o.DraftModel, acceptance(proposed, accepted))
	if missing != "" {
		row.note, row.unavailable = "not available: "+missing, true
	}
	return row, nil
}

// flashRow measures (d): single-stream decode with the engine's own flash attention choice
// ("auto") vs the other setting, two engines loaded at once, runs interleaved.
func flashRow(model string, o Options) (speedRow, error) {
	auto, err := llamacpp.Load(llamacpp.Options{ModelPath: model, ContextLength: o.ContextLength, Parallel: 1, Threads: o.Threads})
	if err != nil {
		return speedRow{}, err
	}
	defer auto.Close()
	chosen, other := "on", "off"
	if !auto.Info().FlashAttention {
		chosen, other = other, chosen
	}
	alt, err := llamacpp.Load(llamacpp.Options{ModelPath: model, ContextLength: o.ContextLength, Parallel: 1, Threads: o.Threads, FlashAttention: other})
	if err != nil {
		return speedRow{}, err
	}
	defer alt.Close()
	row := speedRow{name: fmt.Sprintf("(d) flash attention %s (auto) vs %s (decode)", chosen, other), unit: "tok/s", target: 1.0}
	var prefillAuto, prefillAlt []float64
	for run := range o.Repeat {
		prompt := fmt.Sprintf("%d. Once upon a time", run)
		for _, e := range []*llamacpp.Engine{alt, auto} {
			s, _, err := engineDecode(e, prompt, o.DecodeTokens, nil)
			if err != nil {
				return row, err
			}
			p, _, err := engineDecode(e, fmt.Sprintf("%d. %s", run, strings.Repeat("The little dog ran to the park. ", max(1, o.PrefillTokens/8))), 1, nil)
			if err != nil {
				return row, err
			}
			if e == auto {
				row.with, prefillAuto = append(row.with, s.decodeRate()), append(prefillAuto, p.prefillRate())
			} else {
				row.base, prefillAlt = append(row.base, s.decodeRate()), append(prefillAlt, p.prefillRate())
			}
		}
	}
	pa, _ := medianMin(prefillAuto)
	pb, _ := medianMin(prefillAlt)
	row.note = fmt.Sprintf("prefill (%d-token prompt) %.1f tok/s with %s vs %.1f with %s: %.2fx", max(1, o.PrefillTokens/8)*8, pa, chosen, pb, other, pa/max(pb, 1e-9))
	return row, nil
}

// engineDecode generates greedily through e and times it; spec nil leaves the engine's default.
func engineDecode(e *llamacpp.Engine, prompt string, tokens int, spec *llm.Speculative) (sample, llm.Done, error) {
	zero := 0.0
	return engineGenerate(e, &llm.Request{Prompt: prompt, AddSpecial: true, MaxTokens: tokens, IgnoreEOS: true, Sampling: llm.Sampling{Temperature: &zero}, Speculative: spec})
}

// engineGenerate runs req through e and times it: its first token, its last, and its end.
func engineGenerate(e *llamacpp.Engine, req *llm.Request) (sample, llm.Done, error) {
	s := sample{start: time.Now()}
	var done llm.Done
	err := e.Generate(context.Background(), req, func(ev llm.Event) error {
		now := time.Now()
		if ev.Tokens > 0 {
			if s.first.IsZero() {
				s.first, s.firstTokens = now, ev.Tokens
			}
			s.last = now
		}
		if ev.Done != nil {
			done = *ev.Done
			s.promptTokens, s.tokens = ev.Done.Usage.PromptTokens, ev.Done.Usage.CompletionTokens
		}
		return nil
	})
	s.end = time.Now()
	if err == nil && s.first.IsZero() {
		err = errors.New("the engine generated nothing")
	}
	return s, done, err
}
