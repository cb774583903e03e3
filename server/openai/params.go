package openai

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
)

// keepAlive reads the keep_alive extension (Ollama's syntax), naming the parameter when it is bad.
func keepAlive(raw json.RawMessage) (*time.Duration, error) {
	d, err := core.ParseKeepAlive(raw)
	if err != nil {
		return nil, invalid("keep_alive", err.Error())
	}
	return d, nil
}

// speculative reads the speculative extension, naming the parameter when it is bad.
func speculative(raw json.RawMessage) (*llm.Speculative, error) {
	spec, err := core.ParseSpeculative(raw)
	if err != nil {
		return nil, invalid("speculative", err.Error())
	}
	return spec, nil
}

// adapters reads the lora extension, naming the parameter when it is bad.
func adapters(raw json.RawMessage) ([]llm.AdapterRef, error) {
	refs, err := core.ParseAdapters(raw)
	if err != nil {
		return nil, invalid("lora", err.Error())
	}
	return refs, nil
}

// toGeneration validates caps, sampling and stops; each bad value names its parameter.
func toGeneration(req *chatRequest) (*llm.Request, error) {
	gen := &llm.Request{Stop: req.Stop, IgnoreEOS: req.IgnoreEOS, NoCache: req.CachePrompt != nil && !*req.CachePrompt}
	for _, cap := range []struct {
		name string
		v    *int
	}{{"max_tokens", req.MaxTokens}, {"max_completion_tokens", req.MaxCompletionTokens}} {
		if err := checkCap(cap.name, cap.v); err != nil {
			return nil, err
		}
		if cap.v != nil {
			gen.MaxTokens = *cap.v // max_completion_tokens comes second, so it wins
		}
	}
	var err error
	if gen.Sampling, err = toSampling(&req.samplingParams); err != nil {
		return nil, err
	}
	if gen.Speculative, err = speculative(req.Speculative); err != nil {
		return nil, err
	}
	if gen.Adapters, err = adapters(req.Lora); err != nil {
		return nil, err
	}
	s := &gen.Sampling
	if len(req.LogitBias) > maxLogitBias {
		return nil, invalid("logit_bias", fmt.Sprintf("logit_bias has %d entries; at most %d are accepted", len(req.LogitBias), maxLogitBias))
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
	if gen.Format, gen.Schema, err = toFormat(req.ResponseFormat); err != nil {
		return nil, err
	}
	gen.Logprobs = req.Logprobs != nil && *req.Logprobs
	if req.TopLogprobs != nil {
		if *req.TopLogprobs < 0 || *req.TopLogprobs > llm.MaxTopLogprobs {
			return nil, invalid("top_logprobs", fmt.Sprintf("top_logprobs must be between 0 and %d, got %d", llm.MaxTopLogprobs, *req.TopLogprobs))
		}
		if *req.TopLogprobs > 0 && !gen.Logprobs {
			return nil, invalid("top_logprobs", "top_logprobs needs logprobs: true")
		}
		gen.TopLogprobs = *req.TopLogprobs
	}
	return gen, nil
}

// maxLogitBias bounds logit_bias: more entries than any vocabulary needs biasing is a mistake,
// and each one costs every sampled token.
const maxLogitBias = 1024

// checkCap refuses a cap below 1, as OpenAI does; leave the field out to fill the context.
func checkCap(name string, v *int) error {
	if v != nil && *v < 1 {
		return invalid(name, fmt.Sprintf("%s must be at least 1, got %d; leave it out to let the reply fill the context", name, *v))
	}
	return nil
}

// toSampling validates the sampler fields; each bad value names its parameter.
func toSampling(p *samplingParams) (llm.Sampling, error) {
	var s llm.Sampling
	checks := []struct {
		name     string
		v        *float64
		min, max float64
		dst      **float64
	}{
		{"temperature", p.Temperature, 0, 2, &s.Temperature},
		{"top_p", p.TopP, 0, 1, &s.TopP},
		{"min_p", p.MinP, 0, 1, &s.MinP},
		{"repeat_penalty", p.RepetitionPenalty, 0, 10, &s.RepeatPenalty},
		{"repeat_penalty", p.RepeatPenalty, 0, 10, &s.RepeatPenalty},
	}
	for _, c := range checks {
		if c.v == nil {
			continue
		}
		if *c.v < c.min || *c.v > c.max {
			return s, invalid(c.name, fmt.Sprintf("%s must be between %g and %g, got %g", c.name, c.min, c.max, *c.v))
		}
		*c.dst = c.v
	}
	for _, pen := range []struct {
		name string
		v    *float64
		dst  *float64
	}{{"presence_penalty", p.PresencePenalty, &s.PresencePenalty}, {"frequency_penalty", p.FrequencyPenalty, &s.FrequencyPenalty}} {
		if pen.v == nil {
			continue
		}
		if *pen.v < -2 || *pen.v > 2 {
			return s, invalid(pen.name, fmt.Sprintf("%s must be between -2 and 2, got %g", pen.name, *pen.v))
		}
		*pen.dst = *pen.v
	}
	if p.TopK != nil {
		if *p.TopK < 0 {
			return s, invalid("top_k", fmt.Sprintf("top_k must be 0 (off) or positive, got %d", *p.TopK))
		}
		s.TopK = p.TopK
	}
	if p.Seed != nil {
		s.Seed = uint64(*p.Seed) // 0 stays "unseeded", as the spec says
	}
	return s, nil
}

// toFormat maps response_format to the engine's output constraint.
func toFormat(rf *responseFormat) (string, json.RawMessage, error) {
	if rf == nil {
		return "", nil, nil
	}
	switch rf.Type {
	case "", "text":
		return "", nil, nil
	case "json_object":
		return llm.FormatJSON, nil, nil
	case "json_schema":
		if rf.JSONSchema == nil || len(rf.JSONSchema.Schema) == 0 {
			return "", nil, invalid("response_format.json_schema", "response_format json_schema needs json_schema.schema")
		}
		return llm.FormatSchema, rf.JSONSchema.Schema, nil
	default:
		return "", nil, invalid("response_format.type", fmt.Sprintf("response_format.type must be text, json_object or json_schema, got %q", rf.Type))
	}
}
