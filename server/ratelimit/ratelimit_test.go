package ratelimit

import (
	"fmt"
	"testing"
	"time"
)

func TestBuckets(t *testing.T) {
	clock := time.Unix(1000, 0)
	b := New(3, 2)
	b.now = func() time.Time { return clock }
	for i := range 3 {
		if ok, _ := b.Take("a"); !ok {
			t.Fatalf("take %d of the burst refused", i)
		}
	}
	ok, wait := b.Take("a")
	if ok || wait != 500*time.Millisecond {
		t.Fatalf("over the burst: ok=%v wait=%v; want refused, 500ms", ok, wait)
	}
	if ok, _ := b.Take("b"); !ok {
		t.Fatal("another client shares the bucket")
	}
	clock = clock.Add(500 * time.Millisecond)
	if ok, _ := b.Take("a"); !ok {
		t.Fatal("a token did not come back at the rate")
	}
	if ok, _ := b.Take("a"); ok {
		t.Fatal("more than one token came back")
	}
	clock = clock.Add(time.Hour)
	for i := range 3 {
		if ok, _ := b.Take("a"); !ok {
			t.Fatalf("refill capped wrong: take %d refused", i)
		}
	}
	if ok, _ := b.Take("a"); ok {
		t.Fatal("refill went past the burst")
	}
}

func TestDisabledAndEviction(t *testing.T) {
	if ok, _ := New(0, 0).Take("x"); !ok {
		t.Fatal("burst 0 must disable the limit")
	}
	clock := time.Unix(0, 0)
	b := New(1, 1)
	b.now = func() time.Time { return clock }
	for i := range 2000 {
		b.Take(fmt.Sprint(i))
	}
	clock = clock.Add(time.Minute)
	b.Take("new")
	if n := len(b.buckets); n > 2 {
		t.Fatalf("%d buckets kept after they all refilled", n)
	}
}

// TestBoundedWithoutRefill: with no refill (a rate of 0) no bucket ever fills up again, yet
// the map stays within MaxBuckets however many clients come; the clients forgotten are the
// least recently seen, so a client being limited right now stays limited.
func TestBoundedWithoutRefill(t *testing.T) {
	clock := time.Unix(0, 0)
	b := New(1, 0)
	b.now = func() time.Time { clock = clock.Add(time.Millisecond); return clock }
	b.Take("busy")
	for i := range 3 * MaxBuckets {
		if ok, _ := b.Take(fmt.Sprint(i)); !ok {
			t.Fatalf("client %d refused its first request", i)
		}
		if i%1000 == 0 {
			if ok, _ := b.Take("busy"); ok {
				t.Fatalf("after %d other clients, a client over its limit got a fresh bucket", i)
			}
		}
		if n := len(b.buckets); n > MaxBuckets {
			t.Fatalf("%d buckets kept after %d clients; want at most %d", n, i+2, MaxBuckets)
		}
	}
}

// TestBoundedWhileLimiting: with a slow refill, many clients limited at once still fit.
func TestBoundedWhileLimiting(t *testing.T) {
	clock := time.Unix(0, 0)
	b := New(2, 0.001)
	b.now = func() time.Time { clock = clock.Add(time.Microsecond); return clock }
	for i := range 2 * MaxBuckets {
		key := fmt.Sprint(i)
		b.Take(key)
		b.Take(key)
		if ok, _ := b.Take(key); ok {
			t.Fatalf("client %d went past its burst", i)
		}
	}
	if n := len(b.buckets); n > MaxBuckets {
		t.Fatalf("%d buckets kept; want at most %d", n, MaxBuckets)
	}
}
