package autostart

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/windows/registry"
)

// runKey is the per-user key whose values Windows runs at login.
const runKey = `Software\Microsoft\Windows\CurrentVersion\Run`

// Path names the registry value the entry is.
func Path() (string, error) { return `HKCU\` + runKey + `\` + ID, nil }

func enabled() bool {
	k, err := registry.OpenKey(registry.CURRENT_USER, runKey, registry.QUERY_VALUE)
	if err != nil {
		return false
	}
	defer k.Close()
	_, _, err = k.GetStringValue(ID)
	return err == nil
}

func enable(argv []string) error {
	k, _, err := registry.CreateKey(registry.CURRENT_USER, runKey, registry.SET_VALUE)
	if err != nil {
		return fmt.Errorf("autostart: cannot open HKCU\\%s: %w", runKey, err)
	}
	defer k.Close()
	if err := k.SetStringValue(ID, commandLine(argv)); err != nil {
		return fmt.Errorf("autostart: cannot write HKCU\\%s\\%s: %w", runKey, ID, err)
	}
	return nil
}

func disable() error {
	k, err := registry.OpenKey(registry.CURRENT_USER, runKey, registry.SET_VALUE)
	if errors.Is(err, registry.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("autostart: cannot open HKCU\\%s: %w", runKey, err)
	}
	defer k.Close()
	if err := k.DeleteValue(ID); err != nil && !errors.Is(err, registry.ErrNotExist) {
		return fmt.Errorf("autostart: cannot remove HKCU\\%s\\%s: %w", runKey, ID, err)
	}
	return nil
}

// commandLine quotes each argument that has a space or a quote, as Windows parses them.
func commandLine(argv []string) string {
	var out []string
	for _, a := range argv {
		if a != "" && !strings.ContainsAny(a, " \t\"") {
			out = append(out, a)
			continue
		}
		out = append(out, `"`+strings.ReplaceAll(a, `"`, `\"`)+`"`)
	}
	return strings.Join(out, " ")
}
