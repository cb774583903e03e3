package openai

import (
	"fmt"
	"slices"

	"github.com/superfluid/superfluid/runtime/llm"
)

// The Responses API's reasoning, include and logprobs parameters, converted to the core's form.
//
// Decisions:
//   - reasoning.effort goes to the template as reasoning_effort; "none" instead sets
//     enable_thinking false (a template that cannot stop reasoning keeps its default), any
//     other effort sets enable_thinking true. Explicit chat_template_kwargs win, then the
//     top-level enable_thinking.
//   - reasoning.summary (auto, concise, detailed): the reasoning item's summary is one
//     summary_text part holding the reasoning itself (this server has no summarizer), streamed
//     as reasoning_summary_text deltas beside the reasoning_text ones. Without it the summary
//     stays empty and the reasoning is in the item's content only.
//   - include: message.output_text.logprobs turns logprobs on; reasoning.encrypted_content
//     adds the server's own blob to each reasoning item (responses_blob.go); values about
//     tools this server does not run name nothing here and are accepted silently; an unknown
//     value is ignored with a warning, never refused (a newer client may send one).
//   - top_logprobs (0-20) sets the alternatives per token; above 0 it turns logprobs on too:
//     asking for alternatives and getting none would be a silent drop.

// reasoningEfforts are OpenAI's values of reasoning.effort.
var reasoningEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh", "max"}

// toTemplateKwargs merges chat_template_kwargs, enable_thinking and reasoning.effort into the
// template variables, in that order of precedence, and returns the reasoning echo.
func toTemplateKwargs(req *responseRequest) (map[string]any, reasoningConfig, error) {
	kwargs := req.ChatTemplateKwargs
	if req.EnableThinking != nil {
		kwargs = withKwarg(kwargs, "enable_thinking", *req.EnableThinking)
	}
	var echo reasoningConfig
	if r := req.Reasoning; r != nil {
		echo = reasoningConfig{Effort: r.Effort, Summary: r.Summary}
		if r.Effort != nil {
			effort := *r.Effort
			if !slices.Contains(reasoningEfforts, effort) {
				return nil, echo, invalid("reasoning.effort", fmt.Sprintf("reasoning.effort is %q; use one of none, minimal, low, medium, high, xhigh, max", effort))
			}
			kwargs = withKwarg(kwargs, "enable_thinking", effort != "none")
			if effort != "none" {
				kwargs = withKwarg(kwargs, "reasoning_effort", effort)
			}
		}
		if s := r.Summary; s != nil && *s != "auto" && *s != "concise" && *s != "detailed" {
			return nil, echo, invalid("reasoning.summary", fmt.Sprintf("reasoning.summary is %q; use auto, concise or detailed", *s))
		}
	}
	return kwargs, echo, nil
}

// Include values this server serves.
const (
	includeLogprobs  = "message.output_text.logprobs"
	includeEncrypted = "reasoning.encrypted_content"
)

// includables are OpenAI's include values. Those about tools this server does not run name
// nothing here and are accepted without a word.
var includables = []string{includeLogprobs, includeEncrypted, "file_search_call.results", "web_search_call.results",
	"web_search_call.action.sources", "message.input_image.image_url", "computer_call_output.output.image_url", "code_interpreter_call.outputs"}

// toLogprobs reads include and top_logprobs into the engine request, and returns a warning for
// the include values it does not know.
func toLogprobs(req *responseRequest, gen *llm.Request) ([]string, error) {
	var warnings []string
	for i, inc := range req.Include {
		if !slices.Contains(includables, inc) {
			warnings = append(warnings, fmt.Sprintf("include[%d] %q is not a value this server knows; it was ignored", i, inc))
		}
	}
	gen.Logprobs = slices.Contains(req.Include, includeLogprobs)
	if req.TopLogprobs != nil {
		n := *req.TopLogprobs
		if n < 0 || n > llm.MaxTopLogprobs {
			return nil, invalid("top_logprobs", fmt.Sprintf("top_logprobs must be between 0 and %d, got %d", llm.MaxTopLogprobs, n))
		}
		gen.TopLogprobs = n
		gen.Logprobs = gen.Logprobs || n > 0
	}
	return warnings, nil
}
