// Package chat renders conversations into prompts with the model's own Jinja
// chat template (the GGUF key tokenizer.chat_template), the way Hugging Face
// transformers and llama.cpp's server do it.
//
// # Template environment
//
// A template sees the variables HF's apply_chat_template provides:
//
//   - messages: a list of dicts with keys role and content, plus name and
//     tool_call_id when the message sets them (absent, not empty, otherwise).
//     An assistant message with calls has tool_calls, a list of {"id",
//     "type": "function", "function": {"name", "arguments"}} with arguments
//     a dict (templates that want text apply tojson), and content None when
//     its text is empty, as OpenAI clients send it (llama.cpp passes null
//     too; DeepSeek-V3 style templates test content is none to find calls).
//     An assistant message with reasoning has reasoning_content. Tool
//     results keep role tool.
//   - bos_token, eos_token: the text of the model's BOS/EOS tokens;
//   - add_generation_prompt: whether to end with the assistant header;
//   - tools: None without tools, else a list of {"type": "function",
//     "function": {"name", "description", "parameters"}}, parameters the
//     parsed JSON schema (key order kept) or {"type": "object",
//     "properties": {}} when the tool has none, description absent when
//     empty;
//   - every entry of Options.Kwargs (chat_template_kwargs such as
//     enable_thinking) as a top-level variable. A kwarg named like one of
//     the variables above is refused (an error wrapping ErrTemplate).
//
// Tools, tool_calls and tool results reach the template this way only when
// it reads tools itself (NativeTools). Any other template, the fallback
// included, gets the tool polyfill instead:
//
//   - with tools, an instruction is added to the first system message
//     (after its text, past a blank line), or as a new system message:
//     "You can call these functions:", one JSON object per line
//     ({"name", "description", "parameters"}), a blank line, then "To call
//     functions, reply with only a JSON object {"name": <function name>,
//     "arguments": <arguments object>}, or a JSON array of such objects to
//     call several. The results come back in a user message." A template
//     that refuses the added system message (raise_exception) gets the
//     instruction at the start of the first user message instead;
//   - an assistant turn with calls has the calls' JSON as its content (an
//     object, or an array for several), which is what GenericToolParser
//     reads back from a reply;
//   - tool results become a user turn, "Result of tool call <id>
//     (<name>):" and the content on the next line; consecutive results
//     join into one user turn, separated by blank lines, so templates that
//     require alternating roles still render.
//
// The polyfill writes JSON with Python json.dumps's separators (a space
// after each comma and colon) and the key order the client sent; native
// templates write theirs with tojson, which matches HF's, indent=N
// included. Render checks tools (CheckTools) and tool-call arguments
// (CheckMessages) before rendering.
//
// Functions and filters come from github.com/ardanlabs/jinja, which already
// has what chat templates use: raise_exception, strftime_now, namespace,
// tojson, trim, and the string methods strip, split, startswith, endswith,
// upper, lower, replace and friends. Whitespace follows HF's Jinja2
// environment exactly (this package applies it itself; see whitespace.go):
// trim_blocks and lstrip_blocks are on, the "-" and "+" markers work, line
// endings in the template are normalized to "\n" and a single trailing
// newline of the template is dropped.
//
// Templates that start with {{ bos_token }} put the BOS text into the prompt;
// a caller whose tokenizer adds BOS itself should strip that leading
// Options.BOSToken (as llama.cpp does) or tokenize without adding BOS.
//
// # Fallback template
//
// A model without a chat template (a base model such as stories260K, trained
// on plain TinyStories text) gets a built-in fallback, designed so that the
// model simply continues the text it is given:
//
//   - A lone user message, optionally after one system message, renders as
//     the bare text: the system content, a blank line ("\n\n"), then the user
//     content. There is no scaffold at all, with or without
//     AddGenerationPrompt, so "Once upon a time" continues as a story.
//   - Any longer conversation renders as a plain transcript: one entry per
//     message, "System: ...", "User: ...", "Assistant: ..." (the role with
//     its first letter upper-cased), entries separated by a blank line. With
//     AddGenerationPrompt the transcript ends with a blank line and
//     "Assistant:" (no trailing space) for the model to complete.
//
// The fallback never emits BOS text; the tokenizer adds BOS. Its Jinja source
// is available from Source, like any other template.
package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ardanlabs/jinja"

	"github.com/superfluid/superfluid/runtime/llm"
)

