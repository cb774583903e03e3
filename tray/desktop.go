package tray

// DesktopController is the app's place on the desktop: whether a tray host is there to show
// the icon, and starting at login.
type DesktopController interface{}
