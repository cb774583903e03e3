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

// adminReservationsQuery documents GET /api/admin/reservations's query.
type adminReservationsQuery struct {
	State   string `form:"state" doc:"only these states, comma-separated (pending, approved, rejected, cancelled, ended)"`
	Current bool   `form:"current" doc:"true: only the bookings that have not ended"`
}

func (a *API) adminReservations(r *Request[NoBody]) (List[Booking], error) {
	if a.cfg.Bookings == nil {
		return List[Booking]{}, unavailable("bookings")
	}
	q := bookings.ListQuery{All: true, Current: r.Gin.Query("current") == "true"}
	if st := r.Gin.Query("state"); st != "" {
		q.States = strings.Split(st, ",")
	}
	list, err := a.cfg.Bookings.List(r.Ctx, q)
	if err != nil {
		return List[Booking]{}, err
	}
	out := make([]Booking, 0, len(list))
	for _, b := range list {
		out = append(out, BookingOf(b))
	}
	return ListOf(out), nil
}

// adminDecide approves or rejects the booking in the path with the decision pick chooses.
func (a *API) adminDecide(pick func(*bookings.Service) func(context.Context, string) (bookings.Booking, error)) func(*Request[NoBody]) (Booking, error) {
	return func(r *Request[NoBody]) (Booking, error) {
		if a.cfg.Bookings == nil {
			return Booking{}, unavailable("bookings")
		}
		b, err := pick(a.cfg.Bookings)(r.Ctx, r.Param("id"))
		if err != nil {
			return Booking{}, err
		}
		return BookingOf(b), nil
	}
}
