package openai

import (
	"strings"

	"github.com/superfluid/superfluid/runtime/llm"
)

// outputBuilder turns one reply's events into the response's output items and, when
// streaming, announces them with OpenAI's events. Items appear in the order the reply
// produced them (usually reasoning, then a message, then function calls) and, as in
// OpenAI's streams, never overlap: an item is closed when one of another kind begins.
// Streamed and whole replies go through the same builder, so a response stores the same
// items however it was served.
//
// Logprobs follow the text: an event's logprobs go to the message when the event carried
// message text, and are dropped with its reasoning or call text (OpenAI serves logprobs for
// output_text only). Tokens whose text the core still holds back (a possible stop string or
// call marker) wait for the next event that shows where the text went; so do their counts,
// which make usage's reasoning_tokens. When text comes out, only the last held tokens that
// cover its bytes go with it: those before made no text (a reasoning end marker, whitespace
// the core trims).
type outputBuilder struct {
	send  func(responseEvent) error // nil when nothing streams
	tools *toolSet                  // maps the model's tool names back to the client's
	// encrypted puts a blob in each reasoning item, summary its text in the item's summary.
	encrypted, summary bool
	items              []item
	open               int             // position of the open item in items, -1 when none
	text               strings.Builder // the open message's or reasoning item's text
	lps                []tokenLogprob  // the open message's logprobs
	// Function calls by their delta index: position in items and arguments so far.
	callAt map[int]int
	args   map[int]*strings.Builder
	// ws is whitespace that came when no message was open: it starts the next message, if
	// one opens (whitespace between or after calls is not a message of its own).
	ws              string
	held            []llm.TokenLogprob
	heldTokens      int
	reasoningTokens int
}

func newOutputBuilder(send func(responseEvent) error, p *responseParams) *outputBuilder {
	return &outputBuilder{send: send, tools: p.tools, encrypted: p.encrypted, summary: p.summary,
		open: -1, callAt: map[int]int{}, args: map[int]*strings.Builder{}}
}

func (b *outputBuilder) emit(ev responseEvent) error {
	if b.send == nil {
		return nil
	}
	return b.send(ev)
}

// add takes the reply's next event (Done included: it may carry the last pieces).
func (b *outputBuilder) add(ev llm.Event) error {
	b.held = append(b.held, ev.Logprobs...)
	b.heldTokens += ev.Tokens
	if ev.Reasoning != "" {
		if err := b.reasoning(ev.Reasoning); err != nil {
			return err
		}
	}
	shown := false
	if ev.Text != "" {
		var err error
		if shown, err = b.content(ev.Text); err != nil {
			return err
		}
	}
	for _, d := range ev.ToolCalls {
		if err := b.call(d); err != nil {
			return err
		}
	}
	if !shown && (ev.Reasoning != "" || len(ev.ToolCalls) > 0) {
		if ev.Reasoning != "" {
			b.reasoningTokens += b.heldTokens
		}
		b.held, b.heldTokens = nil, 0
	}
	return nil
}

func (b *outputBuilder) openType() string {
	if b.open < 0 {
		return ""
	}
	return b.items[b.open].Type
}

// begin closes the open item and opens it.
func (b *outputBuilder) begin(it item) error {
	if err := b.close("completed"); err != nil {
		return err
	}
	b.items = append(b.items, it)
	b.open = len(b.items) - 1
	i, zero := b.open, 0
	if err := b.emit(responseEvent{Type: "response.output_item.added", OutputIndex: &i, Item: &it}); err != nil {
		return err
	}
	switch it.Type {
	case itemReasoning:
		if err := b.emit(responseEvent{Type: "response.content_part.added", OutputIndex: &i, ItemID: it.ID, ContentIndex: &zero,
			Part: &part{Type: "reasoning_text"}}); err != nil || !b.summary {
			return err
		}
		return b.emit(responseEvent{Type: "response.reasoning_summary_part.added", OutputIndex: &i, ItemID: it.ID, SummaryIndex: &zero,
			Part: &part{Type: "summary_text"}})
	case itemMessage:
		return b.emit(responseEvent{Type: "response.content_part.added", OutputIndex: &i, ItemID: it.ID, ContentIndex: &zero,
			Part: &part{Type: "output_text"}})
	}
	return nil
}

