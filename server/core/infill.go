package core

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core/qos"
)

// FIMTokens are a model's fill-in-the-middle markers.
type FIMTokens struct {
	Prefix, Suffix, Middle int
}

// ErrFIMUnsupported is returned for fill-in-the-middle on a model without FIM markers.
var ErrFIMUnsupported = errors.New("this model has no fill-in-the-middle tokens; use a code model trained for FIM (e.g. Qwen2.5-Coder, DeepSeek-Coder, StarCoder) or send the request without suffix")

// FIM modes: prefix-suffix-middle (the usual order) or suffix-prefix-middle.
const (
	FIMPrefixSuffixMiddle = "psm"
	FIMSuffixPrefixMiddle = "spm"
)

// InfillRequest asks for the text between Prefix and Suffix.
type InfillRequest struct {
	ID       string
	Endpoint string
	Stream   bool
	Model    string
	Prefix   string
	Suffix   string
	// Mode is FIMPrefixSuffixMiddle (default) or FIMSuffixPrefixMiddle.
	Mode       string
	Generation llm.Request
	// KeepAlive: see ChatRequest.
	KeepAlive *time.Duration
	// QoS and BatchInvariant: see ChatRequest (the default class is completion).
	QoS            qos.Class
	BatchInvariant bool
}

// Infill generates the middle: the prompt is the model's FIM markers around the separately
// tokenized prefix and suffix (never parsed for special tokens), ending with the middle marker.
func (s *Service) Infill(ctx context.Context, req *InfillRequest, emit Emit) (*Result, error) {
	ctx = begin(ctx, Scheduling{req.QoS, req.BatchInvariant}, qos.Completion, req.Stream)
	return s.serve(ctx, recordKey{req.ID, req.Endpoint, req.Model, req.Stream}, func(ctx context.Context, m *Model) (*Result, error) {
		return s.infill(ctx, m, req, emit)
	})
}

// infill builds the FIM prompt from tokens, so it takes the prompt road whatever the model's
// engine kind: a model served by a RequestEngine has no FIM markers and is refused.
func (s *Service) infill(ctx context.Context, m *Model, req *InfillRequest, emit Emit) (*Result, error) {
	if m.FIM == nil {
		return nil, fmt.Errorf("%w: model %s: %w", llm.ErrInvalidInput, m.ID, ErrFIMUnsupported)
	}
	if err := checkTextLength(m, len(req.Prefix)+len(req.Suffix)); err != nil {
		return nil, err
	}
	bos, err := m.Engine.Tokenize(ctx, "", true, false)
	if err != nil {
		return nil, err
	}
	prefix, err := m.Engine.Tokenize(ctx, req.Prefix, false, false)
	if err != nil {
		return nil, err
	}
	suffix, err := m.Engine.Tokenize(ctx, req.Suffix, false, false)
	if err != nil {
		return nil, err
	}
	tokens := append([]int{}, bos...)
	pre := append([]int{m.FIM.Prefix}, prefix...)
	suf := append([]int{m.FIM.Suffix}, suffix...)
	if req.Mode == FIMSuffixPrefixMiddle {
		tokens = append(append(tokens, suf...), pre...)
	} else {
		tokens = append(append(tokens, pre...), suf...)
	}
	gen := req.Generation
	gen.ID, gen.Tokens = req.ID, append(tokens, m.FIM.Middle)
	return s.generate(ctx, m, promptGeneration(m, gen, emit), 1, req.KeepAlive)
}
