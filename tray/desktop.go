package tray

// DesktopController is the app's place on the desktop: whether a tray host is there to show
// the icon, and starting at login.
type DesktopController interface {
	// TrayHost reports whether a system tray host (a StatusNotifier watcher) is there now, and
	// a channel that receives each change (a panel quitting or starting). The channel may be
	// nil where nothing can change (no session bus at all); it closes when the app is done with it
	// (a session bus that goes away sends false first).
	TrayHost() (bool, <-chan bool)
	// StartAtLogin reports whether the desktop starts the app when the user logs in, as the
	// desktop's own entry says (a file removed by hand reads as off); SetStartAtLogin writes
	// or removes that entry, saying why it could not.
	StartAtLogin() bool
	SetStartAtLogin(on bool) error
}
