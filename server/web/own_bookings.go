package web

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/bookings"
)

// Booking is a booking on the wire, as /v1/bookings shows one (times in Unix seconds; lane,
// device, model and decided_by null when empty, decided_at null until decided).
type Booking struct {
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

// BookingOf is b on the wire.
func BookingOf(b bookings.Booking) Booking {
	o := Booking{Object: "booking", ID: b.ID, PersonID: b.PersonID, Person: b.PersonName, Lane: orNull(b.Lane),
		Device: orNull(b.Device), Model: orNull(b.Model), Start: b.Start.Unix(), End: b.End.Unix(), State: b.State,
		DecidedBy: orNull(b.DecidedBy), CreatedAt: b.CreatedAt.Unix()}
	if !b.DecidedAt.IsZero() {
		t := b.DecidedAt.Unix()
		o.DecidedAt = &t
	}
	return o
}

func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// NewBooking is the body of POST /api/bookings (as POST /v1/bookings).
type NewBooking struct {
	Lane   string          `json:"lane" maxLength:"200" doc:"the lane's name or id (or book a whole device)"`
	Device string          `json:"device" maxLength:"200"`
	Model  string          `json:"model" maxLength:"500" doc:"the model the lane switches to for the booking"`
	Start  json.RawMessage `json:"start" required:"true" doc:"RFC 3339, \"now\", \"+2h\" (from now), or Unix seconds"`
	End    json.RawMessage `json:"end" required:"true" doc:"RFC 3339, \"now\", \"+2h\" (from now), or Unix seconds"`
}

// BookingsQuery is the query of GET /api/bookings.
type BookingsQuery struct {
	Current bool   `form:"current" doc:"only the bookings not ended yet"`
	State   string `form:"state" doc:"states, comma-separated"`
}

func (a *API) ownBookingRoutes() {
	if a.cfg.Bookings == nil {
		return
	}
	Handle(a, http.MethodGet, "/api/bookings", Meta{Summary: "Your bookings", Tag: "bookings", Access: SignedIn, Query: BookingsQuery{}},
		a.ownBookings)
	Handle(a, http.MethodPost, "/api/bookings", Meta{Summary: "Book a lane or a device", Tag: "bookings", Access: SignedIn, Status: http.StatusCreated},
		a.book)
	Handle(a, http.MethodPost, "/api/bookings/:id/cancel", Meta{Summary: "Cancel one of your bookings", Tag: "bookings", Access: SignedIn},
		func(r *Request[NoBody]) (Booking, error) {
			b, err := a.cfg.Bookings.Cancel(ownOnly(r.Ctx), r.Param("id")) // another's: 404, even for an admin
			return BookingOf(b), err
		})
}

func (a *API) ownBookings(r *Request[NoBody]) (List[Booking], error) {
	q := bookings.ListQuery{Current: r.Gin.Query("current") == "true"}
	if st := r.Gin.Query("state"); st != "" {
		q.States = strings.Split(st, ",")
	}
	list, err := a.cfg.Bookings.List(ownOnly(r.Ctx), q)
	if err != nil {
		return List[Booking]{}, err
	}
	out := make([]Booking, 0, len(list))
	for _, b := range list {
		out = append(out, BookingOf(b))
	}
	return ListOf(out), nil
}

func (a *API) book(r *Request[NewBooking]) (Booking, error) {
	if _, err := r.Caller.person(); err != nil {
		return Booking{}, err
	}
	now := a.cfg.Now()
	start, err := bookingTime("start", r.Body.Start, now)
	if err != nil {
		return Booking{}, err
	}
	end, err := bookingTime("end", r.Body.End, now)
	if err != nil {
		return Booking{}, err
	}
	b, err := a.cfg.Bookings.Book(r.Ctx, bookings.NewBooking{Lane: r.Body.Lane, Device: r.Body.Device, Model: r.Body.Model, Start: start, End: end})
	if err != nil {
		return Booking{}, err
	}
	return BookingOf(b), nil
}

// bookingTime reads a start or end: Unix seconds, or a string bookings.ParseTime reads.
func bookingTime(param string, raw json.RawMessage, now time.Time) (time.Time, error) {
	var secs int64
	if err := json.Unmarshal(raw, &secs); err == nil {
		return time.Unix(secs, 0).UTC(), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return time.Time{}, Errorf(http.StatusBadRequest, "invalid_body", param, "%s: want an RFC 3339 string, \"now\", \"+2h\" or Unix seconds", param)
	}
	t, err := bookings.ParseTime(s, now)
	if err != nil {
		return time.Time{}, Errorf(http.StatusBadRequest, "invalid_body", param, "%s: %s", param, strings.TrimPrefix(err.Error(), llm.ErrInvalidInput.Error()+": "))
	}
	return t, nil
}
