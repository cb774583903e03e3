package core

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/store"
)

// Usage accounting: every request record carries the key that made it (auth.Identity in the
// request's context, or the owner of the batch a line belongs to), and Usage sums the records
// by key, model and day.

// ErrOtherKeysUsage refuses a key that is not an admin the usage of another key.
var ErrOtherKeysUsage = errors.New("only an admin key may read other keys' usage")

// ownerKey carries, in a batch line's context, the key that created the batch.
type ownerKey struct{}

type owner struct{ id, name string }

// personOf is the person a request record is attributed to (team mode): the person whose
// key made the request; "" otherwise.
func personOf(ctx context.Context) (id, name string) {
	if who, ok := auth.FromContext(ctx); ok && who.Person != nil {
		return who.Person.ID, who.Person.Name
	}
	return "", ""
}

// keyOf is the key a request record is attributed to: the request's identity, else the owner
// of the batch the line belongs to; "" without keys.
func keyOf(ctx context.Context) (id, name string) {
	if who, ok := auth.FromContext(ctx); ok {
		return who.ID, who.Name
	}
	if o, ok := ctx.Value(ownerKey{}).(owner); ok {
		return o.id, o.name
	}
	return "", ""
}

// TokenMeter counts the tokens (prompt and completion) of the requests made with a context
// that carries it: the HTTP layer charges them to the key's tokens-per-minute limit and to
// team mode's token quotas. They are counted when a request's record is made, before a
// stream's last event is sent.
type TokenMeter struct{ n, cached atomic.Int64 }

// Tokens is the count so far.
func (m *TokenMeter) Tokens() int64 { return m.n.Load() }

// Cached is how many of the prompt tokens counted in Tokens came from the prefix cache.
func (m *TokenMeter) Cached() int64 { return m.cached.Load() }

type meterKey struct{}

// WithTokenMeter returns ctx carrying m.
func WithTokenMeter(ctx context.Context, m *TokenMeter) context.Context {
	return context.WithValue(ctx, meterKey{}, m)
}

func meterTokens(ctx context.Context, res *Result) {
	m, _ := ctx.Value(meterKey{}).(*TokenMeter)
	if m == nil || res == nil {
		return
	}
	u := res.Usage()
	m.cached.Add(int64(u.CachedTokens))
	m.n.Add(int64(u.PromptTokens + u.CompletionTokens))
}

// Usage groupings.
const (
	GroupKey    = "key"
	GroupModel  = "model"
	GroupDay    = "day"
	GroupPerson = "person" // team mode: the person whose key made the requests
	GroupLane   = "lane"   // team mode: the lane that served the requests (and its engine kind)
)

// UsageQuery is what a usage report sums.
type UsageQuery struct {
	// From and To are the first and last UTC days included; zero is open.
	From, To time.Time
	// Key keeps one key's requests (its name or id); "" keeps every key the caller may see.
	Key string
	// Model keeps one model's requests ("" for all).
	Model string
	// GroupBy lists GroupKey, GroupModel, GroupDay, GroupPerson and GroupLane, in any order;
	// empty sums everything.
	GroupBy []string
}

// UsageRow is one group of a usage report; the fields not grouped by are "". LaneName and
// Engine (the lane's engine kind) come with GroupLane.
type UsageRow struct {
	KeyID, KeyName, Model, Day, PersonID, PersonName    string
	LaneName, Engine                                    string
	Requests, Errors                                    int64
	PromptTokens, CachedTokens, CompletionTokens, Total int64
	Duration                                            time.Duration
}

// ParseUsageDate reads a day, YYYY-MM-DD (UTC); "" is the zero time.
func ParseUsageDate(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: a date is YYYY-MM-DD, got %q", llm.ErrInvalidInput, s)
	}
	return t, nil
}

// ParseGroupBy reads a comma-separated list of groupings ("key,model,day").
func ParseGroupBy(s string) ([]string, error) {
	var out []string
	for _, g := range strings.Split(s, ",") {
		g = strings.TrimSpace(strings.ToLower(g))
		switch g {
		case "":
		case GroupKey, GroupModel, GroupDay, GroupPerson, GroupLane:
			if !slices.Contains(out, g) {
				out = append(out, g)
			}
		default:
			return nil, fmt.Errorf("%w: group_by takes key, model and day (and person and lane, in team mode), comma-separated; got %q", llm.ErrInvalidInput, g)
		}
	}
	return out, nil
}

// Usage sums the request records by key, model and day. A request whose key is not an admin
// sees its own key's usage only (and is refused another's with ErrOtherKeysUsage); an admin
// key, or any caller when no keys are configured, sees every key's.
func (s *Service) Usage(ctx context.Context, q UsageQuery) ([]UsageRow, error) {
	if s.store == nil {
		return []UsageRow{}, nil
	}
	if !q.From.IsZero() && !q.To.IsZero() && q.To.Before(q.From) {
		return nil, fmt.Errorf("%w: the end date %s is before the start date %s", llm.ErrInvalidInput,
			q.To.Format(time.DateOnly), q.From.Format(time.DateOnly))
	}
	sq := store.UsageQuery{From: q.From, Model: q.Model}
	if !q.To.IsZero() {
		sq.To = q.To.AddDate(0, 0, 1) // the last day is included
	}
	if q.Key != "" {
		sq.Key = &q.Key
	}
	if who, ok := auth.FromContext(ctx); ok && !who.Admin {
		if q.Key != "" && q.Key != who.ID && q.Key != who.Name {
			return nil, fmt.Errorf("%w: this key is %q", ErrOtherKeysUsage, who.Name)
		}
		if who.Person != nil {
			sq.PersonID = who.Person.ID // a person sees all of their own keys' usage
		} else {
			sq.KeyID = who.ID
		}
	}
	sq.ByKey, sq.ByModel, sq.ByDay = slices.Contains(q.GroupBy, GroupKey), slices.Contains(q.GroupBy, GroupModel), slices.Contains(q.GroupBy, GroupDay)
	sq.ByPerson, sq.ByLane = slices.Contains(q.GroupBy, GroupPerson), slices.Contains(q.GroupBy, GroupLane)
	rows, err := s.store.Usage(ctx, sq)
	if err != nil {
		return nil, err
	}
	out := make([]UsageRow, len(rows))
	for i, r := range rows {
		out[i] = UsageRow{KeyID: r.KeyID, KeyName: r.KeyName, Model: r.Model, Day: r.Day, PersonID: r.PersonID, PersonName: r.PersonName,
			LaneName: r.LaneName, Engine: r.Engine, Requests: r.Requests, Errors: r.Errors,
			PromptTokens: r.PromptTokens, CachedTokens: r.CachedTokens, CompletionTokens: r.CompletionTokens,
			Total: r.PromptTokens + r.CompletionTokens, Duration: r.Duration}
	}
	return out, nil
}
