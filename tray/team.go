package tray

import "time"

// Team mode's lanes and bookings as the Server tab's Lanes and Bookings views show them. The
// desktop acts as this machine's admin (as the command line does): it may add, switch and
// remove lanes and approve, reject and cancel anyone's bookings.

// TeamLane is one of team mode's lanes: a named slot on a device serving one model through
// an engine. (Lane is something else: one parallel sequence of a loaded model.)
type TeamLane struct {
	ID, Name, Device string
	// Engine is local (the built-in worker), openai (a server at a URL) or command (a server
	// process superfluid supervises).
	Engine string
	// Model is the model the lane serves, or is switching to.
	Model string
	// Upstream is an openai engine's URL or a command engine's command line; "" for local.
	Upstream string
	// HasKey reports whether an upstream key is stored (the key itself is never shown).
	HasKey bool
	// State is serving (requests running), idle (ready, none running), switching (running
	// requests drain first), loading or failed.
	State string
	// Inflight is how many requests run on the lane now (while switching: those draining).
	Inflight int
	// Err is why the engine failed to start (it retries), while State is failed.
	Err string
}

// The lane states a TeamLane shows.
const (
	LaneServing   = "serving"
	LaneIdle      = "idle"
	LaneSwitching = "switching"
	LaneLoading   = "loading"
	LaneFailed    = "failed"
)

// NewTeamLane is what AddLane adds.
type NewTeamLane struct {
	Name, Device, Engine, Model string
	// URL is an openai engine's base URL; Command a command engine's command line, with
	// {model} and {port}.
	URL, Command string
	// UpstreamKey is sent to an openai engine; stored write-only.
	UpstreamKey string
}

// Booking is one booking of a lane (optionally with a model to load at its start) or of a
// whole device.
type Booking struct {
	ID string
	// Person is who booked.
	Person string
	// Lane is the booked lane's name; "" for a whole-device booking.
	Lane string
	// Device is the device held (for a lane booking the device the lane is on).
	Device, Model string
	Start, End    time.Time
	// State is pending, approved, rejected, cancelled or ended.
	State     string
	DecidedBy string
}

// The booking states.
const (
	BookingPending   = "pending"
	BookingApproved  = "approved"
	BookingRejected  = "rejected"
	BookingCancelled = "cancelled"
	BookingEnded     = "ended"
)

// NewBooking is what Book books: a lane (Lane, optionally Model) or a whole device (Device
// alone), from Start ("now", "+2h", RFC 3339 or "2006-01-02 15:04" in local time) for Length
// (a duration: "90m", "2h").
type NewBooking struct {
	Lane, Device, Model string
	Start, Length       string
}

// TeamController is what the desktop may do with team mode's lanes and bookings. Outside
// team mode Team reports false and the other methods fail.
type TeamController interface {
	// Team reports whether the server runs in team mode (started with --team).
	Team() bool
	// Lanes lists the lanes with their states; LaneDevices names the devices a lane may be
	// on ("remote" too, for an openai lane whose server is elsewhere).
	Lanes() ([]TeamLane, error)
	LaneDevices() []string
	// AddLane adds a lane and starts its engine.
	AddLane(l NewTeamLane) error
	// SwitchLane points a lane at another model: running requests finish first (draining).
	SwitchLane(lane, model string) error
	// RemoveLane drains a lane and removes it; a lane with a booking not ended yet is refused.
	RemoveLane(lane string) error
	// Bookings lists everyone's bookings not ended yet, by start.
	Bookings() ([]Booking, error)
	// Book books for this machine's admin.
	Book(b NewBooking) (Booking, error)
	ApproveBooking(id string) error
	RejectBooking(id string) error
	CancelBooking(id string) error
}
