package store

import (
	"context"
	"testing"
)

// The speed columns (migration 0021) round-trip: a request's speculation counts, restored
// tokens and cache miss, and a model's speculation and attention settings.
func TestSpeedColumns(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	in := RequestRecord{ID: "chatcmpl-spec", Model: "m", Status: 200, SpecProposed: 60, SpecAccepted: 38,
		RestoredTokens: 512, CacheMiss: "diverged at token 513"}
	if err := s.RecordRequest(ctx, in); err != nil {
		t.Fatal(err)
	}
	got, err := s.Request(ctx, in.ID)
	if err != nil || got.SpecProposed != 60 || got.SpecAccepted != 38 || got.RestoredTokens != 512 || got.CacheMiss != in.CacheMiss {
		t.Fatalf("record %+v %v", got, err)
	}
	if err := s.RecordRequest(ctx, RequestRecord{ID: "chatcmpl-plain", Status: 200}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Request(ctx, "chatcmpl-plain"); got.SpecProposed != 0 || got.CacheMiss != "" {
		t.Fatalf("plain record %+v", got)
	}

	set := ModelSettings{ModelID: "m", Speculative: "draft", DraftModel: "tiny-draft", DraftTokens: 12, FlashAttention: "on"}
	if err := s.PutModelSettings(ctx, set); err != nil {
		t.Fatal(err)
	}
	back, err := s.ModelSettingsOf(ctx, "m")
	if err != nil || back.Speculative != "draft" || back.DraftModel != "tiny-draft" || back.DraftTokens != 12 || back.FlashAttention != "on" {
		t.Fatalf("settings %+v %v", back, err)
	}
}
