package store

import (
	"context"
	"testing"
	"time"
)

func TestModelSettings(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	none, err := s.ModelSettingsOf(ctx, "m")
	if err != nil || none.ModelID != "m" || none.KeepAlive != nil || none.Temperature != nil || none.ContextLength != 0 {
		t.Fatalf("no settings: %+v %v", none, err)
	}
	temp, topK, keep := 0.2, 20, -time.Second
	want := ModelSettings{ModelID: "m", ContextLength: 8192, Lanes: 2, KeepAlive: &keep, Runtime: "vulkan",
		Temperature: &temp, TopK: &topK, MaxTokens: 300, SystemPrompt: "Be brief."}
	if err := s.PutModelSettings(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := s.ModelSettingsOf(ctx, "m")
	if err != nil || got.ContextLength != 8192 || got.Lanes != 2 || got.KeepAlive == nil || *got.KeepAlive >= 0 ||
		got.Runtime != "vulkan" || *got.Temperature != 0.2 || got.TopP != nil || *got.TopK != 20 || got.MinP != nil ||
		got.MaxTokens != 300 || got.SystemPrompt != "Be brief." {
		t.Fatalf("settings %+v %v", got, err)
	}
	zero := time.Duration(0)
	want.KeepAlive = &zero
	s.PutModelSettings(ctx, want)
	if got, _ := s.ModelSettingsOf(ctx, "m"); got.KeepAlive == nil || *got.KeepAlive != 0 {
		t.Fatalf("keep-alive 0: %+v", got.KeepAlive)
	}
	if err := s.DeleteModelSettings(ctx, "m"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ModelSettingsOf(ctx, "m"); got.ContextLength != 0 {
		t.Fatalf("after delete %+v", got)
	}
}

func TestAppSettings(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	if v, err := s.AppSetting(ctx, "start_hidden"); err != nil || v != "" {
		t.Fatalf("unset: %q %v", v, err)
	}
	s.SetAppSetting(ctx, "start_hidden", "true")
	s.SetAppSetting(ctx, "start_hidden", "false")
	if v, err := s.AppSetting(ctx, "start_hidden"); err != nil || v != "false" {
		t.Fatalf("after two sets: %q %v", v, err)
	}
}