// ErrTemplate is wrapped by every error from Parse and by Render's errors
// about the template: one that fails while rendering or refuses the
// conversation with raise_exception, and chat_template_kwargs it cannot
// take. Bad tools and tool calls wrap ErrToolSchema and ErrToolArguments.
var ErrTemplate = errors.New("chat template")

// Message is one turn of a conversation.
type Message struct {
	Role       string // system, user, assistant, tool
	Content    string
	Name       string // optional
	ToolCallID string // optional, for role tool
	// ToolCalls are the calls an assistant turn made (history sent back by the client).
	ToolCalls []ToolCall
	// Reasoning is an assistant turn's reasoning (reasoning_content), for templates that
	// render it.
	Reasoning string
	// Media are the images and audio clips of a user turn, each at its byte offset in
	// Content (llm.MediaPart.At, ascending). The core decodes them and renders a marker at
	// each offset; Render itself ignores them.
	Media []llm.MediaPart
}

// Tool is a function the model may call, as the client declared it.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments: an object schema, or nil for none.
	Parameters json.RawMessage
}

// Options are the per-request inputs of a render besides the messages.
type Options struct {
	// BOSToken and EOSToken are the text of the model's BOS/EOS tokens (from
	// the GGUF vocab); templates use {{ bos_token }} and {{ eos_token }}.
	BOSToken, EOSToken string
	// AddGenerationPrompt is true for a chat completion: end the prompt with
	// the assistant header.
	AddGenerationPrompt bool
	// Kwargs are chat_template_kwargs (e.g. enable_thinking), passed to the
	// template as top-level variables.
	Kwargs map[string]any
	// Tools are the functions the model may call this turn; nil for none.
	Tools []Tool
}

// Template is a compiled chat template. It is safe for concurrent use.
type Template struct {
	src      string
	tmpl     *jinja.Template
	fallback bool
	features features
}

// Parse compiles a Jinja chat template once. An empty (or all-whitespace)
// source returns the fallback template described in the package doc.
func Parse(source string) (t *Template, err error) {
	fallback := strings.TrimSpace(source) == ""
	if fallback {
		source = fallbackSource
	}
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, fmt.Errorf("%w: parse: %v", ErrTemplate, r)
		}
	}()
	rewritten, err := rewrite(source)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTemplate, err)
	}
	tmpl, err := jinja.Compile(rewritten)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTemplate, err)
	}
	return &Template{src: source, tmpl: tmpl, fallback: fallback, features: scanFeatures(source)}, nil
}

// IsFallback reports whether the template is the built-in fallback (the
// model had no template).
func (t *Template) IsFallback() bool { return t.fallback }

// Source returns the template text: the model's, or the fallback's.
func (t *Template) Source() string { return t.src }

// Render renders msgs into a prompt. Template errors, including
// raise_exception('...') from templates that refuse a role order, come back
// as an error wrapping ErrTemplate whose message quotes the template's own
// message, e.g. "chat template: Conversation roles must alternate ...";
// so does a chat_template_kwarg named like a reserved variable. Tools that
// CheckTools refuses return its ErrToolSchema error, history tool calls
// that CheckMessages refuses its ErrToolArguments error. A template that refuses
// (or drops) a system message gets it folded into a user turn (system.go).
func (t *Template) Render(msgs []Message, opts Options) (string, error) {
	if err := checkKwargs(opts.Kwargs); err != nil {
		return "", err
	}
	if err := CheckTools(opts.Tools); err != nil {
		return "", err
	}
	if err := CheckMessages(msgs); err != nil {
		return "", err
	}
	return t.renderSystem(msgs, opts)
}

// renderTools renders msgs with the template's own tool syntax or the tool polyfill.
func (t *Template) renderTools(msgs []Message, opts Options) (string, error) {
	if t.NativeTools() {
		return t.render(msgs, opts)
	}
	return t.renderPolyfill(msgs, opts)
}

