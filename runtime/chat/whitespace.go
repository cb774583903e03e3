package chat

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Whitespace control, done here rather than by the jinja library.
//
// HF renders chat templates with Jinja2's trim_blocks=True and
// lstrip_blocks=True. The jinja library applies those rules too, but it
// applies a tag's rules to the nearest text segment even when other tags sit
// in between: in `{% for m in messages %}{{ m.content }}\n{% endfor %}` the
// for tag's trim_blocks eats the "\n" after the expression, and in
// `[INST] {{ x }}{%- if y %}` the "-" strips the space after "[INST]".
// Jinja2 applies them only to the text directly beside the tag.
//
// So Parse compiles a rewritten source instead: the template is lexed the
// way Jinja2's lexer does it, whitespace control is applied to the adjacent
// text, every text run becomes a string-literal output tag ({{ '...' }}),
// and comments and raw tags disappear. With no text segments left, the
// library's own trimming has nothing to act on. Newlines that the rewrite
// removes are kept in empty comments so that the library's error messages
// still name the right template line.

type segKind int

const (
	segText segKind = iota
	segExpr
	segStmt
	segComment
	segRawBegin // {% raw %}: its content follows as a text segment
	segRawEnd   // {% endraw %}
)

type segment struct {
	kind        segKind
	text        string // the text, or a tag's content without markers
	orig        string // the segment as written, for keeping line numbers
	left, right byte   // whitespace markers: '-', '+' or 0
}

var endRaw = regexp.MustCompile(`\{%([-+]?)\s*endraw\s*([-+]?)%\}`)

// rewrite returns src with Jinja2's whitespace control applied and all
// text turned into output tags, ready for jinja.Compile.
func rewrite(src string) (string, error) {
	segs, err := lex(normalizeSource(src))
	if err != nil {
		return "", err
	}
	applyWhitespace(segs)
	if err := checkNesting(segs); err != nil {
		return "", err
	}

	var b strings.Builder
	for _, s := range segs {
		n := b.Len()
		switch s.kind {
		case segText:
			if s.text != "" {
				b.WriteString("{{ '")
				b.WriteString(strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s.text))
				b.WriteString("' }}")
			}
		case segExpr:
			// Spaces keep a "-" inside the expression from reading as a
			// marker (`{{--1}}` is the marker and -1).
			// rewriteTojson: tojson(indent=N) as HF writes it (tojson.go).
			b.WriteString("{{ " + rewriteTojson(s.text) + " }}")
		case segStmt:
			before, after := guardTag(s.text) // guard.go: the render's step and depth limits
			b.WriteString(before + "{% " + s.text + " %}" + after)
		}
		if lost := strings.Count(s.orig, "\n") - strings.Count(b.String()[n:], "\n"); lost > 0 {
			b.WriteString("{#" + strings.Repeat("\n", lost) + "#}")
		}
	}
	return b.String(), nil
}

// normalizeSource applies Jinja2's default lexing (the environment HF
// uses): "\r\n" and "\r" become "\n", and one trailing newline is dropped
// (keep_trailing_newline=False).
func normalizeSource(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.TrimSuffix(s, "\n")
}

// lex splits src into text and tags. Tag ends are found the way the jinja
// library's scanner finds them (quote-aware, first closer), so that the
// rewritten tags mean to the library what they meant here.
func lex(src string) ([]segment, error) {
	var segs []segment
	text := 0 // start of the current text run
	for i := 0; i+1 < len(src); {
		kind, closer := segExpr, "}}"
		switch src[i : i+2] {
		case "{{":
		case "{%":
			kind, closer = segStmt, "%}"
		case "{#":
			kind, closer = segComment, "#}"
		default:
			i++
			continue
		}
		if i > text {
			segs = append(segs, segment{kind: segText, text: src[text:i], orig: src[text:i]})
		}
		start := i
		i += 2
		s := segment{kind: kind}
		if i < len(src) && (src[i] == '-' || src[i] == '+') {
			s.left = src[i]
			i++
		}
		body := i
		end := -1
		for i < len(src) && end < 0 {
			c := src[i]
			switch {
			case kind != segComment && (c == '\'' || c == '"'):
				for i++; i < len(src) && src[i] != c; i++ {
					if src[i] == '\\' {
						i++
					}
				}
				i++
			case (c == '-' || c == '+' && kind != segExpr) && strings.HasPrefix(src[i+1:], closer):
				s.right, end, i = c, i, i+3
			case strings.HasPrefix(src[i:], closer):
				end, i = i, i+2
			default:
				i++
			}
		}
		if end < 0 {
			name := map[segKind]string{segExpr: "expression", segStmt: "statement", segComment: "comment"}[kind]
			line := strings.Count(src[:start], "\n") + 1
			return nil, fmt.Errorf("unclosed %s tag at line %d", name, line)
		}
		s.text, s.orig = src[body:end], src[start:i]
		text = i
		if kind == segStmt && strings.TrimSpace(s.text) == "raw" {
			// Jinja2 takes everything up to endraw as text.
			s.kind = segRawBegin
			m := endRaw.FindStringSubmatchIndex(src[i:])
			if m == nil {
				return nil, fmt.Errorf("missing end of raw directive at line %d", strings.Count(src[:start], "\n")+1)
			}
			segs = append(segs, s, segment{kind: segText, text: src[i : i+m[0]], orig: src[i : i+m[0]]})
			s = segment{kind: segRawEnd, orig: src[i+m[0] : i+m[1]]}
			if m[3] > m[2] {
				s.left = src[i+m[2]]
			}
			if m[5] > m[4] {
				s.right = src[i+m[4]]
			}
			i += m[1]
			text = i
		}
		segs = append(segs, s)
	}
	if text < len(src) {
		segs = append(segs, segment{kind: segText, text: src[text:], orig: src[text:]})
	}
	return segs, nil
}

// applyWhitespace trims the text beside each tag as Jinja2's lexer does with
// trim_blocks and lstrip_blocks on: "-" strips all whitespace on its side,
// "+" turns the defaults off, lstrip_blocks removes the indentation before
// a block or comment tag that starts its line, and trim_blocks removes the
// first newline after one (not after {% raw %}).
func applyWhitespace(segs []segment) {
	lineStart := true // the previous tag's end consumed a newline, or none yet
	for i := range segs {
		s := &segs[i]
		if s.kind == segText {
			continue
		}
		if i > 0 && segs[i-1].kind == segText {
			t := &segs[i-1].text
			switch {
			case s.left == '-':
				*t = strings.TrimRightFunc(*t, isSpace)
			case s.left != '+' && s.kind != segExpr:
				l := strings.LastIndexByte(*t, '\n') + 1
				if (l > 0 || lineStart) && l < len(*t) && strings.TrimLeftFunc((*t)[l:], isSpace) == "" {
					*t = (*t)[:l]
				}
			}
		}
		lineStart = false
		if i+1 < len(segs) && segs[i+1].kind == segText {
			t := &segs[i+1].text
			switch {
			case s.right == '-':
				trimmed := strings.TrimLeftFunc(*t, isSpace)
				lineStart = strings.HasSuffix((*t)[:len(*t)-len(trimmed)], "\n")
				*t = trimmed
			case s.right == '+' || s.kind == segExpr || s.kind == segRawBegin:
			case strings.HasPrefix(*t, "\n"):
				*t = (*t)[1:]
				lineStart = true
			}
		}
	}
}

// isSpace matches Python's str.isspace, which Jinja2's stripping uses.
func isSpace(r rune) bool {
	return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f
}
