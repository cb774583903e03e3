package ratelimit

import (
	"fmt"
	"testing"
	"time"
)

// TestLimiters: a minute's worth at once, then refusals with the wait until the next request,
// which is then accepted; a refusal spends nothing and undo gives a request back.
func TestLimiters(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	l := NewLimiters(60) // one a second, 60 at once
	for i := range 60 {
		if ok, _, _ := l.Take("a", now); !ok {
			t.Fatalf("request %d refused", i+1)
		}
	}
	for range 3 { // refusals take nothing: the wait stays one second
		ok, retry, _ := l.Take("a", now)
		if ok || retry != time.Second {
			t.Fatalf("over the limit: ok %v, retry after %v; want a refusal for 1s", ok, retry)
		}
	}
	if ok, _, _ := l.Take("b", now); !ok {
		t.Fatal("another client is limited by the first")
	}
	now = now.Add(time.Second)
	ok, _, undo := l.Take("a", now)
	if !ok {
		t.Fatal("no recovery after Retry-After")
	}
	undo()
	if ok, _, _ := l.Take("a", now); !ok {
		t.Fatal("undo did not give the request back")
	}
	if NewLimiters(0) != nil {
		t.Fatal("a limit of 0 is no limit")
	}
	var off *Limiters
	if ok, _, _ := off.Take("a", now); !ok || off.Len() != 0 {
		t.Fatal("no limit refused a request")
	}
}

// TestLimitersBounded: any number of clients leave at most max limiters behind; refilled ones
// go first, so a client being limited keeps its limiter while idle ones are dropped.
func TestLimitersBounded(t *testing.T) {
	tests := []struct {
		name    string
		clients int
		max     int
	}{
		{"below the bound", 100, 2048},
		{"many more clients than the bound", 5000, 1024},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Unix(1_000_000, 0)
			l := NewLimiters(60)
			l.max = tt.max
			// The limited client: its minute's 60 requests spent. The others send one each,
			// 10 ms apart, so that each has refilled a second later.
			for range 60 {
				l.Take("hot", now)
			}
			for i := range tt.clients {
				now = now.Add(10 * time.Millisecond)
				if ok, _, _ := l.Take(fmt.Sprintf("client-%d", i), now); !ok {
					t.Fatalf("client %d refused", i)
				}
				if n := l.Len(); n > tt.max {
					t.Fatalf("%d limiters after %d clients, bound %d", n, i+1, tt.max)
				}
			}
			if _, kept := l.m["hot"]; !kept {
				t.Fatal("the limited client's limiter was dropped")
			}
		})
	}
}
