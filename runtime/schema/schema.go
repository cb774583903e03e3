// Package schema vets JSON Schemas before the worker compiles them to a grammar, relaxes what the
// grammar cannot express, checks output against the full schema, and builds the schema that
// forces a tool call.
//
// The worker compiles a request's schema with llama.cpp's json-schema-to-grammar converter (C++,
// in the pinned ollama module) inside the process that holds the model. That converter trusts its
// input: measured against the pinned build, some schemas crash it (a regex pattern with "(?:" or
// a quantifier with nothing before it, an allOf whose $ref chain loops, names of ~20,000
// characters, recursion through allOf), some make it or the grammar parser loop forever
// (minLength above maxLength, a bare "]" in a pattern), some compile into a grammar that crashes
// the worker on the first generated token ("(a*)*"), and large ones cost time that grows with the
// cube of their size or exponentially (shared allOf). Check refuses the broken and the
// overloading ones in the app process, in pure Go, before the schema travels to the worker;
// every refusal names the JSON pointer of the offending part and says what to change.
//
// What is only beyond the grammar engine (a pattern its converter cannot read, or with escapes
// like "\d" the grammar parser does not know, a count past MaxRepeat, a format it does not know)
// is never refused: a client's schema is valid JSON Schema all the same. Grammar (and
// ToolCallGrammar, FormatOrCall) leaves such keywords out of the grammar, or loosens them, so the
// grammar admits every value the schema does, and lists them as Relaxations; Validate then checks
// the output against the full schema.
//
// Check does not decide whether the converter supports a schema: a schema that passes may still
// fail to compile (for example a boolean subschema), and the worker then answers with a clean
// error. Check only guarantees that trying is safe and cheap. Nor does it catch the converter's
// quiet mistakes: $refs inside an object that also has a $ref (a root "$ref" beside "$defs") are
// never resolved and match any value; ToolCall rewrites such objects (see hidesRefs), other
// callers may want to do the same.
package schema

import (
	"errors"
	"fmt"

	"github.com/superfluid/superfluid/runtime/llm"
)

// Limits on a schema. They are far above what real schemas need (OpenAI's strict mode allows 10
// levels of nesting and 5000 properties in all) and low enough that the converter and the grammar
// engine finish quickly and within their C++ stack; the comments give the measured reason.
const (
	// MaxBytes caps the schema's JSON text.
	MaxBytes = 512 << 10
	// MaxShownBytes caps the JSON text of a schema only shown to the model (CheckShown): the
	// most text one tokenization takes (llamacpp's 4 MiB), so no prompt that holds a longer
	// one is ever served. Past it, the parse and the template's copy cost about 60 bytes of
	// memory per byte (a 20 MB schema allocated 1.3 GB) for a reply that cannot come.
	MaxShownBytes = 4 << 20
	// MaxDepth caps JSON nesting (objects and arrays, the root is level 1). The converter and the
	// grammar parser recurse once per level, and rule names grow with depth (quadratic memory:
	// 3000 levels took 1.3 GB).
	MaxDepth = 64
	// MaxValues caps the JSON values in the document (every object, array, string, number...).
	// Converter time grows with values × distinct $refs (it copies the document once per $ref)
	// and quadratically with enum size (50,000 enum values took 3.5 s).
	MaxValues = 10000
	// MaxProperties caps the entries of one "properties" object: the converter's time is cubic in
	// an object's optional properties (1000 took 1.5 s, 128 take about 1 ms).
	MaxProperties = 128
	// MaxRefs caps the distinct $ref strings in the document (see MaxValues).
	MaxRefs = 128
	// MaxKeyBytes caps every object key. The converter recurses once per byte of a property name
	// (a trie) and its std::regex recurses once per character of a rule name; both crashed the
	// pinned build at about 20,000 bytes.
	MaxKeyBytes = 256
	// MaxRefBytes caps a $ref string, for the same std::regex recursion.
	MaxRefBytes = 1024
	// MaxRepeat is the most repetitions a count may ask for (minLength, maxLength, minItems,
	// maxItems, {n,m} in a pattern): llama.cpp's grammar parser refuses more
	// (MAX_REPETITION_THRESHOLD).
	MaxRepeat = 2000
	// MaxExpanded caps how many subschema visits the converter makes. It visits a $ref's target
	// once and reuses the rule, but it copies allOf members in place and visits a schema once per
	// entry of a type list, so a few levels of shared allOf expand exponentially (2^13 copies
	// took 0.4 s, 2^16 took 3 s); an ordinary schema counts about one visit per subschema.
	MaxExpanded = 10000
	// MaxPatternNesting caps nested groups in a pattern; the converter and the grammar parser
	// recurse once per group (crashed at about 30,000).
	MaxPatternNesting = 32
)

// ErrSchema is wrapped by every refusal. Errors also match llm.ErrInvalidInput, which the server
// turns into a 400.
var ErrSchema = errors.New("invalid JSON schema")

// Error is a refused schema: where, and why.
type Error struct {
	// Tool names the tool whose parameters were refused (ToolCall only).
	Tool string
	// Path is a JSON pointer into the schema ("#" is the root, "#/properties/a" a property); empty
	// when the refusal is about the tools rather than one place in a schema.
	Path string
	// Reason says what is wrong and what to change.
	Reason string
	// sizeCap marks a refusal for the grammar engine's size caps (bytes, values, properties,
	// $refs, expansion) rather than for a broken schema: CheckShown lets it pass.
	sizeCap bool
}

func (e *Error) Error() string {
	switch {
	case e.Path == "" && e.Tool == "":
		return e.Reason
	case e.Path == "":
		return fmt.Sprintf("tool %q: %s", e.Tool, e.Reason)
	case e.Tool != "":
		return fmt.Sprintf("invalid parameters schema for tool %q at %s: %s", e.Tool, e.Path, e.Reason)
	default:
		return fmt.Sprintf("invalid JSON schema at %s: %s", e.Path, e.Reason)
	}
}

// Unwrap lets errors.Is match both ErrSchema and llm.ErrInvalidInput.
func (e *Error) Unwrap() []error { return []error{ErrSchema, llm.ErrInvalidInput} }

func refuse(path, format string, args ...any) *Error {
	return &Error{Path: path, Reason: fmt.Sprintf(format, args...)}
}

// refuseSize is refuse for one of the grammar engine's size caps.
func refuseSize(path, format string, args ...any) *Error {
	e := refuse(path, format, args...)
	e.sizeCap = true
	return e
}
