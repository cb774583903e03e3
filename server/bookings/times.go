package bookings

import (
	"fmt"
	"strings"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
)

// ParseTime reads a booking's start or end as the command line and the API take it: RFC 3339
// ("2026-06-01T09:00:00Z", "2026-06-01T11:00:00+02:00"), "now", or now plus a Go duration
// ("+2h", "+90m", "+1h30m"). Relative times are from now, for the start and the end alike.
func ParseTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return time.Time{}, fmt.Errorf("%w: empty time; give RFC 3339 (2026-06-01T09:00:00Z), \"now\" or \"+2h\"", llm.ErrInvalidInput)
	case strings.EqualFold(s, "now"):
		return now.UTC(), nil
	case strings.HasPrefix(s, "+"):
		d, err := time.ParseDuration(s[1:])
		if err != nil || d < 0 {
			return time.Time{}, fmt.Errorf("%w: time %q: after \"+\" give a duration such as 2h, 90m or 1h30m", llm.ErrInvalidInput, s)
		}
		return now.Add(d).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: time %q is not RFC 3339 (2026-06-01T09:00:00Z), \"now\" or \"+2h\"", llm.ErrInvalidInput, s)
	}
	return t.UTC(), nil
}
