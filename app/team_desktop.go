package app

import (
	"github.com/superfluid/superfluid/app/desktop"
	"github.com/superfluid/superfluid/server/people"
)

// desktop is team mode as the desktop app's Server tab drives it: the lanes manager and the
// bookings service the admin API serves, and p's audit log; nil outside team mode.
func (t *team) desktop(p *people.Service) *desktop.Team {
	if t == nil {
		return nil
	}
	return &desktop.Team{Lanes: t.lanes, Devices: t.devices, Bookings: t.bookings, People: p}
}
