package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/sse"
)

// completionRequest is POST /v1/completions. Per the spec it does not read stop, n,
// logit_bias, response_format or tools.
type completionRequest struct {
	Model     *string         `json:"model"`
	Prompt    json.RawMessage `json:"prompt"`
	Suffix    *string         `json:"suffix"`
	FIMMode   string          `json:"fim_mode"`
	Stream    bool            `json:"stream"`
	Echo      bool            `json:"echo"`
	MaxTokens *int            `json:"max_tokens"`
	Logprobs  *int            `json:"logprobs"`
	samplingParams
	StreamOptions *streamOptions `json:"stream_options"`
}

// defaultCompletionTokens caps a text completion that names no cap when --max-tokens is unset.
const defaultCompletionTokens = 128

type textCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	SystemFingerprint string       `json:"system_fingerprint"`
	Choices           []textChoice `json:"choices"`
	Usage             *usage       `json:"usage,omitempty"`
	Superfluid        *fimExtra    `json:"superfluid,omitempty"`
}

type textChoice struct {
	Text         string        `json:"text"`
	Index        int           `json:"index"`
	Logprobs     *textLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

// textLogprobs is the legacy completions logprobs object: parallel lists, one entry per token.
type textLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float64            `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

// toTextLogprobs converts the engine's logprobs; offset is where the first token's text starts
// in the choice's text (after an echoed prompt, or after earlier chunks when streaming).
func toTextLogprobs(in []llm.TokenLogprob, top bool, offset int) *textLogprobs {
	out := &textLogprobs{Tokens: []string{}, TokenLogprobs: []float64{}, TextOffset: []int{}}
	if top {
		out.TopLogprobs = []map[string]float64{}
	}
	for _, t := range in {
		out.Tokens = append(out.Tokens, t.Token)
		out.TokenLogprobs = append(out.TokenLogprobs, t.Logprob)
		out.TextOffset = append(out.TextOffset, offset)
		offset += len(t.Bytes)
		if top {
			m := make(map[string]float64, len(t.Top))
			for _, a := range t.Top {
				m[a.Token] = a.Logprob
			}
			out.TopLogprobs = append(out.TopLogprobs, m)
		}
	}
	return out
}

// fimExtra is superfluid's object on a completion reply.
type fimExtra struct {
	Cached   int    `json:"cached"`
	Expired  bool   `json:"expired"`
	ServedBy string `json:"served_by"`
	// Spec is what speculative decoding drafted and kept; only when it ran.
	Spec *core.SpecReport `json:"spec,omitempty"`
}

func (h *handlers) completions(c *gin.Context) error {
	var req completionRequest
	if err := decode(c.Request, &req); err != nil {
		return err
	}
	prompt, err := completionPrompt(&req, h.svc.ModelOptional())
	if err != nil {
		return err
	}
	ka, err := keepAlive(req.KeepAlive)
	if err != nil {
		return err
	}
	if err := h.svc.CheckKeepAlive(c.Request.Context(), ka); err != nil {
		return err // keep_alive 0 unloads the model: an admin key's call once keys exist
	}
	gen := llm.Request{IgnoreEOS: req.IgnoreEOS, NoCache: req.CachePrompt != nil && !*req.CachePrompt}
	if gen.Sampling, err = toSampling(&req.samplingParams); err != nil {
		return err
	}
	if gen.Speculative, err = speculative(req.Speculative); err != nil {
		return err
	}
	if gen.Adapters, err = adapters(req.Lora); err != nil {
		return err
	}
	if err := checkCap("max_tokens", req.MaxTokens); err != nil {
		return err
	}
	gen.MaxTokens = h.svc.DefaultMaxTokens(c.Request.Context()) // --max-tokens, or a batch line's cap
	if req.MaxTokens != nil {
		gen.MaxTokens = *req.MaxTokens
	}
	if gen.MaxTokens == 0 {
		gen.MaxTokens = defaultCompletionTokens
	}
	if req.Logprobs != nil {
		gen.Logprobs, gen.TopLogprobs = true, *req.Logprobs
	}
	id := newID("cmpl-")
	run := func(emit core.Emit) (*core.Result, error) {
		if req.Suffix == nil {
			return h.svc.Complete(c.Request.Context(), &core.CompletionRequest{
				ID: id, Endpoint: "/v1/completions", Stream: req.Stream, Model: *req.Model, Generation: withPrompt(gen, prompt), KeepAlive: ka,
			}, emit)
		}
		if ok, wait := h.fim.Take(c.ClientIP()); !ok {
			secs := max(1, int((wait+time.Second-1)/time.Second))
			return nil, &Error{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: "completion_rate_limited", RetryAfter: secs,
				Message: fmt.Sprintf("too many fill-in-the-middle requests from this client; retry in %d s", secs)}
		}
		if h.opts.CompletionDeadline > 0 {
			gen.Deadline = time.Now().Add(h.opts.CompletionDeadline)
		}
		return h.svc.Infill(c.Request.Context(), &core.InfillRequest{
			ID: id, Endpoint: "/v1/completions", Stream: req.Stream, Model: *req.Model,
			Prefix: prompt, Suffix: *req.Suffix, Mode: req.FIMMode, Generation: gen, KeepAlive: ka,
		}, emit)
	}
	echo := ""
	if req.Echo {
		echo = prompt
	}
	base := textCompletion{ID: id, Object: "text_completion", Created: time.Now().Unix(), Model: *req.Model, SystemFingerprint: fingerprint}
	if req.Stream {
		return h.streamCompletion(c, base, echo, gen, run)
	}
	var text strings.Builder
	text.WriteString(echo)
	var logprobs []llm.TokenLogprob
	res, err := run(func(_ int, ev llm.Event) error {
		text.WriteString(ev.Text)
		logprobs = append(logprobs, ev.Logprobs...)
		return nil
	})
	if err != nil {
		return err
	}
	d := res.Choices[0]
	reply := base
	reply.Model = res.Model.ID
	u := toUsage(d.Usage)
	reply.Usage, reply.Superfluid = &u, &fimExtra{Cached: d.Usage.CachedTokens, Expired: d.Expired, ServedBy: res.Model.ID, Spec: core.SpecReportOf(res.Choices...)}
	reply.Choices = []textChoice{{Text: text.String(), FinishReason: &d.FinishReason}}
	if gen.Logprobs {
		reply.Choices[0].Logprobs = toTextLogprobs(logprobs, gen.TopLogprobs > 0, len(echo))
	}
	c.Header(WarmHeader, strconv.Itoa(d.Usage.CachedTokens))
	c.JSON(http.StatusOK, reply)
	return nil
}

func withPrompt(gen llm.Request, prompt string) llm.Request {
	gen.Prompt = prompt
	return gen
}

// completionPrompt validates the request shape and returns the prompt string; modelOptional
// lets the model field be empty (team mode: needsModel).
func completionPrompt(req *completionRequest, modelOptional bool) (string, error) {
	if needsModel(&req.Model, modelOptional) {
		return "", invalid("model", "you must provide a model parameter; GET /v1/models lists the served models")
	}
	p := bytes.TrimSpace(req.Prompt)
	if len(p) == 0 || p[0] != '"' {
		return "", invalid("prompt", "prompt must be a string; arrays of strings and token ids are not accepted")
	}
	var prompt string
	if err := json.Unmarshal(p, &prompt); err != nil {
		return "", invalid("prompt", "prompt must be a string")
	}
	if req.Suffix != nil {
		if req.Echo {
			return "", unsupported("echo", "echo cannot be combined with suffix (fill-in-the-middle)")
		}
		if req.Logprobs != nil {
			return "", unsupported("logprobs", "logprobs cannot be combined with suffix (fill-in-the-middle)")
		}
		if req.FIMMode != "" && req.FIMMode != core.FIMPrefixSuffixMiddle && req.FIMMode != core.FIMSuffixPrefixMiddle {
			return "", invalid("fim_mode", fmt.Sprintf("fim_mode must be psm or spm, got %q", req.FIMMode))
		}
	}
	if req.Logprobs != nil && (*req.Logprobs < 0 || *req.Logprobs > llm.MaxTopLogprobs) {
		return "", invalid("logprobs", fmt.Sprintf("logprobs must be between 0 and %d, got %d", llm.MaxTopLogprobs, *req.Logprobs))
	}
	if prompt == "" && req.Suffix == nil {
		return "", invalid("prompt", "prompt is empty")
	}
	return prompt, nil
}

func (h *handlers) streamCompletion(c *gin.Context, base textCompletion, echo string, gen llm.Request, run func(core.Emit) (*core.Result, error)) error {
	s := sse.New(c.Writer, h.opts.KeepAlive, h.opts.WriteTimeout)
	defer s.Close()
	frame := func(text string, finish *string) textCompletion {
		ch := base
		ch.Choices = []textChoice{{Text: text, FinishReason: finish}}
		return ch
	}
	offset := len(echo) // text_offset of the next token
	_, err := run(func(_ int, ev llm.Event) error {
		switch {
		case ev.Started != nil:
			s.SetHeader(WarmHeader, strconv.Itoa(ev.Started.CachedTokens))
			if echo != "" {
				return s.Data(frame(echo, nil))
			}
			s.Commit()
			return nil
		case ev.Done != nil:
			last := frame("", &ev.Done.FinishReason)
			u := toUsage(ev.Done.Usage)
			last.Usage = &u
			last.Superfluid = &fimExtra{Cached: ev.Done.Usage.CachedTokens, Expired: ev.Done.Expired, ServedBy: base.Model, Spec: core.SpecReportOf(*ev.Done)}
			return s.Data(last)
		case ev.Text != "" || len(ev.Logprobs) > 0:
			ch := frame(ev.Text, nil)
			if gen.Logprobs {
				ch.Choices[0].Logprobs = toTextLogprobs(ev.Logprobs, gen.TopLogprobs > 0, offset)
				for _, t := range ev.Logprobs {
					offset += len(t.Bytes)
				}
			}
			return s.Data(ch)
		}
		return nil
	})
	return endStream(s, err)
}
