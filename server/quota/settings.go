package quota

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/superfluid/superfluid/server/store"
)

// Value is one field of a Change.
type Value struct {
	// Given reports whether the field changes at all.
	Given bool
	// Tokens is the new quota: nil is "not set" (a person: the server's default; a key:
	// none), 0 unlimited, N at most N tokens.
	Tokens *int64
}

// Change is what Set changes.
type Change struct{ Daily, Monthly Value }

// Tokens is a Value setting n tokens.
func Tokens(n int64) Value { return Value{Given: true, Tokens: &n} }

// Unset is a Value clearing the field.
func Unset() Value { return Value{Given: true} }

// ParseValue reads a quota as typed on a command line: a whole number of tokens, 0 or more
// (0: unlimited), or "default" (not set).
func ParseValue(s string) (Value, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "default") {
		return Unset(), nil
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 64)
	if err != nil || n < 0 {
		return Value{}, fmt.Errorf("%w: a quota is a whole number of tokens, 0 (unlimited) or more, or \"default\"; got %q", ErrInvalid, s)
	}
	return Tokens(n), nil
}

// Set changes owner's own quotas and returns them as they were and as they are.
func (s *Service) Set(ctx context.Context, o Owner, ch Change) (before, after store.TokenQuota, err error) {
	for _, v := range []Value{ch.Daily, ch.Monthly} {
		if v.Given && v.Tokens != nil && *v.Tokens < 0 {
			return before, after, fmt.Errorf("%w: a quota is a whole number of tokens, 0 (unlimited) or more, got %d", ErrInvalid, *v.Tokens)
		}
	}
	if before, err = s.st.TokenQuotaOf(ctx, o.Kind, o.ID); err != nil {
		return before, after, err
	}
	after = before
	after.UpdatedAt = s.now()
	if ch.Daily.Given {
		after.Daily = ch.Daily.Tokens
	}
	if ch.Monthly.Given {
		after.Monthly = ch.Monthly.Tokens
	}
	return before, after, s.st.PutTokenQuota(ctx, after)
}

// Detail describes a change of quotas for the audit log: each changed field's from and to
// (null: not set).
func Detail(before, after store.TokenQuota) map[string]any {
	d := map[string]any{}
	for _, f := range []struct {
		name     string
		from, to *int64
	}{{"daily_tokens", before.Daily, after.Daily}, {"monthly_tokens", before.Monthly, after.Monthly}} {
		if !sameTokens(f.from, f.to) {
			d[f.name] = map[string]any{"from": f.from, "to": f.to}
		}
	}
	return d
}

func sameTokens(a, b *int64) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// Settings are owner's own quota settings (both nil when none are stored).
func (s *Service) Settings(ctx context.Context, o Owner) (store.TokenQuota, error) {
	return s.st.TokenQuotaOf(ctx, o.Kind, o.ID)
}
