package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestNoToolkitNoiseUnderTheCLocale: the built command prints no "Fyne error" lines with the
// C or POSIX locale of servers and containers (quietlocale), and its environment is the one it
// was started with. make test builds bin/superfluid before the tests run.
func TestNoToolkitNoiseUnderTheCLocale(t *testing.T) {
	bin := "bin/superfluid"
	if _, err := os.Stat(bin); err != nil {
		t.Skip("bin/superfluid is not built (make test builds it first): ", err)
	}
	for _, env := range []string{"LANG=C.UTF-8", "LANG=C", "LC_ALL=POSIX", "LC_MESSAGES=C.UTF-8"} {
		cmd := exec.Command(bin, "--help")
		cmd.Env = append(clean(os.Environ()), env)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s superfluid --help: %v\n%s", env, err, out)
		}
		if strings.Contains(string(out), "Fyne error") || !strings.Contains(string(out), "Usage") {
			t.Errorf("%s superfluid --help printed toolkit noise or no usage:\n%s", env, out)
		}
	}
}

// clean is env without the locale variables.
func clean(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "LANG=") && !strings.HasPrefix(kv, "LC_") && !strings.HasPrefix(kv, "LANGUAGE=") {
			out = append(out, kv)
		}
	}
	return out
}
