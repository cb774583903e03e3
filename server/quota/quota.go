// Package quota is team mode's token budgets: what one person, and one key, may spend in a UTC
// day and a UTC month, enforced at admission from the request records in SQLite.
//
// What a request costs is its prompt tokens not served from the prefix cache, plus its
// completion tokens, plus its cached prompt tokens times Policy.CachedFraction (a prefix the
// cache served cost no prefill; 0.1 by default, the discount the large hosted APIs give).
// Days and months are UTC; a quota resets at the next midnight UTC, or the first of the next
// month. A request counts in the day and month it arrived in.
//
// The rule Admit implements, exactly: a request is admitted when, for each of its owners (its
// person, its key) and each window (day, month) with a quota,
//
//	spent (committed records) + held (requests admitted and not yet committed) < quota
//
// and is refused with 429 quota_exceeded otherwise. Each admitted request holds, until its
// record is committed to SQLite, max(1, its cost so far): 1 while it runs (the least a request
// costs), its whole cost once it has ended (the meter is read when its record is made, before a
// stream's last event reaches the client). Admissions are serialized, so
//
//   - a request that has ended counts at once for the next admission: the sum is never stale;
//   - an admitted request runs to its end, a stream is never cut; the next request is refused;
//   - with R tokens left, at most R requests are in flight at once, and the quota is overrun by
//     at most what those in flight spend beyond the one token each holds.
//
// A request's cost counts twice for the instant between its record's commit and its hold's
// release (refusing, never admitting, too much). A record the store drops (its queue full) is
// never counted.
package quota

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/store"
)

// DefaultCachedFraction is what a cached prompt token costs when the policy says nothing.
const DefaultCachedFraction = 0.1

// ErrInvalid is a quota that is not a whole number of tokens, 0 or more.
var ErrInvalid = errors.New("invalid quota")

// Policy is the server-wide part of the quotas (serve's flags).
type Policy struct {
	// DailyTokens and MonthlyTokens are a person's quotas when they have none of their own
	// (--quota-daily-tokens, --quota-monthly-tokens); 0 is none. Keys have no default.
	DailyTokens, MonthlyTokens int64
	// CachedFraction is what one cached prompt token costs (--quota-cached-fraction), 0 to 1.
	CachedFraction float64
}

// Check refuses a negative quota or a fraction outside 0 to 1.
func (p Policy) Check() error {
	if p.DailyTokens < 0 || p.MonthlyTokens < 0 {
		return fmt.Errorf("%w: a quota is a number of tokens, 0 (none) or more", ErrInvalid)
	}
	if p.CachedFraction < 0 || p.CachedFraction > 1 || math.IsNaN(p.CachedFraction) {
		return fmt.Errorf("%w: the cached fraction is between 0 and 1, got %v", ErrInvalid, p.CachedFraction)
	}
	return nil
}

// Cost is what tokens cost under the policy: uncached ones fully, cached ones at the fraction
// (rounded to the nearest token).
func (p Policy) Cost(s store.TokenSpend) int64 {
	return s.Uncached + int64(math.Round(float64(s.Cached)*p.CachedFraction))
}

// Meter is what Admit reads a running request's tokens from (core.TokenMeter): its prompt and
// completion tokens, and how many of the prompt tokens were cached.
type Meter interface {
	Tokens() int64
	Cached() int64
}

// Config configures a Service.
type Config struct {
	Store  *store.Store
	Policy Policy
	// Now is the clock; nil is time.Now (tests move it).
	Now func() time.Time
}

// Service enforces and reports the quotas of one database.
type Service struct {
	st     *store.Store
	policy Policy
	now    func() time.Time

	mu   sync.Mutex // serializes admissions, and guards held
	held map[Owner]map[*hold]struct{}
	// settling counts the ended requests' holds waiting for their records' commit.
	settling sync.WaitGroup
}

// Owner is whose quota: a person or a key, by id.
type Owner struct {
	Kind string // store.QuotaPerson or store.QuotaKey
	ID   string
}

type hold struct {
	meter  Meter
	policy Policy
}

// cost is what the hold counts for: at least one token.
func (h *hold) cost() int64 {
	if h.meter == nil {
		return 1
	}
	n, cached := h.meter.Tokens(), h.meter.Cached()
	return max(1, h.policy.Cost(store.TokenSpend{Uncached: n - cached, Cached: cached}))
}

