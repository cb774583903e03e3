package app

import (
	"fmt"
	"math"
)

// maxBookingHoursPerWeek is the largest --booking-hours-per-week a time.Duration holds with
// room (a week has 168); beyond it the budget overflowed to a negative one, which is none.
const maxBookingHoursPerWeek = 1e6

// checkBookingPolicy refuses team mode's booking flags that would silently mean no limit:
// a negative length, or negative, NaN or overflowing hours (the bookings take a budget of 0
// or less as none).
func checkBookingPolicy(cfg Config) error {
	if !cfg.Team {
		return nil
	}
	if cfg.BookingMaxLength < 0 {
		return &UsageError{fmt.Sprintf("--booking-max-length %s: give the longest booking (8h), or 0 for no limit", cfg.BookingMaxLength)}
	}
	if h := cfg.BookingHoursPerWeek; h < 0 || math.IsNaN(h) || h > maxBookingHoursPerWeek {
		return &UsageError{fmt.Sprintf("--booking-hours-per-week %g: give the hours one person may book per week (0 to %g), 0 for no limit", h, float64(maxBookingHoursPerWeek))}
	}
	return nil
}
