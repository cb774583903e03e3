package core

import (
	"context"
	"fmt"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/schema"
)

// promptRoad is the local engine kind (engine.go): the core renders the model's chat template
// into a prompt and runs it on the model's llm.Engine, which sees text (or token ids) only.
type promptRoad struct{ s *Service }

func (p promptRoad) chat(m *Model, req *ChatRequest, msgs []chat.Message, n int, emit Emit) (*generation, error) {
	prompt, err := p.s.render(m, msgs, req.TemplateKwargs, req.Tools)
	if err != nil {
		return nil, err
	}
	gen := req.Generation
	gen.ID, gen.Prompt, gen.AddSpecial = req.ID, prompt, addSpecial(m, prompt)
	if err := checkMarkers(m, &gen); err != nil {
		return nil, err
	}
	var check *outputCheck
	if req.ToolChoice.forced() {
		// The forced call's grammar wins over a response format, as the official APIs do: the
		// format applies to the text reply of a later turn.
		check, err = forceCall(&gen, req, n)
	} else if gen.Format == llm.FormatSchema && len(req.Tools) > 0 && req.ToolChoice.Mode != ToolNone {
		check, err = formatOrCall(&gen, req, n)
	} else {
		check, err = checkFormat(&gen, n)
	}
	if err != nil {
		return nil, err
	}
	sh := shapingFor(m, req, prompt)
	shapers := make([]*replyShaper, n)
	for i := range shapers {
		shapers[i] = sh.newShaper()
	}
	return promptGeneration(m, gen, check.wrap(func(i int, ev llm.Event) error {
		shapers[i].shape(&ev)
		return emit(i, ev)
	})), nil
}

func (promptRoad) complete(m *Model, req *CompletionRequest, n int, emit Emit) (*generation, error) {
	gen := req.Generation
	gen.ID, gen.AddSpecial = req.ID, len(gen.Tokens) == 0
	check, err := checkFormat(&gen, n)
	if err != nil {
		return nil, err
	}
	return promptGeneration(m, gen, check.wrap(emit)), nil
}

func (promptRoad) embed(ctx context.Context, engine llm.Engine, m *Model, req *EmbedRequest) (*llm.EmbedResult, error) {
	embedder, ok := engine.(llm.Embedder)
	if !ok {
		return nil, fmt.Errorf("%w: the model %s runs on an engine that does not embed", llm.ErrUnsupportedModel, m.ID)
	}
	return embedder.Embed(ctx, &llm.EmbedRequest{ID: req.ID, Inputs: req.Inputs, Truncate: req.Truncate})
}

// promptGeneration runs gen, a prompt (text or token ids), on the model's llm.Engine.
func promptGeneration(m *Model, gen llm.Request, emit Emit) *generation {
	return &generation{gen: gen, emit: emit, check: func(gen *llm.Request) error { return checkPrompt(m, gen) }, run: generateOn}
}

// checkPrompt refuses a prompt too long to tokenize and compiles a response format's schema,
// before the worker sees either.
func checkPrompt(m *Model, gen *llm.Request) error {
	if err := checkTextLength(m, len(gen.Prompt)); err != nil {
		return err // before the worker tokenizes it (see limits.go)
	}
	if gen.Format == llm.FormatSchema {
		// Before the worker compiles it: llama.cpp's converter aborts or loops on hostile schemas,
		// and fails on limits it cannot express. Callers that check the output against what was
		// relaxed (checkFormat, forceCall) have relaxed it already.
		g, _, err := schema.Grammar(gen.Schema)
		if err != nil {
			return err
		}
		gen.Schema = g
	}
	return nil
}

// generateOn runs one choice of a prompt on engine.
func generateOn(ctx context.Context, engine llm.Engine, gen *llm.Request, emit func(llm.Event) error) error {
	return engine.Generate(ctx, gen, emit)
}
