package app

import (
	"path/filepath"

	"github.com/superfluid/superfluid/server/web"
	"github.com/superfluid/superfluid/server/web/sessions"
)

// webAPI is team mode's browser API (/api/..., /ui/) over the team's services; nil without
// --team.
func (a *App) webAPI() *web.API {
	if !a.cfg.Team || a.people == nil {
		return nil
	}
	api := web.New(web.Config{People: a.people, Keys: a.keys, Bookings: a.team.bookingService(), Lanes: a.team.lanesManager(),
		Devices: a.team.laneDevices(), Quota: a.quota, Core: a.svc, Store: a.store, Sessions: sessions.New(sessions.Config{Store: a.store}),
		RuntimeLog: a.cfg.RuntimeLog, Backends: a.runtimes(),
		StorageCache: filepath.Join(a.cfg.DataDir, "storage-cache")})
	if a.svc != nil && a.svc.Manager() != nil {
		// A model pulled into an s3 storage loads from its local copy, fetched back when gone.
		a.svc.Manager().SetFetch(api.FetchCopy)
	}
	return api
}
