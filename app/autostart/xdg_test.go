//go:build !darwin && !windows

package autostart

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestXDGEntry: Enable writes $XDG_CONFIG_HOME/autostart/io.superfluid.app.desktop with the
// binary's absolute path; Enabled reads the file (removed by hand, or switched off by the
// desktop: off); Disable removes it and a second Disable is fine.
func TestXDGEntry(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	if Enabled() {
		t.Fatal("enabled before any entry")
	}
	argv := []string{"/opt/super fluid/superfluid", "--hidden"} // a space: the Exec key quotes it
	if err := Enable(argv); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(cfg, "autostart", "io.superfluid.app.desktop")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "\nExec=\"/opt/super fluid/superfluid\" --hidden\n") || !strings.HasPrefix(string(b), "[Desktop Entry]\nType=Application\n") ||
		!strings.Contains(string(b), "\nX-Superfluid-Managed=true\n") {
		t.Fatalf("entry:\n%s", b)
	}
	if !Enabled() {
		t.Fatal("not enabled after Enable")
	}
	// The desktop's session settings switch it off without removing it.
	if err := os.WriteFile(p, append(b, []byte("Hidden=true\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	if Enabled() {
		t.Fatal("enabled with Hidden=true")
	}
	if err := os.Remove(p); err != nil { // by hand
		t.Fatal(err)
	}
	if Enabled() {
		t.Fatal("enabled after the file was removed")
	}
	if err := Enable(argv); err != nil || Disable() != nil || Enabled() || Disable() != nil {
		t.Fatalf("enable, disable, disable again: %v", err)
	}
	if err := Enable([]string{"superfluid"}); err == nil {
		t.Fatal("a relative command was accepted")
	}
}

// TestXDGUnwritable: an autostart folder that cannot be written says which file and why.
func TestXDGUnwritable(t *testing.T) {
	if os.Geteuid() == 0 {
		// root writes through permissions: make autostart a file instead, which nobody can
		// write into.
		cfg := t.TempDir()
		t.Setenv("XDG_CONFIG_HOME", cfg)
		if err := os.WriteFile(filepath.Join(cfg, "autostart"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	} else {
		cfg := t.TempDir()
		t.Setenv("XDG_CONFIG_HOME", cfg)
		dir := filepath.Join(cfg, "autostart")
		if err := os.Mkdir(dir, 0o555); err != nil {
			t.Fatal(err)
		}
	}
	err := Enable([]string{"/usr/bin/superfluid", "--hidden"})
	if err == nil || !strings.Contains(err.Error(), "autostart") || !strings.Contains(err.Error(), "cannot") {
		t.Fatalf("err %v", err)
	}
	if Enabled() {
		t.Fatal("enabled after a failed write")
	}
	t.Log(err)
}

// TestXDGDefaultHome: without XDG_CONFIG_HOME (or with a relative one, which the spec says
// to ignore) the entry is under ~/.config.
func TestXDGDefaultHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, v := range []string{"", "relative/dir"} {
		t.Setenv("XDG_CONFIG_HOME", v)
		p, err := Path()
		if err != nil || p != filepath.Join(home, ".config", "autostart", "io.superfluid.app.desktop") {
			t.Fatalf("XDG_CONFIG_HOME=%q: %q %v", v, p, err)
		}
	}
}

// TestXDGExecEscaping: the Desktop Entry spec applies the string escapes before the quoting
// rule, so a literal backslash in a quoted argument is four, an escaped quote is \\", and a
// newline in a path is \n, never a line break that would end the Exec key.
func TestXDGExecEscaping(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"/opt/a b/sf", `"/opt/a b/sf"`},
		{"/opt/100%/sf", `/opt/100%%/sf`},
		{`/opt/a\b/sf`, `"/opt/a\\\\b/sf"`},
		{`/opt/a"b/sf`, `"/opt/a\\"b/sf"`},
		{"/opt/a$b/sf", `"/opt/a\\$b/sf"`},
		{"/opt/a\nHidden=true/sf", `"/opt/a\nHidden=true/sf"`},
		{"/opt/a\tb/sf", `"/opt/a\tb/sf"`},
	} {
		got := execLine([]string{tt.in})
		if got != tt.want || strings.ContainsAny(got, "\n\t\r") {
			t.Errorf("execLine(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// TestXDGLeavesUsersEntry: an entry of the same name that the user wrote (no
// X-Superfluid-Managed mark) is neither overwritten by Enable nor removed by Disable; both
// say so and name the file. It still reads as on, as the desktop will run it.
func TestXDGLeavesUsersEntry(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	p := filepath.Join(cfg, "autostart", "io.superfluid.app.desktop")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	own := "[Desktop Entry]\nType=Application\nName=my superfluid\nExec=/home/me/bin/superfluid --port 9000 --data-dir /srv/llm\n"
	if err := os.WriteFile(p, []byte(own), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{"Enable": Enable([]string{"/usr/bin/superfluid", "--hidden"}), "Disable": Disable()} {
		if !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "yourself") {
			t.Fatalf("%s over the user's entry: %v", name, err)
		}
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != own {
		t.Fatalf("the user's entry changed: %q %v", b, err)
	}
	if !Enabled() {
		t.Fatal("the user's entry reads as off")
	}
	if _, err := os.Stat(p + ".tmp"); err == nil {
		t.Fatal("a temporary file was left beside the entry")
	}
}
