package bench

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/superfluid/superfluid/runtime/llamacpp"
	"github.com/superfluid/superfluid/runtime/llm"
)

// claudeCodeFirst is Claude Code 2.1.332's first request, captured unmodified (a copy of
// server/anthropic/testdata/agents/claude-code-2.1.332-first.json; a test keeps them equal).
//
//go:embed agentdata/claude-code-2.1.332-first.json
var claudeCodeFirst []byte

// agentWindow is the least window the agents suite serves with: an agent's first prompt is
// about 20k tokens.
const agentWindow = 32768

// agentPrompt is the part of Claude Code's request an agent repeats on every turn: its system
// prompt blocks and its tools.
type agentPrompt struct {
	system []map[string]any
	tools  []any
	// total is how many tools the capture has.
	total int
}

// loadAgentPrompt reads the captured request; its tools go as captured (Workflow's maxLength
// 524288 included: the server relaxes limits the grammar cannot express).
func loadAgentPrompt() (agentPrompt, error) {
	var req struct {
		System []map[string]any `json:"system"`
		Tools  []any            `json:"tools"`
	}
	if err := json.Unmarshal(claudeCodeFirst, &req); err != nil {
		return agentPrompt{}, fmt.Errorf("read the Claude Code capture: %w", err)
	}
	return agentPrompt{system: req.System, tools: req.Tools, total: len(req.Tools)}, nil
}

// with is the prompt's system blocks with their text cut to chars characters (-1: whole), the
// first led by a nonce so that no cache holds any of it, and its first tools tools.
func (p agentPrompt) with(tools, chars int, nonce string) (system []map[string]any, toolList []any) {
	left := chars
	for i, b := range p.system {
		c := make(map[string]any, len(b))
		for k, v := range b {
			c[k] = v
		}
		text, _ := c["text"].(string)
		if left >= 0 {
			if len(text) > left {
				text = text[:left]
			}
			left -= len(text)
		}
		if i == 0 {
			text = nonce + " " + text
		}
		c["text"] = text
		if text != "" {
			system = append(system, c)
		}
	}
	return system, p.tools[:tools]
}

// text is the prompt as plain text (system blocks, then tools as JSON): what the engine
// prefills when called directly, cut to the server's prompt tokens.
func agentText(system []map[string]any, tools []any) string {
	var sb strings.Builder
	for _, b := range system {
		text, _ := b["text"].(string)
		sb.WriteString(text + "\n")
	}
	for _, t := range tools {
		data, _ := json.Marshal(t)
		sb.Write(data)
		sb.WriteString("\n")
	}
	return sb.String()
}

// agentTurn is one timed /v1/messages stream.
type agentTurn struct {
	ttft                 time.Duration
	promptTokens, cached int
	text                 string
}

