package desktop_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/app/autostart"
	"github.com/superfluid/superfluid/app/desktop"
	"github.com/superfluid/superfluid/app/trayhost"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server/servertest"
)

// TestStartAtLoginEntry: the controller's setting is the XDG autostart entry in
// $XDG_CONFIG_HOME. Turned on from a go test binary (gone by the next login) it is refused,
// saying so, and nothing is written; an entry superfluid wrote reads on and turning off
// removes it (twice is fine); the user's own entry of the same name is left, with an error
// naming it. (Exec's path and quoting: app/autostart's tests; the flags: app's
// TestLoginEntryCarriesFlags.)
func TestStartAtLoginEntry(t *testing.T) {
	c, _, _ := newController(t)
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	if c.StartAtLogin() {
		t.Fatal("on before any entry")
	}
	p := filepath.Join(cfg, "autostart", "io.superfluid.app.desktop")
	if err := c.SetStartAtLogin(true); err == nil || !strings.Contains(err.Error(), "temporary build") {
		t.Fatalf("turning on from a test binary: %v", err)
	}
	if _, err := os.Stat(p); err == nil || c.StartAtLogin() {
		t.Fatal("an entry was written for a temporary binary")
	}
	if err := autostart.Enable([]string{"/usr/bin/superfluid", "--hidden"}); err != nil {
		t.Fatal(err)
	}
	if !c.StartAtLogin() {
		t.Fatal("off with superfluid's entry there")
	}
	if err := c.SetStartAtLogin(false); err != nil || c.StartAtLogin() {
		t.Fatalf("turning off: %v, on %v", err, c.StartAtLogin())
	}
	if err := c.SetStartAtLogin(false); err != nil {
		t.Fatalf("turning off with no entry: %v", err)
	}
	own := "[Desktop Entry]\nType=Application\nName=mine\nExec=/home/me/superfluid\n"
	if err := os.WriteFile(p, []byte(own), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.SetStartAtLogin(false); err == nil || !strings.Contains(err.Error(), p) || !c.StartAtLogin() {
		t.Fatalf("turning off the user's own entry: %v, on %v", err, c.StartAtLogin())
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
