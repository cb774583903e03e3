package desktop_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/app/desktop"
	"github.com/superfluid/superfluid/app/trayhost"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server/servertest"
)

// TestStartAtLoginEntry: the controller's setting is the XDG autostart entry in
// $XDG_CONFIG_HOME: this binary's absolute path with --hidden; removed by hand it reads off;
// an autostart folder that cannot be written is an error naming it.
func TestStartAtLoginEntry(t *testing.T) {
	c, _, _ := newController(t)
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	if c.StartAtLogin() {
		t.Fatal("on before any entry")
	}
	if err := c.SetStartAtLogin(true); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(cfg, "autostart", "io.superfluid.app.desktop")
	b, err := os.ReadFile(p)
	exe, _ := os.Executable()
	exe, _ = filepath.EvalSymlinks(exe)
	if err != nil || !strings.Contains(string(b), "Exec="+exe) || !c.StartAtLogin() {
		t.Fatalf("entry %s (%v), want Exec=%s", b, err, exe)
	}
	os.Remove(p)
	if c.StartAtLogin() {
		t.Fatal("on after the entry was removed by hand")
	}
	if err := c.SetStartAtLogin(false); err != nil {
		t.Fatalf("turning off with no entry: %v", err)
	}
	ro := t.TempDir()
	if err := os.WriteFile(filepath.Join(ro, "autostart"), nil, 0o444); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CONFIG_HOME", ro)
	if err := c.SetStartAtLogin(true); err == nil || !strings.Contains(err.Error(), filepath.Join(ro, "autostart")) {
		t.Fatalf("unwritable folder: %v", err)
	}
}

// TestTrayHostFromDeps: the controller says what its watcher says; without one, no host.
func TestTrayHostFromDeps(t *testing.T) {
	c, _, _ := newController(t)
	if host, changes := c.TrayHost(); host || changes != nil {
		t.Fatalf("no watcher: host %v, changes %v", host, changes)
	}
	cat := servertest.NewCatalog(t, models.Config{})
	d := desktop.New(desktop.Deps{Service: cat.Svc, Store: cat.Store, Host: "127.0.0.1",
		StopBackground: func(context.Context) error { return nil }, Tray: trayhost.Fixed(true)})
	defer d.Close()
	if host, _ := d.TrayHost(); !host {
		t.Fatal("a present host read as absent")
	}
}
