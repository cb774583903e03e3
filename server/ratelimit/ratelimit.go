// Package ratelimit holds per-client token buckets (the fill-in-the-middle limit: a burst,
// refilled at a steady rate) and per-client request limiters (golang.org/x/time/rate: the
// per-address limit of every request), both in maps that stay bounded however many clients
// come.
package ratelimit

import (
	"slices"
	"sync"
	"time"
)

// MaxBuckets bounds how many clients' buckets are kept at once.
const MaxBuckets = 10_000

// minSweep is the map size below which full buckets are not looked for.
const minSweep = 1024

// Buckets is one token bucket per key (a client address).
type Buckets struct {
	burst, rate float64
	now         func() time.Time
	max         int // MaxBuckets; smaller in tests

	mu      sync.Mutex
	buckets map[string]*bucket
	swept   time.Time // when full buckets were last looked for
}

type bucket struct {
	tokens float64
	at     time.Time
}

// New returns buckets holding up to burst tokens, refilled at rate tokens per second. A burst
// of 0 or less disables the limit. A rate of 0 or less never refills (the command line
// refuses it); the buckets stay bounded either way.
func New(burst int, rate float64) *Buckets {
	return &Buckets{burst: float64(burst), rate: rate, now: time.Now, max: MaxBuckets,
		buckets: map[string]*bucket{}}
}

// Take spends one token of key's bucket. When the bucket is empty it reports false and how long
// until a token is back.
func (b *Buckets) Take(key string) (ok bool, retryAfter time.Duration) {
	if b == nil || b.burst <= 0 {
		return true, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	bk, found := b.buckets[key]
	if !found {
		b.makeRoom(now)
		bk = &bucket{tokens: b.burst, at: now}
		b.buckets[key] = bk
	}
	bk.tokens = min(b.burst, bk.tokens+now.Sub(bk.at).Seconds()*b.rate)
	bk.at = now
	if bk.tokens >= 1 {
		bk.tokens--
		return true, 0
	}
	if b.rate <= 0 {
		return false, time.Hour
	}
	return false, time.Duration((1 - bk.tokens) / b.rate * float64(time.Second))
}

// makeRoom keeps the map bounded before a new key joins it. Buckets that have refilled
// completely go first: they equal a new one. They are looked for once the map is large, at
// most once per refill time (the time an empty bucket takes to fill), since fewer could have
// filled up in between, and whenever the map is at its bound. If it still is (many clients
// being limited at once), the least recently seen eighth goes too: those clients get a fresh
// bucket when they come back.
func (b *Buckets) makeRoom(now time.Time) {
	n := len(b.buckets)
	if n < minSweep {
		return
	}
	if b.rate > 0 && (n >= b.max || now.Sub(b.swept).Seconds()*b.rate >= b.burst) { // without a rate nothing refills
		b.swept = now
		for key, bk := range b.buckets {
			if bk.tokens+now.Sub(bk.at).Seconds()*b.rate >= b.burst {
				delete(b.buckets, key)
			}
		}
	}
	if n = len(b.buckets); n >= b.max {
		keys := make([]string, 0, n)
		for key := range b.buckets {
			keys = append(keys, key)
		}
		slices.SortFunc(keys, func(x, y string) int { return b.buckets[x].at.Compare(b.buckets[y].at) })
		for _, key := range keys[:max(1, n/8)] {
			delete(b.buckets, key)
		}
	}
}
