package app

import (
	"fmt"
	"io"
	"runtime"

	"github.com/superfluid/superfluid/app/trayhost"
)

// watchTray follows the desktop's tray host: on macOS and Windows there always is one; on
// Linux and the BSDs a panel owns the StatusNotifier watcher on the session bus, or the
// window stays open and says so. Without a session bus it says so here too.
func watchTray(stderr io.Writer) *trayhost.Watcher {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		return trayhost.Fixed(true)
	}
	w, err := trayhost.Watch()
	if err != nil {
		fmt.Fprintf(stderr, "superfluid: %v: no tray icon; closing the window quits\n", err)
		return trayhost.Fixed(false)
	}
	if !w.Present() {
		fmt.Fprintln(stderr, "superfluid: no system tray on this desktop (nothing owns org.kde.StatusNotifierWatcher): closing the window quits")
	}
	return w
}
