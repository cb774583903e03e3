// Package ratelimit holds per-client token buckets (the fill-in-the-middle limit: a burst,
// refilled at a steady rate).
package ratelimit

import (
	"sync"
	"time"
)

// Buckets is one token bucket per key (a client address).
type Buckets struct {
	burst, rate float64
	now         func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// New returns buckets holding up to burst tokens, refilled at rate tokens per second. A burst
// of 0 or less disables the limit.
func New(burst int, rate float64) *Buckets {
	return &Buckets{burst: float64(burst), rate: rate, now: time.Now, buckets: map[string]*bucket{}}
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
		b.evictFull(now)
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

// evictFull forgets buckets that have refilled completely (they equal a new one), so the map
// does not grow with every client ever seen.
func (b *Buckets) evictFull(now time.Time) {
	if len(b.buckets) < 1024 {
		return
	}
	for key, bk := range b.buckets {
		if bk.tokens+now.Sub(bk.at).Seconds()*b.rate >= b.burst {
			delete(b.buckets, key)
		}
	}
}