// New returns the Service over cfg.Store; cfg.Policy must pass Check.
func New(cfg Config) *Service {
	s := &Service{st: cfg.Store, policy: cfg.Policy, now: cfg.Now, held: map[Owner]map[*hold]struct{}{}}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// Policy is the server-wide part of the quotas.
func (s *Service) Policy() Policy { return s.policy }

// Limits are an owner's quotas in force; 0 is none.
type Limits struct{ Daily, Monthly int64 }

// LimitsOf are owner's quotas: its own, else (a person) the policy's.
func (s *Service) LimitsOf(ctx context.Context, o Owner) (Limits, error) {
	row, err := s.st.TokenQuotaOf(ctx, o.Kind, o.ID)
	if err != nil {
		return Limits{}, err
	}
	var l Limits
	if o.Kind == store.QuotaPerson {
		l = Limits{s.policy.DailyTokens, s.policy.MonthlyTokens}
	}
	if row.Daily != nil {
		l.Daily = *row.Daily
	}
	if row.Monthly != nil {
		l.Monthly = *row.Monthly
	}
	return l, nil
}

// Window is one quota's state.
type Window struct {
	// Limit is the quota; 0 is none.
	Limit int64
	// Used is what was spent in the window (and is held by requests in flight).
	Used int64
	// ResetsAt is when the window ends.
	ResetsAt time.Time
}

// Remaining is what is left of the quota (never below 0); -1 without one.
func (w Window) Remaining() int64 {
	if w.Limit == 0 {
		return -1
	}
	return max(0, w.Limit-w.Used)
}

// exceeded reports whether the window has a quota and nothing is left of it.
func (w Window) exceeded() bool { return w.Limit > 0 && w.Used >= w.Limit }

// Status is an owner's day and month.
type Status struct{ Daily, Monthly Window }

// DayStart is the start of t's UTC day; MonthStart of its UTC month.
func DayStart(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// MonthStart is the start of t's UTC month.
func MonthStart(t time.Time) time.Time {
	y, m, _ := t.UTC().Date()
	return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
}

// StatusOf is owner's quotas and what is spent of them now, requests in flight included.
func (s *Service) StatusOf(ctx context.Context, o Owner) (Status, error) {
	l, err := s.LimitsOf(ctx, o)
	if err != nil {
		return Status{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status(ctx, o, l, s.now())
}

// status sums owner's windows at now; s.mu is held.
func (s *Service) status(ctx context.Context, o Owner, l Limits, now time.Time) (Status, error) {
	day, month := DayStart(now), MonthStart(now)
	d, m, err := s.st.SpentTokens(ctx, o.Kind, o.ID, day, month)
	if err != nil {
		return Status{}, err
	}
	var held int64
	for h := range s.held[o] {
		held += h.cost()
	}
	return Status{
		Daily:   Window{Limit: l.Daily, Used: s.policy.Cost(d) + held, ResetsAt: day.AddDate(0, 0, 1)},
		Monthly: Window{Limit: l.Monthly, Used: s.policy.Cost(m) + held, ResetsAt: month.AddDate(0, 1, 0)},
	}, nil
}

// OwnersOf are the owners a request of id is charged to: its person (if any), then its key.
func OwnersOf(id *auth.Identity) []Owner {
	var out []Owner
	if id.Person != nil {
		out = append(out, Owner{store.QuotaPerson, id.Person.ID})
	}
	return append(out, Owner{store.QuotaKey, id.ID})
}

// Admit admits a request of id whose tokens meter counts, or refuses it with a 429
// quota_exceeded llm.StatusError (Retry-After: when the last of its exhausted quotas resets).
// An admitted request must call done when it has ended (after its record is made): its hold
// is released once its record is committed. See the package doc for the rule. A request none
// of whose owners has a quota holds nothing (a quota set while it runs does not see it).
func (s *Service) Admit(ctx context.Context, id *auth.Identity, meter Meter) (done func(), err error) {
	owners := OwnersOf(id)
	limits := make([]Limits, len(owners))
	for i, o := range owners {
		if limits[i], err = s.LimitsOf(ctx, o); err != nil {
			return nil, err
		}
	}
	if !slices.ContainsFunc(limits, func(l Limits) bool { return l != Limits{} }) {
		return func() {}, nil // nobody to hold tokens for: no lock, no wait for the record
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var refusal *llm.StatusError
	for i, o := range owners {
		if limits[i] == (Limits{}) {
			continue
		}
		st, err := s.status(ctx, o, limits[i], now)
		if err != nil {
			return nil, err
		}
		for _, w := range []struct {
			Window
			per string
		}{{st.Daily, "a day"}, {st.Monthly, "a month"}} {
			if w.exceeded() && (refusal == nil || w.ResetsAt.Sub(now) > refusal.RetryAfter) {
				refusal = &llm.StatusError{Status: http.StatusTooManyRequests, Code: "quota_exceeded", RetryAfter: w.ResetsAt.Sub(now),
					Message: fmt.Sprintf("token quota used up: %s may use %s tokens %s and has used %s; it resets at %s (in %s)",
						whose(id, o), humanize.Comma(w.Limit), w.per, humanize.Comma(w.Used),
						w.ResetsAt.Format("2006-01-02 15:04 MST"), w.ResetsAt.Sub(now).Round(time.Second))}
			}
		}
	}
	if refusal != nil {
		return nil, refusal
	}
	h := &hold{meter: meter, policy: s.policy}
	for _, o := range owners {
		if s.held[o] == nil {
			s.held[o] = map[*hold]struct{}{}
		}
		s.held[o][h] = struct{}{}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			s.settling.Add(1)
			go s.settle(h, owners)
		})
	}, nil
}

// whose names an owner in a refusal.
func whose(id *auth.Identity, o Owner) string {
	if o.Kind == store.QuotaPerson {
		return id.Person.Name
	}
	return fmt.Sprintf("the API key %q", id.Name)
}

// settleTimeout bounds the wait for a record's commit; past it the hold goes anyway.
const settleTimeout = 30 * time.Second

// settle releases h once the records queued so far (h's among them) are committed.
func (s *Service) settle(h *hold, owners []Owner) {
	defer s.settling.Done()
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	if err := s.st.Flush(ctx); err != nil {
		slog.Warn("a request's tokens were released from its quota hold before its record was committed", "err", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range owners {
		delete(s.held[o], h)
		if len(s.held[o]) == 0 {
			delete(s.held, o)
		}
	}
}

// Settled waits until the holds of the requests that called done are released (tests).
func (s *Service) Settled() { s.settling.Wait() }
