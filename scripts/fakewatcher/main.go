// Command fakewatcher owns org.kde.StatusNotifierWatcher on the session bus and accepts every
// item that registers, drawing nothing: the screenshot scripts run it so that the app sees a
// tray host and its window has no "No system tray" banner (which would move every control the
// scripts click). The real tray is tested with a real host (scripts/tray_e2e.sh, xfce4-panel).
package main

import (
	"fmt"
	"os"

	"github.com/godbus/dbus/v5"
)

const name = "org.kde.StatusNotifierWatcher"

// watcher answers the calls an item makes when it registers.
type watcher struct{}

func (watcher) RegisterStatusNotifierItem(string) *dbus.Error { return nil }
func (watcher) RegisterStatusNotifierHost(string) *dbus.Error { return nil }

func main() {
	conn, err := dbus.ConnectSessionBus()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakewatcher:", err)
		os.Exit(1)
	}
	if err := conn.Export(watcher{}, "/StatusNotifierWatcher", name); err != nil {
		fmt.Fprintln(os.Stderr, "fakewatcher:", err)
		os.Exit(1)
	}
	reply, err := conn.RequestName(name, dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		fmt.Fprintln(os.Stderr, "fakewatcher: cannot own", name, err)
		os.Exit(1)
	}
	fmt.Println("ready")
	select {}
}
