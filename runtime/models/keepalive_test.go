package models

import (
	"errors"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
)

func TestParseKeepAlive(t *testing.T) {
	forever := time.Duration(-1)
	tests := []struct {
		raw  string
		want *time.Duration
	}{
		{``, nil}, {`null`, nil},
		{`"5m"`, ptr(5 * time.Minute)}, {`"1h30m"`, ptr(90 * time.Minute)}, {`"0"`, ptr(0)}, {`0`, ptr(0)},
		{`300`, ptr(300 * time.Second)}, {`1.5`, ptr(1500 * time.Millisecond)}, {`"-1"`, &forever}, {`-1`, &forever},
		{`"-5m"`, &forever}, {`1e300`, &forever}, {`"120"`, ptr(2 * time.Minute)},
	}
	for _, tt := range tests {
		got, err := ParseKeepAlive([]byte(tt.raw))
		if err != nil || (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
			t.Errorf("ParseKeepAlive(%s) = %v, %v; want %v", tt.raw, deref(got), err, deref(tt.want))
		}
	}
	for _, raw := range []string{`"banana"`, `true`, `{}`, `[]`, `"5 minutes"`, `NaN`, `"NaN"`, `"Inf"`, `"-Inf"`} {
		if _, err := ParseKeepAlive([]byte(raw)); !errors.Is(err, llm.ErrInvalidInput) {
			t.Errorf("ParseKeepAlive(%s): %v, want invalid input", raw, err)
		}
	}
}

func ptr(d time.Duration) *time.Duration { return &d }

func deref(d *time.Duration) any {
	if d == nil {
		return nil
	}
	return *d
}