// render runs the template on msgs and opts as they are.
func (t *Template) render(msgs []Message, opts Options) (out string, err error) {
	defer func() {
		// The jinja library panics on a few malformed inputs (for example
		// a select filter without a test); a bad template must cost one
		// request, never the process.
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("%w: render failed: %v", ErrTemplate, r)
		}
	}()
	env, err := environment(msgs, opts)
	if err != nil {
		return "", err
	}
	out, err = t.tmpl.RenderValues(env)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrTemplate, err)
	}
	return out, nil
}

// environment builds the template variables. Values are built fresh for
// every render because templates may mutate them (dict.update,
// list.append). Render has checked the kwargs, tools and messages.
func environment(msgs []Message, opts Options) (map[string]jinja.Value, error) {
	env := make(map[string]jinja.Value, len(opts.Kwargs)+10)
	for k, v := range opts.Kwargs {
		env[k] = jinja.FromGoValue(v)
	}
	for k, v := range new(guard).values() {
		env[k] = v
	}
	list := make([]jinja.Value, len(msgs))
	for i, m := range msgs {
		v, err := messageValue(m)
		if err != nil {
			return nil, fmt.Errorf("messages[%d]: %w", i, err)
		}
		list[i] = v
	}
	tools, err := toolsValue(opts.Tools)
	if err != nil {
		return nil, err
	}
	env["messages"] = jinja.NewList(list)
	env["bos_token"] = jinja.NewString(opts.BOSToken)
	env["eos_token"] = jinja.NewString(opts.EOSToken)
	env["add_generation_prompt"] = jinja.NewBool(opts.AddGenerationPrompt)
	env["tools"] = tools
	env[indentedJSONFunc] = indentedJSON
	return env, nil
}

// messageValue converts m to a dict with HF's key order (role, content,
// then the optional keys), which tojson and items() expose. The tool keys
// are absent, not empty, when unset: Llama 3.1's template tests
// 'tool_calls' in message.
func messageValue(m Message) (jinja.Value, error) {
	v := jinja.NewDict()
	d := v.AsDict()
	d.Set("role", jinja.NewString(m.Role))
	calls := m.Role == "assistant" && len(m.ToolCalls) > 0
	if calls && m.Content == "" {
		d.Set("content", jinja.None())
	} else {
		d.Set("content", jinja.NewString(m.Content))
	}
	if m.Name != "" {
		d.Set("name", jinja.NewString(m.Name))
	}
	if m.ToolCallID != "" {
		d.Set("tool_call_id", jinja.NewString(m.ToolCallID))
	}
	if calls {
		list, err := toolCallsValue(m.ToolCalls)
		if err != nil {
			return jinja.None(), err
		}
		d.Set("tool_calls", list)
	}
	if m.Role == "assistant" && m.Reasoning != "" {
		d.Set("reasoning_content", jinja.NewString(m.Reasoning))
	}
	return v, nil
}

// fallbackSource is the template for models without one; see the package
// doc for what it renders.
const fallbackSource = `{#- superfluid fallback: plain text for base models without a chat template -#}
{%- set n = messages | length -%}
{%- if (n == 1 and messages[0].role in ['system', 'user']) or (n == 2 and messages[0].role == 'system' and messages[1].role == 'user') -%}
    {{- messages[0].content -}}
    {%- if n == 2 -%}
        {%- if messages[0].content and messages[1].content -%}{{- '\n\n' -}}{%- endif -%}
        {{- messages[1].content -}}
    {%- endif -%}
{%- else -%}
    {%- for message in messages -%}
        {%- if not loop.first -%}{{- '\n\n' -}}{%- endif -%}
        {{- message.role | capitalize ~ ':' -}}
        {#- A reply the model began with a space joins "Assistant:" as generated, so the next turn's prompt repeats its tokens (and the prefix cache serves them). -#}
        {%- if message.content and (message.content.startswith(' ') or message.content.startswith('\n')) -%}{{- message.content -}}
        {%- elif message.content -%}{{- ' ' ~ message.content -}}{%- endif -%}
    {%- endfor -%}
    {%- if add_generation_prompt -%}
        {%- if n > 0 -%}{{- '\n\n' -}}{%- endif -%}
        {{- 'Assistant:' -}}
    {%- endif -%}
{%- endif -%}
`
