package schema

import (
	"strings"
	"testing"
)

func TestCheckPattern(t *testing.T) {
	deep := "^" + strings.Repeat("(", MaxPatternNesting+1) + "a" + strings.Repeat(")", MaxPatternNesting+1) + "$"
	deepOK := "^" + strings.Repeat("(", MaxPatternNesting) + "a" + strings.Repeat(")", MaxPatternNesting) + "$"
	tests := []struct {
		pattern string
		want    string // a part of the refusal; "" when accepted
	}{
		// Accepted: what real schemas use and the converter takes.
		{`^[a-z]+@[a-z]+\.com$`, ""},
		{`^[0-9]{3}-[0-9]{4}$`, ""},
		{`^(\+|-)?[0-9]+(\.[0-9]{1,2})?$`, ""},
		{`^.*$`, ""},
		{`^$`, ""},
		{`^a*?$`, ""},
		{`^(a*)?$`, ""},
		{`^(a+)*$`, ""},
		{`^(ab|cd)+$`, ""},
		{`^(a*){2}$`, ""},
		{`^(a*){0,3}$`, ""},
		{`^a{2}{3}$`, ""},
		{`^a{,5}$`, ""},
		{`^a{2000}$`, ""},
		{`^[\]]$`, ""},
		{`^\]\}$`, ""},
		{`^[^"]+$`, ""},
		{`^(a|)$`, ""},
		{`^()$`, ""},
		{deepOK, ""},

		// Refused: the converter only reads anchored patterns.
		{``, "must start with ^ and end with $"},
		{`abc`, "must start with ^ and end with $"},
		{`^abc`, "must start with ^ and end with $"},
		// Crashes of the pinned converter.
		{`^(?:ab)$`, `"(?" group at offset 1`},
		{`^(?=a)$`, `"(?" group`},
		{`^*a$`, `'*' at offset 1 with nothing before it`},
		{`^(+a)$`, `'+' at offset 2 with nothing before it`},
		{`^{3}$`, `'{' at offset 1 with nothing before it`},
		{`^a|*$`, `'*' at offset 3 with nothing before it`},
		// Endless loops.
		{`^a]$`, `unescaped ']' at offset 2`},
		{`^a}$`, `unescaped '}' at offset 2`},
		{`^[]]$`, `empty class`},
		{`^a{5,3}$`, "the minimum is above the maximum"},
		{`^a{3,2x}$`, "digits only"},
		{`^a{ 3}$`, "digits only"},
		{`^a{,}$`, "digits only"},
		{`^a{1,2,3}$`, "digits only"},
		// Matcher recursion at generation time.
		{`^(a*)*$`, "can match the empty string"},
		{`^(a?)+$`, "can match the empty string"},
		{`^(a*){2,}$`, "can match the empty string"},
		{`^(|a)*$`, "can match the empty string"},
		{`^()*$`, "can match the empty string"},
		{`^((a|b*)c?)+$`, "can match the empty string"},
		{`^a**$`, "can match the empty string"},
		// Malformed.
		{`^a{2001}$`, "at most 2000 times"},
		{`^a{99999999999}$`, "digits only"},
		{`^a{3$`, "never closed"},
		{`^[abc$`, `"[" at offset 1 that is never closed`},
		{`^(abc$`, `"(" at offset 1 that is never closed`},
		{`^abc)$`, `")" at offset 4 that closes no group`},
		{`^abc\$`, "lone backslash"},
		{deep, "deeper than 32"},
	}
	for _, tt := range tests {
		got := checkPattern(tt.pattern)
		switch {
		case tt.want == "" && got != "":
			t.Errorf("checkPattern(%q) refused: %s", tt.pattern, got)
		case tt.want != "" && !strings.Contains(got, tt.want):
			t.Errorf("checkPattern(%q) = %q, want it to contain %q", tt.pattern, got, tt.want)
		}
	}
}

// FuzzCheckPattern: the pattern reader never panics or loops.
func FuzzCheckPattern(f *testing.F) {
	for _, p := range []string{`^(a|b*)+[x\]]{2,3}$`, `^((a)|(b|)c?)*\\$`, `^[^"]{0,}$`} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		checkPattern(p)
	})
}
