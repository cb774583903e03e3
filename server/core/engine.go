package core

import (
	"context"
	"fmt"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/llm"
)

// Engine kinds. A model's requests take one of two roads, chosen by the model
// (Service.roadOf), which meet again in generate and runEmbed for everything the core keeps for
// both: the model's resolution and scope, admission and the queue, per-model settings, the QoS
// gate, the choices run side by side, usage metering, metrics and the request record.
//
//   - The prompt road (prompt.go), the default: the core renders the conversation with the
//     model's chat template, turns response formats and forced tool calls into grammars, runs
//     each choice on the model's llm.Engine (llama.cpp in a worker) and shapes its raw text into
//     reasoning, content and tool calls, checking what a relaxed grammar let through.
//   - The request road (Model.Requests set): a RequestEngine takes the typed request as the
//     dialect gave it and returns the deltas itself. The core renders nothing, builds no grammar
//     and shapes nothing: the engine's events are what the dialects get.

// RequestEngine serves a model's requests as the core types them, before any chat template: a
// forwarding engine (vLLM, llama-server, another superfluid) that renders its own prompts and
// parses its own replies. Its events are served as they come: text, reasoning and tool-call
// deltas (llm.ToolCallDelta, each call opened with its ID and name), Tokens counts on them, an
// optional Started with the prompt's tokens, and one Done with the finish reason and usage.
//
// A model served by one still has an llm.Engine (Model.Engine) for what is asked of the model
// rather than of a request: its Info (lanes, window, whether it embeds), Tokenize and its
// lifecycle. Its Generate is not called.
type RequestEngine interface {
	// Chat streams one choice of req, ending with a Done on success. The core asks for N
	// choices by calling it N times side by side, so req.N is 1. req.Messages hold the model's
	// system prompt (a per-model setting) and req.Generation the sampling, stops and cap as the
	// core settled them: per-model settings applied, the default cap filled in, each choice's
	// seed. An error from emit means the client is gone: stop and return it.
	Chat(ctx context.Context, req *ChatRequest, emit func(llm.Event) error) error
	// Complete streams one choice of a raw text completion, as Chat does.
	Complete(ctx context.Context, req *CompletionRequest, emit func(llm.Event) error) error
	// Embed returns one vector per input of req, in order, and the tokens each input took. A
	// rerank arrives as an embedding of query-document pairs (llm.EmbedInput.Pair) on a model
	// whose Info says it ranks.
	Embed(ctx context.Context, req *EmbedRequest) (*llm.EmbedResult, error)
}

// CapabilityReporter is a RequestEngine that says what its model can do (tools, reasoning),
// which the core would otherwise read from the model's chat template: a forwarding engine's
// model has none (core.New gives it the fallback), so without one it reports what the
// fallback template can do, tools through the prompt and no reasoning.
type CapabilityReporter interface {
	Capabilities() Capabilities
}

// road is how one engine kind readies a request for the core's shared generation.
type road interface {
	// chat readies req for n choices; msgs are its messages with the model's system prompt
	// and its tools are checked. emit is the dialect's.
	chat(m *Model, req *ChatRequest, msgs []chat.Message, n int, emit Emit) (*generation, error)
	// complete readies a raw text completion for n choices.
	complete(m *Model, req *CompletionRequest, n int, emit Emit) (*generation, error)
	// embed runs an embedding request (its inputs already fitted) on engine, the model's
	// llm.Engine as its handle acquired it.
	embed(ctx context.Context, engine llm.Engine, m *Model, req *EmbedRequest) (*llm.EmbedResult, error)
}

// generation is one request as its road readied it, for generate to schedule and run.
type generation struct {
	// gen is what the core settles and schedules: per-model settings and the default cap go
	// into it, the gate sets its priority, and each choice gets its own seed from it.
	gen llm.Request
	// check is the road's last look at gen before admission, once the model is known to
	// generate; nil checks nothing.
	check func(gen *llm.Request) error
	// run streams one choice; engine is the model's llm.Engine as its handle acquired it.
	run func(ctx context.Context, engine llm.Engine, gen *llm.Request, emit func(llm.Event) error) error
	// emit receives each choice's events: the dialect's, behind what the road adds (reply
	// shaping, output checks).
	emit Emit
}

// roadOf is the road m's requests take.
func (s *Service) roadOf(m *Model) road {
	if m.Requests != nil {
		return requestRoad{m.Requests}
	}
	return promptRoad{s}
}

// requestRoad hands the typed request to a RequestEngine.
type requestRoad struct{ engine RequestEngine }

func (r requestRoad) chat(_ *Model, req *ChatRequest, msgs []chat.Message, _ int, emit Emit) (*generation, error) {
	typed := *req
	typed.Messages, typed.N = msgs, 1
	return handOver(req.ID, req.Generation, emit, func(ctx context.Context, gen *llm.Request, emit func(llm.Event) error) error {
		choice := typed
		choice.Generation = *gen
		return r.engine.Chat(ctx, &choice, emit)
	}), nil
}

func (r requestRoad) complete(_ *Model, req *CompletionRequest, _ int, emit Emit) (*generation, error) {
	typed := *req
	typed.N = 1
	return handOver(req.ID, req.Generation, emit, func(ctx context.Context, gen *llm.Request, emit func(llm.Event) error) error {
		choice := typed
		choice.Generation = *gen
		return r.engine.Complete(ctx, &choice, emit)
	}), nil
}

// handOver is a generation whose choices send hands to a request engine, each as a copy of
// the typed request with the choice's settled generation.
func handOver(id string, gen llm.Request, emit Emit, send func(ctx context.Context, gen *llm.Request, emit func(llm.Event) error) error) *generation {
	g := &generation{gen: gen, emit: emit}
	g.gen.ID = id
	g.run = func(ctx context.Context, _ llm.Engine, gen *llm.Request, emit func(llm.Event) error) error {
		done := false
		err := send(ctx, gen, func(ev llm.Event) error {
			done = done || ev.Done != nil
			return emit(ev)
		})
		if err == nil && !done {
			// A reply without a finish reason and usage would be served as if complete.
			return fmt.Errorf("%w: the request engine ended the reply without a Done event", llm.ErrEngineFailure)
		}
		return err
	}
	return g
}

func (r requestRoad) embed(ctx context.Context, _ llm.Engine, _ *Model, req *EmbedRequest) (*llm.EmbedResult, error) {
	return r.engine.Embed(ctx, req)
}