func (b *outputBuilder) reasoning(text string) error {
	if b.openType() != itemReasoning {
		if err := b.begin(item{ID: newID("rs_"), Type: itemReasoning}); err != nil {
			return err
		}
	}
	b.text.WriteString(text)
	i, zero := b.open, 0
	if err := b.emit(responseEvent{Type: "response.reasoning_text.delta", OutputIndex: &i, ItemID: b.items[i].ID,
		ContentIndex: &zero, Delta: &text}); err != nil || !b.summary {
		return err
	}
	return b.emit(responseEvent{Type: "response.reasoning_summary_text.delta", OutputIndex: &i, ItemID: b.items[i].ID,
		SummaryIndex: &zero, Delta: &text})
}

// content adds message text and reports whether it went out (whitespace may wait).
func (b *outputBuilder) content(text string) (bool, error) {
	if b.openType() != itemMessage {
		if strings.TrimSpace(text) == "" {
			b.ws += text
			return false, nil
		}
		if err := b.openMessage(); err != nil {
			return false, err
		}
	}
	return true, b.delta(text)
}

func (b *outputBuilder) openMessage() error {
	if err := b.begin(item{ID: newID("msg_"), Type: itemMessage, Status: "in_progress", Role: "assistant", Content: []part{}}); err != nil {
		return err
	}
	text := b.ws
	b.ws = ""
	if text == "" {
		return nil
	}
	return b.delta(text)
}

// delta sends message text with the logprobs held so far.
func (b *outputBuilder) delta(text string) error {
	var lps []tokenLogprob
	if len(b.held) > 0 {
		lps = fromLogprobs(coverText(b.held, text), true).Content
		b.held, b.heldTokens = nil, 0
	}
	b.text.WriteString(text)
	b.lps = append(b.lps, lps...)
	i, zero := b.open, 0
	return b.emit(responseEvent{Type: "response.output_text.delta", OutputIndex: &i, ItemID: b.items[i].ID,
		ContentIndex: &zero, Delta: &text, Logprobs: toEventLogprobs(lps)})
}

// call takes a tool-call delta: an opening one (id and name) begins a function_call item (a
// custom_tool_call for a custom tool), the rest add to its arguments. A custom call's input is
// inside its JSON arguments, so it goes out when the call is complete.
func (b *outputBuilder) call(d llm.ToolCallDelta) error {
	if _, ok := b.callAt[d.Index]; !ok || d.Name != "" {
		ref := b.tools.ref(d.Name)
		it := item{ID: newID("fc_"), Type: itemCall, Status: "in_progress", CallID: d.ID, Name: ref.name, Namespace: ref.namespace}
		if ref.custom {
			it.ID, it.Type = newID("ctc_"), itemCustomCall
		}
		if err := b.begin(it); err != nil {
			return err
		}
		b.callAt[d.Index], b.args[d.Index] = b.open, &strings.Builder{}
	}
	if d.Arguments == "" {
		return nil
	}
	b.args[d.Index].WriteString(d.Arguments)
	i := b.callAt[d.Index]
	if b.items[i].Type == itemCustomCall {
		return nil
	}
	return b.emit(responseEvent{Type: "response.function_call_arguments.delta", OutputIndex: &i, ItemID: b.items[i].ID, Delta: &d.Arguments})
}

// settle writes the open item's text, logprobs or arguments into it, with status.
func (b *outputBuilder) settle(status string) *item {
	it := &b.items[b.open]
	switch it.Type {
	case itemReasoning:
		text := b.text.String()
		it.Content = []part{{Type: "reasoning_text", Text: text}}
		if b.summary {
			it.Summary = []part{{Type: "summary_text", Text: text}}
		}
		if b.encrypted {
			it.EncryptedContent = sealReasoning(text)
		}
	case itemMessage:
		it.Status, it.Content = status, []part{{Type: "output_text", Text: b.text.String(), Logprobs: b.lps}}
	case itemCall, itemCustomCall:
		it.Status = status
		for idx, at := range b.callAt {
			if at == b.open {
				it.Arguments = b.args[idx].String()
			}
		}
		if it.Type == itemCustomCall {
			it.Input, it.Arguments = customInput(it.Arguments), ""
		}
	}
	return it
}

