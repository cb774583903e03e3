package web

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/superfluid/superfluid/server/bookings"
	"github.com/superfluid/superfluid/server/core/qos"
)

// The admin's settings: the bookings policy (bookings.Service Policy/SetPolicy: approval, the
// longest booking, hours per person per week) and the team's default scheduling class, kept
// in the store's app settings and applied by the router to every request that names no class
// (server.Config.DefaultQoS). Every change is audited (settings.update, with from and to).
func (a *API) adminSettingsRoutes() {
	Handle(a, http.MethodGet, "/api/admin/settings", adminMeta("settings", "The bookings policy and the default QoS class"), a.adminSettings)
	Handle(a, http.MethodPut, "/api/admin/settings", adminMeta("settings", "Change the bookings policy or the default QoS class (fields left out stay)"), a.adminPutSettings)
}

// loadDefaultQoS reads the stored default class, at the start and after a restore (a stored
// value this build does not know is logged and ignored).
func (a *API) loadDefaultQoS() {
	if a.cfg.defaultQoS == nil { // registerAdmin, before any request reads it
		a.cfg.defaultQoS = new(atomic.Int32)
	}
	if a.cfg.Store == nil {
		return
	}
	v, err := a.cfg.Store.AppSetting(context.Background(), DefaultQoSSetting)
	if err != nil {
		slog.Warn("web: the default QoS class was not read; each endpoint's own applies", "err", err)
		return
	}
	class, err := qos.Parse(v)
	if err != nil {
		slog.Warn("web: the stored default QoS class is unknown; each endpoint's own applies", "value", v)
		return
	}
	a.cfg.defaultQoS.Store(int32(class))
}

// DefaultQoS is the class of a request that names none (qos.Unset: each endpoint's own
// default), as the settings say; the router reads it for every request (server.Config).
func (a *API) DefaultQoS() qos.Class {
	if a == nil || a.cfg.defaultQoS == nil {
		return qos.Unset
	}
	return qos.Class(a.cfg.defaultQoS.Load())
}

// DefaultQoSSetting is the app setting holding the team's default scheduling class for requests
// that name none ("" or absent: each endpoint's own default).
const DefaultQoSSetting = "team.default_qos"

// AdminSettings is the settings on the wire. max_booking_hours and hours_per_week are 0 for no
// limit; default_qos "" for each endpoint's own default (chat interactive, infill completion).
type AdminSettings struct {
	ApprovalRequired bool    `json:"approval_required"`
	MaxBookingHours  float64 `json:"max_booking_hours" minimum:"0"`
	HoursPerWeek     float64 `json:"hours_per_week" minimum:"0"`
	DefaultQoS       string  `json:"default_qos" enum:"interactive,completion,agent,background,"`
}

// AdminSettingsChange is the body of PUT /api/admin/settings.
type AdminSettingsChange struct {
	ApprovalRequired *bool    `json:"approval_required"`
	MaxBookingHours  *float64 `json:"max_booking_hours" minimum:"0" maximum:"87600"`
	HoursPerWeek     *float64 `json:"hours_per_week" minimum:"0" maximum:"168"`
	DefaultQoS       *string  `json:"default_qos" enum:"interactive,completion,agent,background,"`
}

func (a *API) currentSettings(ctx context.Context) (AdminSettings, error) {
	if a.cfg.Bookings == nil || a.cfg.Store == nil {
		return AdminSettings{}, unavailable("bookings")
	}
	p := a.cfg.Bookings.Policy()
	def, err := a.cfg.Store.AppSetting(ctx, DefaultQoSSetting)
	if err != nil {
		return AdminSettings{}, err
	}
	return AdminSettings{ApprovalRequired: p.NeedsApproval, MaxBookingHours: p.MaxLength.Hours(), HoursPerWeek: p.MaxHoursPerWeek, DefaultQoS: def}, nil
}

func (a *API) adminSettings(r *Request[NoBody]) (AdminSettings, error) {
	return a.currentSettings(r.Ctx)
}

func (a *API) adminPutSettings(r *Request[AdminSettingsChange]) (AdminSettings, error) {
	before, err := a.currentSettings(r.Ctx)
	if err != nil {
		return AdminSettings{}, err
	}
	after := before
	b := r.Body
	if b.ApprovalRequired != nil {
		after.ApprovalRequired = *b.ApprovalRequired
	}
	if b.MaxBookingHours != nil {
		after.MaxBookingHours = *b.MaxBookingHours
	}
	if b.HoursPerWeek != nil {
		after.HoursPerWeek = *b.HoursPerWeek
	}
	if b.DefaultQoS != nil {
		class, err := qos.Parse(*b.DefaultQoS)
		if err != nil {
			return AdminSettings{}, Errorf(http.StatusBadRequest, "invalid_body", "default_qos", "%s", err.Error())
		}
		after.DefaultQoS = class.String()
	}
	if after == before {
		return after, nil
	}
	maxLength := time.Duration(math.Round(after.MaxBookingHours * float64(time.Hour)))
	if after.DefaultQoS != before.DefaultQoS {
		if err := a.cfg.Store.SetAppSetting(r.Ctx, DefaultQoSSetting, after.DefaultQoS); err != nil {
			return AdminSettings{}, err
		}
		class, _ := qos.Parse(after.DefaultQoS) // parsed above
		a.cfg.defaultQoS.Store(int32(class))
	}
	a.cfg.Bookings.SetPolicy(bookings.Policy{NeedsApproval: after.ApprovalRequired, MaxLength: maxLength, MaxHoursPerWeek: after.HoursPerWeek})
	detail := map[string]any{}
	for _, f := range []struct {
		name     string
		from, to any
	}{
		{"approval_required", before.ApprovalRequired, after.ApprovalRequired},
		{"max_booking_hours", before.MaxBookingHours, after.MaxBookingHours},
		{"hours_per_week", before.HoursPerWeek, after.HoursPerWeek},
		{"default_qos", before.DefaultQoS, after.DefaultQoS},
	} {
		if f.from != f.to {
			detail[f.name] = map[string]any{"from": f.from, "to": f.to}
		}
	}
	if err := a.cfg.People.Record(r.Ctx, actorOf(r), "settings.update", "settings", detail); err != nil {
		return AdminSettings{}, err
	}
	return after, nil
}
