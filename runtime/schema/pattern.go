package schema

import (
	"fmt"
	"strconv"
	"strings"
)

// checkPattern returns why the converter cannot safely take a "pattern", or "" when it can.
//
// The converter has its own small regex reader. Measured against the pinned build, it crashes on
// "(?" (non-capturing groups, lookarounds) and on a quantifier with nothing before it ("^*a$",
// "^(+a)$", "^{2}$"); it loops forever on a bare "]" or "}" and on a count like {5,3}; and a
// repeated part that can match the empty string ("(a*)*", "(a?)+") compiles into a grammar whose
// matcher recurses without end on the first character the model writes. The walk below reads a
// pattern the way the converter does (a class runs to the first unescaped "]", an escape takes
// one character) so that it sees the same structure.
func checkPattern(p string) string {
	if len(p) < 2 || p[0] != '^' || p[len(p)-1] != '$' {
		return fmt.Sprintf("the pattern %q must start with ^ and end with $: the grammar converter only takes whole-string patterns", p)
	}
	r := &patternReader{s: p[1 : len(p)-1]}
	if _, err := r.alternatives(); err != "" {
		return fmt.Sprintf("the pattern %q %s", p, err)
	}
	if r.i < len(r.s) { // alternatives stops only at the end or at a ")"
		return fmt.Sprintf("the pattern %q has a \")\" at offset %d that closes no group; escape it as \\)", p, r.i+1)
	}
	return ""
}

// grammarEscapes are the escapes llama.cpp's grammar parser reads (besides \x, \u, \U with hex
// digits, left out here); regexSyntax are those the converter turns into the plain character.
const (
	grammarEscapes = `tnr\"[]`
	regexSyntax    = `^$.[]()|{}*+?`
)

func (r *patternReader) badEscape() string {
	return fmt.Sprintf("has the escape %q %s, which the grammar engine does not know (it knows \\t \\n \\r and escaped punctuation)", r.s[r.i:r.i+2], r.at())
}

type patternReader struct {
	s     string
	i     int
	depth int
}

// at describes the current position for a message; offsets count the leading "^".
func (r *patternReader) at() string {
	return fmt.Sprintf("at offset %d", r.i+1)
}

// alternatives reads "a|b|..." up to the end or an unmatched ")" and reports whether it can match
// the empty string.
func (r *patternReader) alternatives() (empty bool, err string) {
	for {
		e, err := r.sequence()
		if err != "" {
			return false, err
		}
		empty = empty || e
		if r.i < len(r.s) && r.s[r.i] == '|' {
			r.i++
			continue
		}
		return empty, ""
	}
}

// sequence reads atoms with their quantifiers up to "|", ")" or the end.
func (r *patternReader) sequence() (empty bool, err string) {
	empty = true
	for r.i < len(r.s) && r.s[r.i] != '|' && r.s[r.i] != ')' {
		e, err := r.atom()
		if err != "" {
			return false, err
		}
		for r.i < len(r.s) {
			q, err := r.quantifier(e)
			if err != "" {
				return false, err
			}
			if q == quantNone {
				break
			}
			e = q
		}
		empty = empty && e.matchesEmpty()
	}
	return empty, ""
}

// atomState is what a quantifier loop knows about the part before it.
type atomState uint8

const (
	quantNone  atomState = iota // no quantifier was read (the loop ends)
	notEmpty                    // cannot match ""
	mayBeEmpty                  // can match ""
)

func (s atomState) matchesEmpty() bool { return s == mayBeEmpty }

func emptiness(empty bool) atomState {
	if empty {
		return mayBeEmpty
	}
	return notEmpty
}

