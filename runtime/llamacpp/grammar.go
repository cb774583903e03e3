package llamacpp

import (
	"bytes"
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
	if req.CompactJSON {
		gbnf = compactSpace(gbnf)
	}
	v := e.vocab()
	g := llama.NewGrammar(string(gbnf), v.ids, v.pieces, v.eog)
	if g == nil {
		return nil, fmt.Errorf("%w: constraint unsatisfiable: the grammar for the JSON schema did not compile", llm.ErrInvalidInput)
	}
	return g, nil
}

// compactSpace rewrites the converter's whitespace rule (optional newlines and up to 20
// indentation characters between tokens) to at most one space.
func compactSpace(gbnf []byte) []byte {
	lines := bytes.Split(gbnf, []byte("\n"))
	for i, l := range lines {
		if bytes.HasPrefix(l, []byte("space ::= ")) {
			lines[i] = []byte(`space ::= | " "`)
		}
	}
	return bytes.Join(lines, []byte("\n"))
}

// constrain returns token if the grammar allows it; otherwise it draws again from what the
// grammar allows. ok is false when the grammar allows no token at all. logits itself stays as
// the model wrote it: logprobs are computed from it afterwards.
//
// Asking the grammar about the whole vocabulary costs more than decoding a small model's
// token, so it is asked about the sampler's best candidates first: when it allows as many of
// them as decide the draw (one when greedy, top_k otherwise), the tokens it was not asked about
// could not have been drawn anyway, and the draw is the same as after a full check.
func (e *Engine) constrain(j *job, logits []float32, token int) (int, bool) {
	one := []llama.TokenData{{ID: int32(token), Logit: 1}}
	j.grammar.Apply(one)
	if !math.IsInf(float64(one[0].Logit), -1) {
		return token, true
	}
	adjusted := j.sampler.Adjusted(logits)
	if cap(j.masked) < len(adjusted) {
		j.masked = make([]float32, len(adjusted))
	}
	masked := j.masked[:len(adjusted)]
	if need := j.sampler.Decisive(); probeGrammar && need > 0 {
		// A wider second probe still costs a fraction of the whole vocabulary where the grammar
		// allows only a few tokens (JSON punctuation) that the model ranks low.
		for _, m := range []int{max(64, grammarProbe*need), max(1024, 16*grammarProbe*need)} {
			if 2*m > len(adjusted) {
				break
			}
			if tok, ok, decided := e.constrainBest(j, adjusted, masked, need, m); decided {
				return tok, ok
			}
		}
	}
	all := j.scratch[:0]
	for id, l := range adjusted {
		all = append(all, llama.TokenData{ID: int32(id), Logit: l})
	}
	j.scratch = all
	j.grammar.Apply(all)
	for i := range all {
		masked[i] = all[i].Logit
	}
	return drawAllowed(j, masked)
}

// grammarProbe is how many candidates per deciding token the grammar is asked about before it
// is asked about the whole vocabulary.
const grammarProbe = 16

// probeGrammar turns the probe of the best candidates on (tests compare it with the full check).
var probeGrammar = true

// constrainBest asks the grammar about the m best candidates only; decided is false when it
// allows too few of them to decide the draw.
func (e *Engine) constrainBest(j *job, adjusted, masked []float32, need, m int) (token int, ok, decided bool) {
	best := j.sampler.Best(adjusted, m)
	if len(best) == 0 {
		// Every value is banned (logit_bias, ignore-EOS): nothing can be drawn, as a full
		// check would find, and llama.cpp's grammar indexes the list it is given.
		return 0, false, true
	}
	some := j.scratch[:0]
	for _, id := range best {
		some = append(some, llama.TokenData{ID: id, Logit: adjusted[id]})
	}
	j.scratch = some
	j.grammar.Apply(some)
	allowed := 0
	for _, t := range some {
		if !math.IsInf(float64(t.Logit), -1) {
			allowed++
		}
	}
	if allowed < need {
		return 0, false, false
	}
	negInf := float32(math.Inf(-1))
	for i := range masked {
		masked[i] = negInf
	}
	for _, t := range some {
		masked[t.ID] = t.Logit
	}
	token, ok = drawAllowed(j, masked)
	return token, ok, true
}

// drawAllowed draws from adjusted values the grammar has masked. The sampler has bans of its
// own (ignore-EOS, logit_bias -100), already in the values; when they leave none of the allowed
// tokens the draw lands on a token the grammar refuses, and accepting that aborts llama.cpp
// ("Unexpected empty grammar stack"): e.g. ignore_eos once the JSON is complete and only EOS
// may follow. The format is then as complete as the request lets it be.
func drawAllowed(j *job, masked []float32) (int, bool) {
	token := j.sampler.SampleAdjusted(masked)
	if math.IsInf(float64(masked[token]), -1) {
		return 0, false
	}
	return token, true
}
