package openai

import (
	"fmt"
	"strconv"

	"github.com/superfluid/superfluid/runtime/llm"
)

// toGeneration validates caps, sampling and stops; each bad value names its parameter.
func toGeneration(req *chatRequest) (*llm.Request, error) {
	gen := &llm.Request{Stop: req.Stop, IgnoreEOS: req.IgnoreEOS}
	for _, cap := range []struct {
		name string
		v    *int
	}{{"max_tokens", req.MaxTokens}, {"max_completion_tokens", req.MaxCompletionTokens}} {
		if cap.v == nil {
			continue
		}
		if *cap.v < 0 {
			return nil, invalid(cap.name, fmt.Sprintf("%s must be a positive integer, got %d", cap.name, *cap.v))
		}
		gen.MaxTokens = *cap.v // max_completion_tokens comes second, so it wins
	}
	s := &gen.Sampling
	checks := []struct {
		name     string
		v        *float64
		min, max float64
		dst      **float64
	}{
		{"temperature", req.Temperature, 0, 2, &s.Temperature},
		{"top_p", req.TopP, 0, 1, &s.TopP},
		{"min_p", req.MinP, 0, 1, &s.MinP},
		{"repeat_penalty", req.RepetitionPenalty, 0, 10, &s.RepeatPenalty},
		{"repeat_penalty", req.RepeatPenalty, 0, 10, &s.RepeatPenalty},
	}
	for _, c := range checks {
		if c.v == nil {
			continue
		}
		if *c.v < c.min || *c.v > c.max {
			return nil, invalid(c.name, fmt.Sprintf("%s must be between %g and %g, got %g", c.name, c.min, c.max, *c.v))
		}
		*c.dst = c.v
	}
	for _, p := range []struct {
		name string
		v    *float64
		dst  *float64
	}{{"presence_penalty", req.PresencePenalty, &s.PresencePenalty}, {"frequency_penalty", req.FrequencyPenalty, &s.FrequencyPenalty}} {
		if p.v == nil {
			continue
		}
		if *p.v < -2 || *p.v > 2 {
			return nil, invalid(p.name, fmt.Sprintf("%s must be between -2 and 2, got %g", p.name, *p.v))
		}
		*p.dst = *p.v
	}
	if req.TopK != nil {
		if *req.TopK < 0 {
			return nil, invalid("top_k", fmt.Sprintf("top_k must be 0 (off) or positive, got %d", *req.TopK))
		}
		s.TopK = req.TopK
	}
	if req.Seed != nil {
		s.Seed = uint64(*req.Seed) // 0 stays "unseeded", as the spec says
	}
	if len(req.LogitBias) > 0 {
		s.LogitBias = make(map[int]float64, len(req.LogitBias))
		for k, v := range req.LogitBias {
			id, err := strconv.Atoi(k)
			if err != nil || id < 0 {
				return nil, invalid("logit_bias", fmt.Sprintf("logit_bias keys must be token ids, got %q", k))
			}
			if v < -100 || v > 100 {
				return nil, invalid("logit_bias", fmt.Sprintf("logit_bias values must be between -100 and 100, got %g for token %d", v, id))
			}
			s.LogitBias[id] = v
		}
	}
	if err := refuseUnserved(req); err != nil {
		return nil, err
	}
	return gen, nil
}

// refuseUnserved rejects parameters this server cannot honour yet instead of ignoring them.
func refuseUnserved(req *chatRequest) error {
	if req.Logprobs != nil && *req.Logprobs {
		return unsupported("logprobs", "logprobs are not supported by this server yet; remove logprobs")
	}
	if req.TopLogprobs != nil && *req.TopLogprobs != 0 {
		return unsupported("top_logprobs", "top_logprobs are not supported by this server yet; remove top_logprobs")
	}
	if len(req.Tools) > 0 && string(req.Tools) != "null" && string(req.Tools) != "[]" {
		return unsupported("tools", "tool calling is not supported by this server yet; remove tools")
	}
	if req.ResponseFormat != nil && req.ResponseFormat.Type != "" && req.ResponseFormat.Type != "text" {
		return unsupported("response_format", fmt.Sprintf("response_format %q is not supported by this server yet; use text", req.ResponseFormat.Type))
	}
	return nil
}
