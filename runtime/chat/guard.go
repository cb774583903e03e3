package chat

import (
	"fmt"
	"strings"

	"github.com/ardanlabs/jinja"
)

// Limits on a template, which comes from the model file and is as untrusted as the file. The
// jinja library has none: a macro that calls itself overflows the Go stack (a fatal error, not
// a panic: the whole server goes down), range(10**12) or two nested loops over range(10**5)
// never end, deeply nested tags take minutes to parse and so do many tags in a row (the
// library's parse time grows with the square of their number: 50,000 ifs take 20 s). So
// Parse refuses sources nested deeper than maxNesting or with more than maxTags tags, and the rewritten source (whitespace.go) counts as it runs: every
// loop iteration and macro call is a step, at most maxSteps per render, macros nest at most
// maxMacroDepth deep, and range makes at most maxRange numbers. The real templates use a few
// thousand steps for a long conversation, three levels of macros and ranges of a few items.
const (
	maxSteps      = 1 << 20
	maxMacroDepth = 64
	maxRange      = 100_000
	maxNesting    = 100
	maxTags       = 10_000
)

// guardPrefix starts the names the rewrite adds to a template (the guard calls and the tojson
// indent helper). A template may not use it, so it cannot replace a guard with its own value.
const guardPrefix = "__superfluid_"

// The guard calls the rewrite inserts: a step at the top of each loop body, and a step with
// the depth at the start and end of each macro body. Each outputs nothing.
const (
	guardStep  = guardPrefix + "step"
	guardEnter = guardPrefix + "enter"
	guardLeave = guardPrefix + "leave"
)

// guardTag returns the output tag the rewrite writes around statement stmt (a tag's content):
// before it (endmacro) or after it (for, macro).
func guardTag(stmt string) (before, after string) {
	switch firstWord(stmt) {
	case "for":
		return "", "{{ " + guardStep + "() }}"
	case "macro":
		return "", "{{ " + guardEnter + "() }}"
	case "endmacro":
		return "{{ " + guardLeave + "() }}", ""
	}
	return "", ""
}

func firstWord(stmt string) string {
	f := strings.Fields(stmt)
	if len(f) == 0 {
		return ""
	}
	w, _, _ := strings.Cut(f[0], "(")
	return w
}

// checkNesting refuses a template that uses guardPrefix, has more than maxTags tags, nests
// blocks deeper than maxNesting, or nests brackets in one tag deeper than that.
func checkNesting(segs []segment) error {
	depth, tags := 0, 0
	for _, s := range segs {
		if s.kind != segExpr && s.kind != segStmt {
			continue
		}
		if tags++; tags > maxTags {
			return fmt.Errorf("the template has more than %d tags", maxTags)
		}
		if strings.Contains(s.text, guardPrefix) {
			return fmt.Errorf("the template uses the reserved name prefix %s", guardPrefix)
		}
		if n := bracketDepth(s.text); n > maxNesting {
			return fmt.Errorf("brackets nested %d deep in %q; at most %d are allowed", n, Clip(strings.TrimSpace(s.text), 40), maxNesting)
		}
		if s.kind != segStmt {
			continue
		}
		switch w := firstWord(s.text); {
		case w == "for" || w == "if" || w == "macro" || w == "call" || w == "filter" ||
			w == "set" && !strings.Contains(s.text, "="):
			if depth++; depth > maxNesting {
				return fmt.Errorf("blocks nested more than %d deep", maxNesting)
			}
		case strings.HasPrefix(w, "end"):
			depth--
		}
	}
	return nil
}

// bracketDepth returns the deepest nesting of (), [] and {} in an expression, outside string
// literals.
func bracketDepth(expr string) int {
	depth, deepest := 0, 0
	for i := 0; i < len(expr); i++ {
		switch c := expr[i]; c {
		case '\'', '"':
			for i++; i < len(expr) && expr[i] != c; i++ {
				if expr[i] == '\\' {
					i++
				}
			}
		case '(', '[', '{':
			depth++
			deepest = max(deepest, depth)
		case ')', ']', '}':
			depth--
		}
	}
	return deepest
}

// guard counts one render's steps and macro depth.
type guard struct {
	steps, depth int
}

// values returns the guard calls and the bounded range for a render's environment.
func (g *guard) values() map[string]jinja.Value {
	none := jinja.NewString("")
	step := func() error {
		if g.steps++; g.steps > maxSteps {
			return fmt.Errorf("the template ran more than %d loop iterations and macro calls (a loop that does not end?)", maxSteps)
		}
		return nil
	}
	return map[string]jinja.Value{
		guardStep: jinja.NewCallable(guardStep, func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
			return none, step()
		}),
		guardEnter: jinja.NewCallable(guardEnter, func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
			if g.depth++; g.depth > maxMacroDepth {
				return none, fmt.Errorf("macros nested more than %d deep (a macro that calls itself?)", maxMacroDepth)
			}
			return none, step()
		}),
		guardLeave: jinja.NewCallable(guardLeave, func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
			g.depth--
			return none, nil
		}),
		"range": jinja.NewCallable("range", boundedRange),
	}
}

// boundedRange is Python's range, making at most maxRange numbers.
func boundedRange(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	n := make([]int64, len(args))
	for i, a := range args {
		switch {
		case a.IsInt():
			n[i] = a.AsInt()
		case a.IsFloat():
			n[i] = int64(a.AsFloat())
		case a.IsBool() && a.AsBool():
			n[i] = 1
		case a.IsString():
			fmt.Sscanf(a.AsString(), "%d", &n[i]) // as the library's range reads a string
		}
	}
	start, stop, step := int64(0), int64(0), int64(1)
	switch len(n) {
	case 1:
		stop = n[0]
	case 2:
		start, stop = n[0], n[1]
	case 3:
		start, stop, step = n[0], n[1], n[2]
	default:
		return jinja.Undefined(), fmt.Errorf("range: expected 1 to 3 arguments, got %d", len(n))
	}
	if step == 0 {
		return jinja.Undefined(), fmt.Errorf("range: step must not be zero")
	}
	var items []jinja.Value
	for i := start; step > 0 && i < stop || step < 0 && i > stop; i += step {
		if len(items) == maxRange {
			return jinja.Undefined(), fmt.Errorf("range: more than %d numbers", maxRange)
		}
		items = append(items, jinja.NewInt(i))
		if i+step < i != (step < 0) { // overflow: the next number would wrap around
			break
		}
	}
	return jinja.NewList(items), nil
}
