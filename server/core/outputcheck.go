package core

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/schema"
)

// outputCheck checks what a grammar produced against the schema the grammar could not express
// whole (schema.Grammar left out or loosened some keywords), and says in Done.Warning where the
// output breaks it. Limits nothing enforces (an unknown format, a pattern Go cannot compile)
// are named in every reply's warning.
type outputCheck struct {
	full json.RawMessage // the response format's schema; nil for a forced tool call
	// tools maps each tool that had relaxations to its parameters, for a forced call.
	tools map[string]json.RawMessage
	// calls, when set, are the tools a reply may call instead of following full (a format
	// beside tools): a reply that is such a call is not checked against full.
	calls map[string]json.RawMessage
	// unchecked are the limits nothing enforces, by tool ("" for the format): named in the
	// warning of a reply that uses them.
	unchecked map[string][]string
	text      []strings.Builder
}

func (o *outputCheck) noteUnchecked(r schema.Relaxation) {
	if r.Checked {
		return
	}
	if o.unchecked == nil {
		o.unchecked = map[string][]string{}
	}
	o.unchecked[r.Tool] = append(o.unchecked[r.Tool], r.String())
}

// checkFormat relaxes gen's response format for the grammar and returns its check; nil when the
// grammar expresses all of it (or there is no schema).
func checkFormat(gen *llm.Request, n int) (*outputCheck, error) {
	if gen.Format != llm.FormatSchema {
		return nil, nil
	}
	g, relaxed, err := schema.Grammar(gen.Schema)
	if err != nil {
		return nil, err
	}
	if len(relaxed) == 0 {
		return nil, nil
	}
	o := &outputCheck{full: gen.Schema, text: make([]strings.Builder, n)}
	for _, r := range relaxed {
		o.noteUnchecked(r)
	}
	gen.Schema = g
	return o, nil
}

// checkCalls is the check of a forced call's arguments, for the tools whose parameters were
// relaxed.
func checkCalls(relaxed []schema.Relaxation, params map[string]json.RawMessage, n int) *outputCheck {
	if len(relaxed) == 0 {
		return nil
	}
	o := &outputCheck{tools: map[string]json.RawMessage{}, text: make([]strings.Builder, n)}
	for _, r := range relaxed {
		o.tools[r.Tool] = params[r.Tool]
		o.noteUnchecked(r)
	}
	return o
}

// wrap checks each choice's raw text at its Done; o may be nil.
func (o *outputCheck) wrap(emit Emit) Emit {
	if o == nil {
		return emit
	}
	return func(i int, ev llm.Event) error {
		o.text[i].WriteString(ev.Text)
		if ev.Done != nil {
			ev.Done.Warning = JoinWarnings(ev.Done.Warning, o.warning(o.text[i].String(), ev.Done.FinishReason))
		}
		return emit(i, ev)
	}
}

// warning says what the grammar did not enforce and where text breaks the full schema. A reply
// cut by the cap is not checked: it cannot be whole.
func (o *outputCheck) warning(text, finish string) string {
	calls := forcedCalls(text)
	isCall := o.isCall(calls)
	var unchecked []string
	if !isCall {
		unchecked = o.unchecked[""]
	}
	seen := map[string]bool{}
	for _, c := range calls {
		if !seen[c.name] {
			seen[c.name] = true
			unchecked = append(unchecked, o.unchecked[c.name]...)
		}
	}
	var notes []string
	if len(unchecked) > 0 {
		notes = append(notes, "the grammar engine could not enforce, and nothing checked: "+strings.Join(unchecked, "; "))
	}
	if finish == llm.FinishLength {
		return strings.Join(notes, "; ")
	}
	if o.full != nil && !isCall {
		vs, err := schema.Validate(o.full, []byte(text))
		if (err == nil || errors.Is(err, schema.ErrValidateBudget)) && len(vs) > 0 {
			notes = append(notes, "the reply breaks its JSON schema where the grammar engine could not enforce it: "+violations(vs))
		}
		if errors.Is(err, schema.ErrValidateBudget) {
			notes = append(notes, "the reply was not checked whole against its JSON schema: "+err.Error())
		}
	}
	for _, c := range calls {
		params, ok := o.tools[c.name]
		if !ok || c.args == nil {
			continue
		}
		vs, err := schema.Validate(params, c.args)
		if (err == nil || errors.Is(err, schema.ErrValidateBudget)) && len(vs) > 0 {
			notes = append(notes, fmt.Sprintf("the arguments of the call to %q break the tool's parameters schema where the grammar engine could not enforce it: %s", c.name, violations(vs)))
		}
		if errors.Is(err, schema.ErrValidateBudget) {
			notes = append(notes, fmt.Sprintf("the arguments of the call to %q were not checked whole: %v", c.name, err))
		}
	}
	return strings.Join(notes, "; ")
}

// isCall reports whether cs (a reply read as calls) are calls to o.calls.
func (o *outputCheck) isCall(cs []rawCall) bool {
	if o.calls == nil {
		return false
	}
	for _, c := range cs {
		if _, ok := o.calls[c.name]; !ok {
			return false
		}
	}
	return len(cs) > 0
}

func violations(vs []schema.Violation) string {
	const most = 5
	var parts []string
	for i, v := range vs {
		if i == most {
			parts = append(parts, fmt.Sprintf("and %d more", len(vs)-most))
			break
		}
		parts = append(parts, v.String())
	}
	return strings.Join(parts, "; ")
}

type rawCall struct {
	name string
	args []byte
}

// callName finds the names of calls in text the cap cut (which does not parse).
var callName = regexp.MustCompile(`"name"\s*:\s*"((?:[^"\\]|\\.)*)"`)

// forcedCalls reads the calls a forced call's grammar produced: one {"name", "arguments"}
// object, or an array of them. From text that does not parse (cut by the cap) it reads only
// the names, without arguments.
func forcedCalls(text string) []rawCall {
	if calls, ok := wholeCalls(text); ok {
		return calls
	}
	var out []rawCall
	for _, m := range callName.FindAllStringSubmatch(text, -1) {
		var name string
		if json.Unmarshal([]byte(`"`+m[1]+`"`), &name) == nil {
			out = append(out, rawCall{name: name})
		}
	}
	return out
}

func wholeCalls(text string) ([]rawCall, bool) {
	type call struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	var list []call
	t := bytes.TrimSpace([]byte(text))
	if len(t) > 0 && t[0] == '[' {
		if json.Unmarshal(t, &list) != nil {
			return nil, false
		}
	} else {
		var one call
		if json.Unmarshal(t, &one) != nil {
			return nil, false
		}
		list = []call{one}
	}
	var out []rawCall
	for _, c := range list {
		out = append(out, rawCall{c.Name, c.Arguments})
	}
	return out, true
}
