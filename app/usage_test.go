package app

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/superfluid/superfluid/server/store"
)

// TestUsageCommand: superfluid usage sums the data directory's request records by key, model
// and day, as a table or as GET /v1/usage's JSON; bad dates and groupings are usage errors.
func TestUsageCommand(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(databasePath(dir))
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	recs := []store.RequestRecord{
		{ID: "1", KeyID: "policy:alice", KeyName: "alice", Model: "m1", Status: 200, PromptTokens: 1000, CompletionTokens: 20, Total: time.Second, CreatedAt: day},
		{ID: "2", KeyID: "policy:alice", KeyName: "alice", Model: "m1", Status: 200, PromptTokens: 500, CompletionTokens: 10, Total: time.Second, CreatedAt: day},
		{ID: "3", Model: "m2", Status: 500, PromptTokens: 7, CreatedAt: day.AddDate(0, 0, 1)},
	}
	if err := st.RecordRequests(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	st.Close()
	tests := []struct {
		name string
		args []string
		code int
		want []string // lines or pieces the output has
	}{
		{"table", nil, 0, []string{"DAY", "KEY", "MODEL", "REQUESTS", "2026-05-01", "alice", "1,500", "1,530", "2026-05-02", "(no key)"}},
		{"one key by model", []string{"--key", "alice", "--by", "model"}, 0, []string{"m1", "2", "1,530"}},
		{"a range with nothing", []string{"--from", "2027-01-01"}, 0, []string{"no requests recorded in that range"}},
		{"a bad date", []string{"--from", "May 1"}, 2, []string{"--from: a date is YYYY-MM-DD"}},
		{"a bad grouping", []string{"--by", "week"}, 2, []string{"--by: group_by takes key, model and day"}},
		{"an end before the start", []string{"--from", "2026-05-02", "--to", "2026-05-01"}, 2, []string{"before the start date"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(append([]string{"superfluid", "usage", "--data-dir", dir}, tt.args...), &stdout, &stderr)
			out := stdout.String() + stderr.String()
			if code != tt.code {
				t.Fatalf("exit %d, want %d: %s", code, tt.code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Fatalf("no %q in:\n%s", w, out)
				}
			}
		})
	}
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"superfluid", "usage", "--data-dir", dir, "--json", "--by", "key", "--to", "2026-05-01"}, &stdout, &stderr); code != 0 {
		t.Fatal(stderr.String())
	}
	var list struct {
		Object  string
		EndDate string `json:"end_date"`
		Data    []struct {
			KeyName     *string `json:"key_name"`
			Model       *string
			Requests    int64
			TotalTokens int64 `json:"total_tokens"`
		}
	}
	if err := json.Unmarshal(stdout.Bytes(), &list); err != nil || list.Object != "list" || list.EndDate != "2026-05-01" || len(list.Data) != 1 ||
		*list.Data[0].KeyName != "alice" || list.Data[0].Model != nil || list.Data[0].Requests != 2 || list.Data[0].TotalTokens != 1530 {
		t.Fatalf("%s: %v", stdout.String(), err)
	}
}

// TestQoSFlags: the scheduling and limit flags reach the Config, with the per-address limit's
// default depending on the host; bad values are usage errors.
func TestQoSFlags(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		rateIP int
		check  func(Config) bool
	}{
		{"defaults on loopback", nil, 0, 0, func(c Config) bool {
			return !c.AllowBatchInvariant && c.NonstreamKeepalive == 0 && qosConfig(c).Reserve == 1
		}},
		{"default on another host", []string{"--host", "0.0.0.0"}, 0, DefaultRateLimitIP, nil},
		{"set", []string{"--host", "0.0.0.0", "--rate-limit-ip", "0", "--http-allow-batch-invariant", "--nonstream-keepalive", "15", "--qos-reserve", "0"}, 0, 0,
			func(c Config) bool {
				return c.AllowBatchInvariant && c.NonstreamKeepalive == 15*time.Second && qosConfig(c).Reserve < 0 && qosConfig(c).Gate
			}},
		{"a negative limit", []string{"--rate-limit-ip", "-5"}, 2, 0, nil},
		{"a keep-alive that is not seconds", []string{"--nonstream-keepalive", "5m"}, 2, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
			fs.SetOutput(io.Discard)
			serverFlags(fs, &cfg)
			err := fs.Parse(tt.args)
			if (err != nil) != (tt.code == 2) {
				t.Fatalf("parse %v: %v", tt.args, err)
			}
			if err != nil {
				return
			}
			if got := rateLimitIP(cfg); got != tt.rateIP {
				t.Fatalf("per-address limit %d, want %d", got, tt.rateIP)
			}
			if tt.check != nil && !tt.check(cfg) {
				t.Fatalf("config %+v", cfg)
			}
		})
	}
}
