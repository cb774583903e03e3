package supervise

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The placeholders a command template may hold. They are replaced inside each word after the
// template is split, so a model path with spaces or quotes stays one argument.
const (
	modelPlaceholder  = "{model}"
	portPlaceholder   = "{port}"
	apiKeyPlaceholder = "{api_key}"
)

// SplitCommand splits a command template into words the way a POSIX shell splits a simple
// command, without running a shell and without any expansion:
//
//   - blanks (space, tab, newline) separate words;
//   - 'single quotes' keep everything literally up to the next single quote;
//   - "double quotes" keep everything literally except \" \\ \$ \` and a backslash-newline,
//     which drop the backslash;
//   - outside quotes, a backslash keeps the next character literally (a backslash-newline
//     joins lines);
//   - nothing else is special: $VAR, *, ~, ;, |, && and redirections are ordinary characters,
//     so a template can never start a second command or read the environment.
//
// An empty template, or an unterminated quote or trailing backslash, is an error.
func SplitCommand(template string) ([]string, error) {
	var (
		words   []string
		word    strings.Builder
		inWord  bool
		runes   = []rune(template)
		closeAt = func(quote rune, from int) error {
			return fmt.Errorf("command %q: the %c opened at character %d is never closed", template, quote, from+1)
		}
	)
	for i := 0; i < len(runes); i++ {
		r := runes[i]
		switch {
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		case r == '\'':
			inWord = true
			end := indexRune(runes, i+1, '\'')
			if end < 0 {
				return nil, closeAt(r, i)
			}
			word.WriteString(string(runes[i+1 : end]))
			i = end
		case r == '"':
			inWord = true
			start := i
			for i++; ; i++ {
				if i >= len(runes) {
					return nil, closeAt('"', start)
				}
				c := runes[i]
				if c == '"' {
					break
				}
				if c == '\\' && i+1 < len(runes) && strings.ContainsRune("\"\\$`\n", runes[i+1]) {
					i++
					if runes[i] == '\n' {
						continue
					}
					c = runes[i]
				}
				word.WriteRune(c)
			}
		case r == '\\':
			if i+1 >= len(runes) {
				return nil, fmt.Errorf("command %q ends in a backslash that escapes nothing", template)
			}
			i++
			if runes[i] == '\n' {
				continue
			}
			inWord = true
			word.WriteRune(runes[i])
		default:
			inWord = true
			word.WriteRune(r)
		}
	}
	if inWord {
		words = append(words, word.String())
	}
	if len(words) == 0 {
		return nil, errors.New("empty command")
	}
	return words, nil
}

func indexRune(runes []rune, from int, r rune) int {
	for i := from; i < len(runes); i++ {
		if runes[i] == r {
			return i
		}
	}
	return -1
}

// checkTemplate makes sure the split template can be started on a port of our choosing: without
// {port} superfluid could not know where the server listens. The program itself (the first
// word) may not be a placeholder, so a model name can never choose what runs.
func checkTemplate(words []string) error {
	if strings.Contains(words[0], modelPlaceholder) || strings.Contains(words[0], portPlaceholder) {
		return fmt.Errorf("command %q: the program (first word) may not be a placeholder", strings.Join(words, " "))
	}
	for _, w := range words[1:] {
		if strings.Contains(w, portPlaceholder) {
			return nil
		}
	}
	return fmt.Errorf("command %q has no {port}: superfluid picks the port the server listens on", strings.Join(words, " "))
}

// checkModel refuses a model that would read as an option where {model} is a word of its own
// (vllm serve {model}): a lane's model may come from a member's booking, and no model name,
// Hub repository or file path begins with "-".
func checkModel(model string) error {
	if strings.HasPrefix(model, "-") {
		return fmt.Errorf("the model %q begins with \"-\": the server would read it as an option", model)
	}
	return nil
}

// expandArgs replaces {model}, {port} and {api_key} in each word; other braces (a JSON
// argument) are kept.
func expandArgs(words []string, model string, port int, apiKey string) []string {
	out := make([]string, len(words))
	r := strings.NewReplacer(modelPlaceholder, model, portPlaceholder, strconv.Itoa(port), apiKeyPlaceholder, apiKey)
	for i, w := range words {
		out[i] = r.Replace(w)
	}
	return out
}
