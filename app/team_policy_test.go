package app

import (
	"errors"
	"math"
	"testing"
	"time"
)

// TestBookingPolicyFlags: a booking flag that would silently mean no limit (a negative
// length, negative, NaN or overflowing hours) is a usage error; 0 (no limit) and real values
// are taken.
func TestBookingPolicyFlags(t *testing.T) {
	for _, bad := range []Config{
		{Team: true, BookingMaxLength: -time.Hour},
		{Team: true, BookingHoursPerWeek: -1},
		{Team: true, BookingHoursPerWeek: math.NaN()},
		{Team: true, BookingHoursPerWeek: 3e6}, // 3e6 h overflows a time.Duration: a negative budget, none
		{Team: true, BookingHoursPerWeek: math.Inf(1)},
	} {
		var ue *UsageError
		if err := checkBookingPolicy(bad); !errors.As(err, &ue) {
			t.Errorf("max length %s, hours %g: %v, want a usage error", bad.BookingMaxLength, bad.BookingHoursPerWeek, err)
		}
	}
	for _, good := range []Config{{Team: true}, {Team: true, BookingMaxLength: 8 * time.Hour, BookingHoursPerWeek: 40}, {}} {
		if err := checkBookingPolicy(good); err != nil {
			t.Errorf("%+v: %v", good.BookingHoursPerWeek, err)
		}
	}
	if d := time.Duration(maxBookingHoursPerWeek * float64(time.Hour)); d <= 0 {
		t.Fatalf("the largest hours allowed overflow: %v", d)
	}
}
