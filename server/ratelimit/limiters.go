package ratelimit

import (
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limiters is one golang.org/x/time/rate limiter per key (a client address): a number of
// requests per minute, of which a minute's worth may come at once. The map is bounded like
// Buckets': at most MaxBuckets keys, limiters that have refilled completely are dropped first
// (they equal a new one), then the least recently seen eighth.
type Limiters struct {
	limit rate.Limit
	burst int
	max   int // MaxBuckets; smaller in tests

	mu    sync.Mutex
	m     map[string]*limiter
	swept time.Time
}

type limiter struct {
	lim  *rate.Limiter
	seen time.Time
}

// NewLimiters returns limiters of perMinute requests a minute per key; 0 or less is no limit.
func NewLimiters(perMinute int) *Limiters {
	if perMinute <= 0 {
		return nil
	}
	return &Limiters{limit: rate.Limit(float64(perMinute) / 60), burst: perMinute, max: MaxBuckets, m: map[string]*limiter{}}
}

// Take spends one request of key's allowance at now. When none is left it reports false and
// how long until one is back, and spends nothing. undo gives the request back (a request
// refused by a later check consumes no budget).
func (l *Limiters) Take(key string, now time.Time) (ok bool, retryAfter time.Duration, undo func()) {
	r, ok, retryAfter := l.Reserve(key, now)
	if !ok {
		return false, retryAfter, nil
	}
	return true, 0, func() { r.CancelAt(now) }
}

// Reserve is Take without the closure: the reservation (nil without a limit) gives the request
// back with CancelAt(now).
func (l *Limiters) Reserve(key string, now time.Time) (r *rate.Reservation, ok bool, retryAfter time.Duration) {
	if l == nil {
		return nil, true, 0
	}
	l.mu.Lock()
	e, found := l.m[key]
	if !found {
		l.makeRoom(now)
		e = &limiter{lim: rate.NewLimiter(l.limit, l.burst)}
		l.m[key] = e
	}
	e.seen = now
	l.mu.Unlock()
	return Reserve(e.lim, now)
}

// Reserve takes one event from lim at now, without waiting: ok with the reservation (whose
// CancelAt(now) gives it back), or false with how long until one is available, taking
// nothing.
func Reserve(lim *rate.Limiter, now time.Time) (r *rate.Reservation, ok bool, retryAfter time.Duration) {
	r = lim.ReserveN(now, 1)
	if !r.OK() {
		return nil, false, time.Hour
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return nil, false, d
	}
	return r, true, 0
}

// Len is how many keys have a limiter.
func (l *Limiters) Len() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}

// makeRoom bounds the map before a new key joins it (see Buckets.makeRoom). l.mu is held.
func (l *Limiters) makeRoom(now time.Time) {
	n := len(l.m)
	if n < minSweep && n < l.max {
		return
	}
	refill := time.Duration(float64(l.burst) / float64(l.limit) * float64(time.Second))
	if n >= l.max || now.Sub(l.swept) >= refill {
		l.swept = now
		for key, e := range l.m {
			if e.lim.TokensAt(now) >= float64(l.burst) {
				delete(l.m, key)
			}
		}
	}
	if n = len(l.m); n >= l.max {
		keys := make([]string, 0, n)
		for key := range l.m {
			keys = append(keys, key)
		}
		slices.SortFunc(keys, func(x, y string) int { return l.m[x].seen.Compare(l.m[y].seen) })
		for _, key := range keys[:max(1, n/8)] {
			delete(l.m, key)
		}
	}
}

// PerMinute is the limit: requests a minute per key (0 for none).
func (l *Limiters) PerMinute() int {
	if l == nil {
		return 0
	}
	return l.burst
}
