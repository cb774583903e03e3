package quietlocale

import (
	"os"
	"testing"
)

// TestQuietReplacesOnlyTheCLocale: the first set locale variable is replaced when it names C
// or POSIX (with or without an encoding), never otherwise, and Restore puts it back.
func TestQuietReplacesOnlyTheCLocale(t *testing.T) {
	for _, c := range []struct {
		env      map[string]string
		replaced string
	}{
		{map[string]string{"LANG": "C.UTF-8"}, "LANG"},
		{map[string]string{"LANG": "POSIX"}, "LANG"},
		{map[string]string{"LC_ALL": "C", "LANG": "de_DE.UTF-8"}, "LC_ALL"},
		{map[string]string{"LANG": "de_DE.UTF-8"}, ""},
		{map[string]string{"LC_MESSAGES": "fr_FR", "LANG": "C"}, ""},
		{map[string]string{}, ""},
	} {
		for _, name := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
			t.Setenv(name, c.env[name])
		}
		changed, saved = quiet()
		if changed != c.replaced {
			t.Errorf("%v: replaced %q, want %q", c.env, changed, c.replaced)
		}
		if changed != "" && os.Getenv(changed) != "en_US.UTF-8" {
			t.Errorf("%v: %s is %q during init", c.env, changed, os.Getenv(changed))
		}
		Restore()
		for _, name := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
			if got := os.Getenv(name); got != c.env[name] {
				t.Errorf("%v: after Restore %s is %q", c.env, name, got)
			}
		}
	}
}
