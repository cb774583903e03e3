package core

import (
	"context"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
)

// TestRecordForwardedMeters: a forwarded request's tokens reach the key's meter as a routed
// one's do, its cached prompt tokens too (a quota charges those at its cached fraction).
func TestRecordForwardedMeters(t *testing.T) {
	var m TokenMeter
	s := New(Config{}, nil)
	s.RecordForwarded(WithTokenMeter(context.Background(), &m), Forwarded{Endpoint: "/v1/responses", Status: 200,
		Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 4, CachedTokens: 6}, Start: time.Now()})
	if m.Tokens() != 14 || m.Cached() != 6 {
		t.Fatalf("metered %d tokens, %d cached; want 14, 6 cached", m.Tokens(), m.Cached())
	}
}