// messages streams an Anthropic request and times its first token: the first content delta,
// or the final message_delta when the model ended at its first token. message_start comes
// when a lane takes the request, before the prefill, so it is not the first token.
func (b *apiClient) messages(body map[string]any) (agentTurn, error) {
	body["model"], body["stream"] = b.model, true
	data, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPost, b.url+"/v1/messages", bytes.NewReader(data))
	if err != nil {
		return agentTurn{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	start := time.Now()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return agentTurn{}, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(res.Body)
		return agentTurn{}, fmt.Errorf("/v1/messages: status %d: %.500s", res.StatusCode, msg)
	}
	var t agentTurn
	var text strings.Builder
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type    string `json:"type"`
			Message struct {
				Usage struct {
					InputTokens          int `json:"input_tokens"`
					CacheReadInputTokens int `json:"cache_read_input_tokens"`
				} `json:"usage"`
			} `json:"message"`
			Delta struct {
				Text string `json:"text"`
			} `json:"delta"`
			Error *struct{ Message string } `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			return t, err
		}
		switch ev.Type {
		case "error":
			return t, fmt.Errorf("stream error: %s", ev.Error.Message)
		case "message_start":
			u := ev.Message.Usage
			t.promptTokens, t.cached = u.InputTokens+u.CacheReadInputTokens, u.CacheReadInputTokens
		case "content_block_delta", "message_delta":
			if t.ttft == 0 {
				t.ttft = time.Since(start)
			}
			text.WriteString(ev.Delta.Text)
		}
	}
	t.text = text.String()
	if t.ttft == 0 {
		return t, fmt.Errorf("/v1/messages: the stream ended without a token")
	}
	return t, sc.Err()
}

// countTokens is /v1/messages/count_tokens of an Anthropic request body.
func (b *apiClient) countTokens(body map[string]any) (int, error) {
	body["model"] = b.model
	data, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPost, b.url+"/v1/messages/count_tokens", bytes.NewReader(data))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(res.Body)
		return 0, fmt.Errorf("/v1/messages/count_tokens: status %d: %.500s", res.StatusCode, msg)
	}
	var out struct {
		InputTokens int `json:"input_tokens"`
	}
	err = json.NewDecoder(res.Body).Decode(&out)
	return out.InputTokens, err
}

const agentUser = "Say hi"

// firstTurn is the agent's first request: its system prompt and tools, then a short user turn.
func firstTurn(system []map[string]any, tools []any) map[string]any {
	return map[string]any{"max_tokens": 8, "system": system, "tools": tools,
		"messages": []map[string]any{{"role": "user", "content": agentUser}}}
}

// fit finds the most of the prompt that stays within target tokens: the tools that fit, in the
// capture's order, skipping one that would not; when not even the system prompt fits, as much
// of its text as does.
func (p agentPrompt) fit(api *apiClient, target int) (tools []any, chars int, err error) {
	count := func(tools []any, chars int) (int, error) {
		system, _ := p.with(0, chars, "Session 0.")
		return api.countTokens(firstTurn(system, tools))
	}
	n, err := count(nil, -1)
	if err != nil {
		return nil, 0, err
	}
	if n <= target {
		for _, tool := range p.tools {
			more := append(tools[:len(tools):len(tools)], tool)
			if n, err = count(more, -1); err != nil {
				return nil, 0, err
			}
			if n <= target {
				tools = more
			}
		}
		return tools, -1, nil
	}
	// The most characters of system text within target (the prompt grows with them).
	lo, hi := 0, len(agentText(p.system, nil))
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if n, err = count(nil, mid); err != nil {
			return nil, 0, err
		}
		if n <= target {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return nil, lo, nil
}

// benchAgents measures what a coding agent waits for: the time to the first token of Claude
// Code's first request (its system prompt and tools, about 20k tokens on a 32k-token window)
// cold; warm, the same system prompt and tools with a new last user turn; and turn 2, what the
// agent sends next (the first turn, its reply, a new user turn); each next to the engine's own
// prefill of the same number of tokens of the same text, called directly in this process.
// Requests go through /v1/messages, streaming. A fresh nonce leads each cold request, so
// nothing is cached; the engine runs with its cache off.
func benchAgents(model string, o Options, w io.Writer) error {
	target := orDefault(o.AgentTokens, 20000)
	window := max(o.ContextLength, agentWindow, target+1024)
	direct, err := llamacpp.Load(llamacpp.Options{ModelPath: model, ContextLength: window, Parallel: 1, Threads: o.Threads})
	if err != nil {
		return err
	}
	defer direct.Close()
	api, stop, err := serve(o, ServeOptions{Model: model, Parallel: 1, Threads: direct.Info().Threads, ContextLength: window})
	if err != nil {
		return err
	}
	defer stop()
	p, err := loadAgentPrompt()
	if err != nil {
		return err
	}
	tools, chars, err := p.fit(api, target)
	if err != nil {
		return err
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i], _ = t.(map[string]any)["name"].(string)
	}
	var engine, cold, warm, turn2 []float64
	var first, second, third agentTurn
	for run := range o.Repeat {
		system, _ := p.with(0, chars, fmt.Sprintf("Session %d-%d.", run, time.Now().UnixNano()))
		list := tools
		body := firstTurn(system, list)
		if first, err = api.messages(body); err != nil {
			return fmt.Errorf("cold request: %w", err)
		}
		// The same system prompt and tools with a new last user turn.
		body["messages"] = []map[string]any{{"role": "user", "content": "Now list the files here."}}
		if second, err = api.messages(body); err != nil {
			return fmt.Errorf("warm request: %w", err)
		}
		// What Claude Code sends next: the first turn, its reply and a new user turn.
		reply := strings.TrimSpace(first.text)
		if reply == "" {
			reply = "Hi."
		}
		body["messages"] = []map[string]any{{"role": "user", "content": agentUser},
			{"role": "assistant", "content": reply}, {"role": "user", "content": "Now list the files here."}}
		if third, err = api.messages(body); err != nil {
			return fmt.Errorf("second-turn request: %w", err)
		}
		d, err := enginePrefill(direct, agentText(system, list), first.promptTokens)
		if err != nil {
			return fmt.Errorf("engine run: %w", err)
		}
		engine, cold = append(engine, d.Seconds()), append(cold, first.ttft.Seconds())
		warm, turn2 = append(warm, second.ttft.Seconds()), append(turn2, third.ttft.Seconds())
	}
	scope := fmt.Sprintf("its system prompt and %d of its %d tools (%s)", len(tools), p.total, strings.Join(names, ", "))
	if chars >= 0 {
		scope = fmt.Sprintf("the first %d characters of its system prompt, no tools", chars)
	}
	fmt.Fprintf(w, "model %s, window %d, threads %d, %d runs; Claude Code 2.1.332's first request: %s, through /v1/messages streaming\n",
		api.model, window, direct.Info().Threads, o.Repeat, scope)
	fmt.Fprintf(w, "cold: %d prompt tokens, nothing cached; warm: a new last user turn, %d prompt tokens, %d of them cached; "+
		"turn 2: first turn + reply + new turn, %d prompt tokens, %d of them cached\n",
		first.promptTokens, second.promptTokens, second.cached, third.promptTokens, third.cached)
	em, ei := medianMin(engine)
	cm, ci := medianMin(cold)
	wm, wi := medianMin(warm)
	tm, ti := medianMin(turn2)
	fmt.Fprintf(w, "%-22s %12s %12s %14s\n", "", "median", "min", "vs engine")
	fmt.Fprintf(w, "%-22s %12s %12s\n", "engine prefill", seconds(em), seconds(ei))
	fmt.Fprintf(w, "%-22s %12s %12s %13.1f%%\n", "cold TTFT (API)", seconds(cm), seconds(ci), 100*cm/em)
	fmt.Fprintf(w, "%-22s %12s %12s %13.1f%%\n", "warm TTFT (API)", seconds(wm), seconds(wi), 100*wm/em)
	fmt.Fprintf(w, "%-22s %12s %12s %13.1f%%\n", "turn 2 TTFT (API)", seconds(tm), seconds(ti), 100*tm/em)
	fmt.Fprintf(w, "warm/cold (medians) %.1f%%, turn 2/cold %.1f%% (target: at most 5%%)\n", 100*wm/cm, 100*tm/cm)
	if third.cached < second.cached/2 {
		fmt.Fprintln(w, "turn 2 missed the cache: the model's chat template renders a longer conversation's start differently (the fallback template, for models without one, does)")
	}
	return nil
}

// enginePrefill times the engine's prefill of text's first n tokens (text repeated when it is
// shorter) to its first token, with the cache off.
func enginePrefill(e *llamacpp.Engine, text string, n int) (time.Duration, error) {
	var tokens []int
	for len(tokens) < n {
		more, err := e.Tokenize(context.Background(), text, len(tokens) == 0, false)
		if err != nil {
			return 0, err
		}
		if len(more) == 0 {
			return 0, fmt.Errorf("the text tokenizes to nothing")
		}
		tokens = append(tokens, more...)
	}
	zero := 0.0
	req := &llm.Request{Tokens: tokens[:n], MaxTokens: 1, IgnoreEOS: true, NoCache: true, Sampling: llm.Sampling{Temperature: &zero}}
	start := time.Now()
	var first time.Duration
	err := e.Generate(context.Background(), req, func(ev llm.Event) error {
		if first == 0 && (ev.Tokens > 0 || ev.Done != nil) {
			first = time.Since(start)
		}
		return nil
	})
	return first, err
}
