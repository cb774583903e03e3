package llamacpp

import (
	"fmt"
	"math"
	"sync"

	"github.com/ollama/ollama/llama"

	"github.com/superfluid/superfluid/runtime/llm"
)

// jsonObjectSchema is what the "json" format means: any JSON object.
const jsonObjectSchema = `{"type":"object"}`

// vocabulary is every token's piece, which llama.cpp's grammar matches against; built once.
type vocabulary struct {
	once   sync.Once
	ids    []uint32
	pieces []string
	eog    []int32
}

func (e *Engine) vocab() *vocabulary {
	e.vocabulary.once.Do(func() {
		v := &e.vocabulary
		n := e.info.VocabSize
		v.ids, v.pieces = make([]uint32, n), make([]string, n)
		for id := range n {
			v.ids[id], v.pieces[id] = uint32(id), e.model.TokenToPiece(id)
		}
		for _, id := range e.eog {
			v.eog = append(v.eog, int32(id))
		}
	})
	return &e.vocabulary
}

// newGrammar compiles the request's output format; nil when the output is free text.
func (e *Engine) newGrammar(req *llm.Request) (*llama.Grammar, error) {
	var schema string
	switch req.Format {
	case "":
		return nil, nil
	case llm.FormatJSON:
		schema = jsonObjectSchema
	case llm.FormatSchema:
		schema = string(req.Schema)
	default:
		return nil, fmt.Errorf("%w: unknown output format %q", llm.ErrInvalidInput, req.Format)
	}
	gbnf := llama.SchemaToGrammar([]byte(schema))
	if gbnf == nil {
		return nil, fmt.Errorf("%w: constraint unsatisfiable: the JSON schema could not be compiled to a grammar", llm.ErrInvalidInput)
	}
	v := e.vocab()
	g := llama.NewGrammar(string(gbnf), v.ids, v.pieces, v.eog)
	if g == nil {
		return nil, fmt.Errorf("%w: constraint unsatisfiable: the grammar for the JSON schema did not compile", llm.ErrInvalidInput)
	}
	return g, nil
}

// constrain returns token if the grammar allows it; otherwise it masks a copy of logits to
// what the grammar allows and samples again. ok is false when the grammar allows no token at
// all. logits itself stays as the model wrote it: logprobs are computed from it afterwards.
func (e *Engine) constrain(j *job, logits []float32, token int) (int, bool) {
	one := []llama.TokenData{{ID: int32(token), Logit: 1}}
	j.grammar.Apply(one)
	if !math.IsInf(float64(one[0].Logit), -1) {
		return token, true
	}
	all := j.scratch[:0]
	for id, l := range logits {
		all = append(all, llama.TokenData{ID: int32(id), Logit: l})
	}
	j.scratch = all
	j.grammar.Apply(all)
	if cap(j.masked) < len(all) {
		j.masked = make([]float32, len(all))
	}
	masked := j.masked[:len(all)]
	allowed := false
	for i := range all {
		masked[i] = all[i].Logit
		allowed = allowed || !math.IsInf(float64(all[i].Logit), -1)
	}
	if !allowed {
		return 0, false
	}
	// The sampler has bans of its own (ignore-EOS, logit_bias -100). When they leave none of
	// the allowed tokens it returns a token the grammar refuses, and accepting that aborts
	// llama.cpp ("Unexpected empty grammar stack"): e.g. ignore_eos once the JSON is complete
	// and only EOS may follow. The format is then as complete as the request lets it be.
	if token = j.sampler.Sample(masked); math.IsInf(float64(masked[token]), -1) {
		return 0, false
	}
	return token, true
}