// atom reads one character, escape, class or group.
func (r *patternReader) atom() (atomState, string) {
	c := r.s[r.i]
	switch c {
	case '(':
		if r.i+1 < len(r.s) && r.s[r.i+1] == '?' {
			return 0, fmt.Sprintf("has a \"(?\" group %s (non-capturing, lookaround or named), which the grammar converter cannot read; use a plain group (...)", r.at())
		}
		r.depth++
		if r.depth > MaxPatternNesting {
			return 0, fmt.Sprintf("nests groups deeper than %d %s; simplify it", MaxPatternNesting, r.at())
		}
		start := r.i
		r.i++
		empty, err := r.alternatives()
		if err != "" {
			return 0, err
		}
		if r.i >= len(r.s) {
			r.i = start
			return 0, fmt.Sprintf("has a \"(\" %s that is never closed; close it or escape it as \\(", r.at())
		}
		r.i++ // ")"
		r.depth--
		return emptiness(empty), ""
	case '*', '+', '?', '{':
		return 0, fmt.Sprintf("has %q %s with nothing before it to repeat; escape it (\\%c) or put something before it", c, r.at(), c)
	case ']', '}':
		return 0, fmt.Sprintf("has an unescaped %q %s, which makes the grammar converter loop forever; escape it as \\%c", c, r.at(), c)
	case '[':
		start := r.i
		r.i++
		for r.i < len(r.s) && r.s[r.i] != ']' {
			if r.s[r.i] == '\\' {
				// The converter copies a class verbatim, so the grammar parser reads the escape.
				if r.i+1 < len(r.s) && !strings.ContainsRune(grammarEscapes, rune(r.s[r.i+1])) {
					return 0, r.badEscape()
				}
				r.i++
			}
			r.i++
		}
		if r.i >= len(r.s) {
			r.i = start
			return 0, fmt.Sprintf("has a \"[\" %s that is never closed; close the class with ] or escape it as \\[", r.at())
		}
		if r.i == start+1 {
			r.i = start
			return 0, fmt.Sprintf("has an empty class \"[]\" %s; the grammar converter ends a class at the first ], so write a literal ] as \\]", r.at())
		}
		r.i++
		return notEmpty, ""
	case '\\':
		if r.i+1 >= len(r.s) {
			return 0, fmt.Sprintf("ends with a lone backslash %s; escape it as \\\\", r.at())
		}
		// The converter unescapes regex syntax characters and passes other escapes to the
		// grammar parser, which knows only its own few (\d, \w, \1 make it fail).
		if c := rune(r.s[r.i+1]); !strings.ContainsRune(grammarEscapes, c) && !strings.ContainsRune(regexSyntax, c) {
			return 0, r.badEscape()
		}
		r.i += 2
		return notEmpty, ""
	default:
		r.i++
		return notEmpty, ""
	}
}

// quantifier reads one quantifier after a part in state s and returns the new state, or
// quantNone when there is no quantifier at r.i.
func (r *patternReader) quantifier(s atomState) (atomState, string) {
	c, at := r.s[r.i], r.at()
	var min int
	unbounded := false
	switch c {
	case '*':
		min, unbounded = 0, true
		r.i++
	case '+':
		min, unbounded = 1, true
		r.i++
	case '?':
		min = 0
		r.i++
	case '{':
		start := r.i
		end := strings.IndexByte(r.s[r.i:], '}')
		if end < 0 {
			return 0, fmt.Sprintf("has a \"{\" %s that is never closed; write a count as {n}, {n,} or {n,m}, or escape it as \\{", r.at())
		}
		body := r.s[r.i+1 : r.i+end]
		var err string
		if min, unbounded, err = parseCount(body); err != "" {
			return 0, fmt.Sprintf("has the count {%s} %s: %s", body, at, err)
		}
		r.i = start + end + 1
	default:
		return quantNone, ""
	}
	if unbounded && s.matchesEmpty() {
		return 0, fmt.Sprintf("repeats with %q %s a part that can match the empty string, which crashes the grammar engine; make the repeated part match at least one character (write (a*)* as a*)", c, at)
	}
	return emptiness(min == 0 || s.matchesEmpty()), ""
}

// parseCount reads the inside of {...}: "n", "n,", ",m" or "n,m", with n ≤ m ≤ MaxRepeat.
func parseCount(body string) (min int, unbounded bool, err string) {
	var max int
	lo, hi, comma := strings.Cut(body, ",")
	num := func(s string) (int, bool) {
		if s == "" || len(s) > 9 || strings.Trim(s, "0123456789") != "" {
			return 0, false
		}
		n, _ := strconv.Atoi(s)
		return n, true
	}
	const want = "write it as {n}, {n,} or {n,m} with digits only"
	if !comma {
		n, ok := num(lo)
		if !ok {
			return 0, false, want
		}
		min, max = n, n
	} else {
		if lo == "" && hi == "" {
			return 0, false, want
		}
		if lo != "" {
			n, ok := num(lo)
			if !ok {
				return 0, false, want
			}
			min = n
		}
		if hi == "" {
			unbounded = true
			max = min
		} else {
			n, ok := num(hi)
			if !ok {
				return 0, false, want
			}
			max = n
		}
	}
	if min > MaxRepeat || max > MaxRepeat {
		return 0, false, fmt.Sprintf("the grammar engine repeats at most %d times; lower the count", MaxRepeat)
	}
	if min > max {
		return 0, false, "the minimum is above the maximum; swap them"
	}
	return min, unbounded, ""
}
