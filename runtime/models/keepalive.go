package models

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
)

// ParseKeepAlive reads a keep_alive value in Ollama's syntax: a duration string ("5m", "1h30m",
// "0", "-1"), a bare number string or a JSON number of seconds (negative: keep the model loaded
// forever), or absent/null (nil: the server's default). Anything else wraps llm.ErrInvalidInput.
func ParseKeepAlive(raw json.RawMessage) (*time.Duration, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	bad := func() (*time.Duration, error) {
		return nil, fmt.Errorf("%w: keep_alive %s is not a duration; send seconds (300), a duration (\"5m\"), 0 to unload at once or -1 to keep the model loaded", llm.ErrInvalidInput, raw)
	}
	var d time.Duration
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return bad()
		}
		if secs, err := strconv.ParseFloat(s, 64); err == nil {
			if math.IsNaN(secs) || math.IsInf(secs, 0) {
				return bad()
			}
			d = seconds(secs)
		} else if d, err = time.ParseDuration(s); err != nil {
			return bad()
		}
	default:
		secs, err := strconv.ParseFloat(string(raw), 64)
		if err != nil || math.IsNaN(secs) || math.IsInf(secs, 0) {
			return bad()
		}
		d = seconds(secs)
	}
	if d < 0 {
		d = -1
	}
	return &d, nil
}

// seconds converts without overflowing: anything beyond ~292 years is "forever".
func seconds(s float64) time.Duration {
	if s < 0 || s*float64(time.Second) > math.MaxInt64 {
		return -1
	}
	return time.Duration(s * float64(time.Second))
}
