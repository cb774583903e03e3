package desktop

import (
	"github.com/superfluid/superfluid/app/autostart"
)

// TrayHost reports whether a tray host shows the icon now, and its changes (Deps.Tray; none
// given: no host, nothing to follow).
func (c *Controller) TrayHost() (bool, <-chan bool) {
	if c.d.Tray == nil {
		return false, nil
	}
	return c.d.Tray.Present(), c.d.Tray.Changes()
}

// StartAtLogin reads the desktop's autostart entry, so that one removed by hand reads as off.
func (c *Controller) StartAtLogin() bool { return autostart.Enabled() }

// SetStartAtLogin writes the entry (this binary's absolute path and Deps.LoginArgs) or
// removes it.
func (c *Controller) SetStartAtLogin(on bool) error {
	if !on {
		return autostart.Disable()
	}
	argv, err := autostart.Command(c.d.LoginArgs...)
	if err != nil {
		return err
	}
	return autostart.Enable(argv)
}