// close finishes the open item, if any, with the given status and announces it done.
func (b *outputBuilder) close(status string) error {
	if b.open < 0 {
		return nil
	}
	it := *b.settle(status)
	i, zero := b.open, 0
	b.open, b.lps = -1, nil
	b.text.Reset()
	var evs []responseEvent
	switch it.Type {
	case itemReasoning:
		text := it.Content[0].Text
		evs = append(evs,
			responseEvent{Type: "response.reasoning_text.done", OutputIndex: &i, ItemID: it.ID, ContentIndex: &zero, Text: &text},
			responseEvent{Type: "response.content_part.done", OutputIndex: &i, ItemID: it.ID, ContentIndex: &zero, Part: &it.Content[0]})
		if len(it.Summary) > 0 {
			evs = append(evs,
				responseEvent{Type: "response.reasoning_summary_text.done", OutputIndex: &i, ItemID: it.ID, SummaryIndex: &zero, Text: &text},
				responseEvent{Type: "response.reasoning_summary_part.done", OutputIndex: &i, ItemID: it.ID, SummaryIndex: &zero, Part: &it.Summary[0]})
		}
	case itemMessage:
		p := it.Content[0]
		evs = append(evs,
			responseEvent{Type: "response.output_text.done", OutputIndex: &i, ItemID: it.ID, ContentIndex: &zero, Text: &p.Text,
				Logprobs: toEventLogprobs(p.Logprobs)},
			responseEvent{Type: "response.content_part.done", OutputIndex: &i, ItemID: it.ID, ContentIndex: &zero, Part: &p})
	case itemCall:
		evs = append(evs, responseEvent{Type: "response.function_call_arguments.done", OutputIndex: &i, ItemID: it.ID, Arguments: &it.Arguments})
	case itemCustomCall:
		if it.Input != "" {
			evs = append(evs, responseEvent{Type: "response.custom_tool_call_input.delta", OutputIndex: &i, ItemID: it.ID, Delta: &it.Input})
		}
		evs = append(evs, responseEvent{Type: "response.custom_tool_call_input.done", OutputIndex: &i, ItemID: it.ID, Input: &it.Input})
	}
	evs = append(evs, responseEvent{Type: "response.output_item.done", OutputIndex: &i, Item: &it})
	for _, ev := range evs {
		if err := b.emit(ev); err != nil {
			return err
		}
	}
	return nil
}

// finish closes the last item with status ("completed", or "incomplete" when the reply was
// cut) and returns the output. A reply with neither text nor calls still gets its (empty)
// message, as OpenAI always answers with one.
func (b *outputBuilder) finish(status string) ([]item, error) {
	answered := false
	for _, it := range b.items {
		answered = answered || it.Type == itemMessage || it.Type == itemCall || it.Type == itemCustomCall
	}
	if !answered {
		if err := b.openMessage(); err != nil {
			return nil, err
		}
	}
	if err := b.close(status); err != nil {
		return nil, err
	}
	return b.items, nil
}

// partial is the output so far, the open item marked incomplete, for a failed response.
func (b *outputBuilder) partial() []item {
	out := make([]item, len(b.items))
	copy(out, b.items)
	if b.open >= 0 {
		out[b.open] = *b.settle("incomplete")
	}
	return out
}

// coverText is the tail of held whose bytes cover text: the tokens that made it.
func coverText(held []llm.TokenLogprob, text string) []llm.TokenLogprob {
	n := 0
	for i := len(held) - 1; i >= 0; i-- {
		if n += len(held[i].Bytes); n >= len(text) {
			return held[i:]
		}
	}
	return held
}
