package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/bookings"
	"github.com/superfluid/superfluid/server/dialect"
	"github.com/superfluid/superfluid/server/reqbody"
)

// bookingRoutes serves team mode's bookings, in OpenAI's error shape (the router's table gives
// it these paths):
//
//	GET    /v1/bookings                      {"object": "list", "data": [booking...]}: the caller's own
//	                                         (?current=true: those not ended yet)
//	POST   /v1/bookings                      {"lane"?, "device"?, "model"?, "start", "end"} → 201 the booking
//	DELETE /v1/bookings/{id}                 cancel one of the caller's own (an admin: anyone's) → the booking
//	GET    /v1/admin/bookings                everyone's (?state=pending, ?current=true)
//	POST   /v1/admin/bookings/{id}/approve   → the booking
//	POST   /v1/admin/bookings/{id}/reject    → the booking
//
// start and end are RFC 3339 strings, "now", "+2h" (from now), or Unix seconds. A booking is
// {"object": "booking", "id", "person_id", "person", "lane", "device", "model", "start",
// "end", "state", "decided_by", "decided_at", "created_at"} with times in Unix seconds
// (decided_at null until decided) and lane, device, model and decided_by null when empty.
func bookingRoutes(r gin.IRouter, svc *bookings.Service) {
	h := bookingHandlers{svc}
	r.GET("/v1/bookings", h.wrap(false, h.list(false)))
	r.POST("/v1/bookings", h.wrap(false, h.book))
	r.DELETE("/v1/bookings/:id", h.wrap(false, h.cancel))
	r.GET("/v1/admin/bookings", h.wrap(true, h.list(true)))
	r.POST("/v1/admin/bookings/:id/approve", h.wrap(true, h.decide(svc.Approve)))
	r.POST("/v1/admin/bookings/:id/reject", h.wrap(true, h.decide(svc.Reject)))
}

type bookingHandlers struct{ svc *bookings.Service }

// wrap checks admin routes for an admin (the keys' admin flag, or this machine when there are
// no keys) and renders the handler's error in the shape of the path's dialect.
func (h bookingHandlers) wrap(admin bool, fn func(*gin.Context) error) gin.HandlerFunc {
	return func(c *gin.Context) {
		err := func() error {
			if ok, refusal := auth.Admin(c.Request); admin && !ok {
				return &dialect.Refusal{Status: http.StatusForbidden, Code: "admin_required", Message: refusal}
			}
			return fn(c)
		}()
		if err != nil {
			writeError(c, err)
		}
	}
}

// bookingObject is a booking on the wire.
type bookingObject struct {
	Object    string  `json:"object"`
	ID        string  `json:"id"`
	PersonID  string  `json:"person_id"`
	Person    string  `json:"person"`
	Lane      *string `json:"lane"`
	Device    *string `json:"device"`
	Model     *string `json:"model"`
	Start     int64   `json:"start"`
	End       int64   `json:"end"`
	State     string  `json:"state"`
	DecidedBy *string `json:"decided_by"`
	DecidedAt *int64  `json:"decided_at"`
	CreatedAt int64   `json:"created_at"`
}

func wireBooking(b bookings.Booking) bookingObject {
	orNull := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	o := bookingObject{Object: "booking", ID: b.ID, PersonID: b.PersonID, Person: b.PersonName, Lane: orNull(b.Lane),
		Device: orNull(b.Device), Model: orNull(b.Model), Start: b.Start.Unix(), End: b.End.Unix(), State: b.State,
		DecidedBy: orNull(b.DecidedBy), CreatedAt: b.CreatedAt.Unix()}
	if !b.DecidedAt.IsZero() {
		t := b.DecidedAt.Unix()
		o.DecidedAt = &t
	}
	return o
}

func (h bookingHandlers) list(all bool) func(*gin.Context) error {
	return func(c *gin.Context) error {
		q := bookings.ListQuery{All: all, Current: c.Query("current") == "true"}
		if st := c.Query("state"); st != "" {
			q.States = strings.Split(st, ",")
		}
		list, err := h.svc.List(c.Request.Context(), q)
		if err != nil {
			return err
		}
		data := make([]bookingObject, 0, len(list))
		for _, b := range list {
			data = append(data, wireBooking(b))
		}
		c.JSON(http.StatusOK, gin.H{"object": "list", "data": data})
		return nil
	}
}

// bookRequest is the body of POST /v1/bookings.
type bookRequest struct {
	Lane   string          `json:"lane"`
	Device string          `json:"device"`
	Model  string          `json:"model"`
	Start  json.RawMessage `json:"start"`
	End    json.RawMessage `json:"end"`
}

func (h bookingHandlers) book(c *gin.Context) error {
	data, err := reqbody.Read(c.Request)
	if err != nil {
		return &dialect.Refusal{Status: http.StatusBadRequest, Message: err.Error()}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var req bookRequest
	if err := dec.Decode(&req); err != nil {
		return &dialect.Refusal{Status: http.StatusBadRequest,
			Message: fmt.Sprintf("the body is not a booking (%v); send {\"lane\": \"...\" or \"device\": \"...\", \"model\"?, \"start\": \"2026-06-01T09:00:00Z\", \"end\": \"+2h\"}", err)}
	}
	now := time.Now()
	start, err := bookingTime("start", req.Start, now)
	if err != nil {
		return err
	}
	end, err := bookingTime("end", req.End, now)
	if err != nil {
		return err
	}
	b, err := h.svc.Book(c.Request.Context(), bookings.NewBooking{Lane: req.Lane, Device: req.Device, Model: req.Model, Start: start, End: end})
	if err != nil {
		return err
	}
	c.JSON(http.StatusCreated, wireBooking(b))
	return nil
}

// bookingTime reads a start or end: a string for bookings.ParseTime, or Unix seconds.
func bookingTime(param string, raw json.RawMessage, now time.Time) (time.Time, error) {
	var secs int64
	if err := json.Unmarshal(raw, &secs); err == nil {
		return time.Unix(secs, 0).UTC(), nil
	}
	var s string
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &s); err != nil {
			return time.Time{}, &dialect.Refusal{Status: http.StatusBadRequest, Param: param,
				Message: param + ": want an RFC 3339 string, \"now\", \"+2h\" or Unix seconds"}
		}
	}
	t, err := bookings.ParseTime(s, now)
	if err != nil {
		return time.Time{}, &dialect.Refusal{Status: http.StatusBadRequest, Param: param,
			Message: param + ": " + strings.TrimPrefix(err.Error(), llm.ErrInvalidInput.Error()+": ")}
	}
	return t, nil
}

func (h bookingHandlers) cancel(c *gin.Context) error {
	b, err := h.svc.Cancel(c.Request.Context(), c.Param("id"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, wireBooking(b))
	return nil
}

// decide approves or rejects the booking in the path, as fn says.
func (h bookingHandlers) decide(fn func(context.Context, string) (bookings.Booking, error)) func(*gin.Context) error {
	return func(c *gin.Context) error {
		b, err := fn(c.Request.Context(), c.Param("id"))
		if err != nil {
			return err
		}
		c.JSON(http.StatusOK, wireBooking(b))
		return nil
	}
}
