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
