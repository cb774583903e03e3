package autostart

import (
	"fmt"
	"html"
	"os"
	"path/filepath"
	"strings"
)

// markName marks the LaunchAgent as superfluid's: an XML comment, since launchd reads only
// the keys it knows; only a marked agent is rewritten or removed.
const markName = "<!-- X-Superfluid-Managed: written by superfluid, which rewrites or removes it -->"

// marked reports whether the plist's text has the mark.
func marked(text string) bool { return strings.Contains(text, markName) }

// Path is the LaunchAgent that launchd runs at login: ~/Library/LaunchAgents/<ID>.plist.
func Path() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("autostart: no home folder: %w", err)
	}
	return filepath.Join(home, "Library", "LaunchAgents", ID+".plist"), nil
}

func enabled() bool {
	p, err := Path()
	if err != nil {
		return false
	}
	_, err = os.Stat(p)
	return err == nil
}

func enable(argv []string) error {
	p, err := Path()
	if err != nil {
		return err
	}
	var args strings.Builder
	for _, a := range argv {
		args.WriteString("\t\t<string>" + html.EscapeString(a) + "</string>\n")
	}
	plist := `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
` + markName + `
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>` + ID + `</string>
	<key>ProgramArguments</key>
	<array>
` + args.String() + `	</array>
	<key>RunAtLoad</key>
	<true/>
	<key>ProcessType</key>
	<string>Interactive</string>
</dict>
</plist>
`
	return writeAtomic(p, plist)
}
