//go:build !darwin && !windows

package autostart

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// markName is the key that marks the entry as superfluid's (the spec lets X- keys be
// anything; desktops ignore them): only a marked entry is rewritten or removed.
const markName = "X-Superfluid-Managed=true"

// marked reports whether the entry's text has the mark on a line of its own.
func marked(text string) bool {
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == markName {
			return true
		}
	}
	return false
}

// Path is the XDG autostart entry: $XDG_CONFIG_HOME/autostart (else ~/.config/autostart).
func Path() (string, error) {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" || !filepath.IsAbs(dir) { // the spec says to ignore a relative one
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("autostart: no home folder: %w", err)
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "autostart", ID+".desktop"), nil
}

func enabled() bool {
	p, err := Path()
	if err != nil {
		return false
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return false
	}
	// A desktop's settings may keep the file and switch it off.
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, _ := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		switch strings.TrimSpace(k) {
		case "Hidden":
			if strings.TrimSpace(v) == "true" {
				return false
			}
		case "X-GNOME-Autostart-enabled":
			if strings.TrimSpace(v) == "false" {
				return false
			}
		}
	}
	return true
}

func enable(argv []string) error {
	p, err := Path()
	if err != nil {
		return err
	}
	entry := "[Desktop Entry]\nType=Application\nName=superfluid\n" +
		"Comment=Local models over the OpenAI, Anthropic and Ollama APIs\n" +
		"Exec=" + execLine(argv) + "\nIcon=superfluid\nTerminal=false\nX-GNOME-Autostart-enabled=true\n" +
		markName + "\n"
	// Written beside and renamed, so that a desktop reading the folder never sees half a file.
	return writeAtomic(p, entry)
}

// execLine quotes argv as the Desktop Entry spec's Exec key wants: an argument with a
// reserved character in double quotes, with ", `, $ and \ escaped inside; % doubled (it
// starts a field code); then the string escapes over the whole value.
func execLine(argv []string) string {
	var out []string
	for _, a := range argv {
		a = strings.ReplaceAll(a, "%", "%%")
		if a != "" && !strings.ContainsAny(a, " \t\n\"'\\><~|&;$*?#()`") {
			out = append(out, a)
			continue
		}
		r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "`", "\\`", `$`, `\$`)
		out = append(out, `"`+r.Replace(a)+`"`)
	}
	// The Exec value is also a string value, whose escapes apply first: each backslash
	// doubles again (a literal one is four), and a newline, tab or return is written as an
	// escape so that it cannot end the line and inject keys.
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`, "\t", `\t`, "\r", `\r`).Replace(strings.Join(out, " "))
}
