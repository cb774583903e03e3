package web

import (
	"context"
	"net/http"
	"strings"

	"github.com/superfluid/superfluid/server/bookings"
)

// The admin's reservations: everyone's bookings, approve and reject, as /v1/admin/bookings
// serves them (server/bookings_routes.go) over the same bookings.Service, which audits each
// decision.
func (a *API) adminBookingRoutes() {
	Handle(a, http.MethodGet, "/api/admin/reservations", Meta{Summary: "Everyone's bookings, by start", Tag: "admin reservations",
		Access: Admin, Query: adminReservationsQuery{}}, a.adminReservations)
	Handle(a, http.MethodPost, "/api/admin/reservations/:id/approve", adminMeta("reservations", "Approve a pending booking"),
		a.adminDecide(func(s *bookings.Service) func(context.Context, string) (bookings.Booking, error) { return s.Approve }))
	Handle(a, http.MethodPost, "/api/admin/reservations/:id/reject", adminMeta("reservations", "Reject a pending booking"),
		a.adminDecide(func(s *bookings.Service) func(context.Context, string) (bookings.Booking, error) { return s.Reject }))
}

// AdminBooking is a booking on the wire, as /v1/admin/bookings shows one (times in Unix
// seconds; lane, device, model and decided_by null when empty, decided_at until decided).
type AdminBooking struct {
	Object    string  `json:"object" enum:"booking"`
	ID        string  `json:"id"`
	PersonID  string  `json:"person_id"`
	Person    string  `json:"person"`
	Lane      *string `json:"lane"`
	Device    *string `json:"device"`
	Model     *string `json:"model"`
	Start     int64   `json:"start"`
	End       int64   `json:"end"`
	State     string  `json:"state" enum:"pending,approved,rejected,cancelled,ended"`
	DecidedBy *string `json:"decided_by"`
	DecidedAt *int64  `json:"decided_at"`
	CreatedAt int64   `json:"created_at"`
}

func adminBookingOf(b bookings.Booking) AdminBooking {
	return AdminBooking{Object: "booking", ID: b.ID, PersonID: b.PersonID, Person: b.PersonName, Lane: orNull(b.Lane),
		Device: orNull(b.Device), Model: orNull(b.Model), Start: b.Start.Unix(), End: b.End.Unix(), State: b.State,
		DecidedBy: orNull(b.DecidedBy), DecidedAt: unixOrNil(b.DecidedAt), CreatedAt: b.CreatedAt.Unix()}
}

// adminReservationsQuery documents GET /api/admin/reservations's query.
type adminReservationsQuery struct {
	State   string `form:"state" doc:"only these states, comma-separated (pending, approved, rejected, cancelled, ended)"`
	Current bool   `form:"current" doc:"true: only the bookings that have not ended"`
}

func (a *API) adminReservations(r *Request[NoBody]) (adminList[AdminBooking], error) {
	if a.cfg.Bookings == nil {
		return adminList[AdminBooking]{}, unavailable("bookings")
	}
	q := bookings.ListQuery{All: true, Current: r.Gin.Query("current") == "true"}
	if st := r.Gin.Query("state"); st != "" {
		q.States = strings.Split(st, ",")
	}
	list, err := a.cfg.Bookings.List(r.Ctx, q)
	if err != nil {
		return adminList[AdminBooking]{}, err
	}
	out := make([]AdminBooking, 0, len(list))
	for _, b := range list {
		out = append(out, adminBookingOf(b))
	}
	return listOf(out), nil
}

// adminDecide approves or rejects the booking in the path with the decision pick chooses.
func (a *API) adminDecide(pick func(*bookings.Service) func(context.Context, string) (bookings.Booking, error)) func(*Request[NoBody]) (AdminBooking, error) {
	return func(r *Request[NoBody]) (AdminBooking, error) {
		if a.cfg.Bookings == nil {
			return AdminBooking{}, unavailable("bookings")
		}
		b, err := pick(a.cfg.Bookings)(r.Ctx, r.Param("id"))
		if err != nil {
			return AdminBooking{}, err
		}
		return adminBookingOf(b), nil
	}
}
