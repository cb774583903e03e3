package app

import (
	"github.com/superfluid/superfluid/server/loadhistory"
)

// watchLoadHistory stores the core's model events (loads, failed loads, unloads) for the web
// API's load history, in team mode only; the returned func stops it (before the store closes).
func (a *App) watchLoadHistory() (stop func()) {
	if !a.cfg.Team {
		return func() {}
	}
	return loadhistory.Watch(a.svc, a.store, func(model string) []string {
		if serving := loadhistory.LanesServing(a.team.lanesManager()); serving != nil {
			return serving(model)
		}
		return nil
	})
}
