package app

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"

	"github.com/superfluid/superfluid/server/quota"
	"github.com/superfluid/superfluid/server/store"
)

// TestQuotaFlags: serve's quota flags are checked (negative quotas, a fraction outside 0 to 1,
// a negative cap are usage errors); with --team the policy is kept for superfluid usage, which
// reads it back; without --team there are no quotas.
func TestQuotaFlags(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "db.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, bad := range []func(*Config){
		func(c *Config) { c.QuotaDailyTokens = -1 },
		func(c *Config) { c.QuotaMonthlyTokens = -1 },
		func(c *Config) { c.QuotaCachedFraction = 1.5 },
		func(c *Config) { c.QuotaCachedFraction = -0.1 },
		func(c *Config) { c.PersonConcurrency = -1 },
	} {
		cfg := DefaultConfig()
		cfg.Team = true
		bad(&cfg)
		var ue *UsageError
		if _, err := openQuota(cfg, st); !errors.As(err, &ue) {
			t.Errorf("%+v: %v, want a usage error", quotaPolicy(cfg), err)
		}
	}
	cfg := DefaultConfig()
	if q, err := openQuota(cfg, st); err != nil || q != nil {
		t.Fatalf("without --team: %v %v, want no quotas", q, err)
	}
	if q, _ := storedQuota(st); q.Policy() != (quota.Policy{CachedFraction: quota.DefaultCachedFraction}) {
		t.Errorf("nothing stored: %+v", q.Policy())
	}
	cfg.Team, cfg.QuotaDailyTokens, cfg.QuotaMonthlyTokens, cfg.QuotaCachedFraction = true, 1000, 20000, 0.25
	if _, err := openQuota(cfg, st); err != nil {
		t.Fatal(err)
	}
	if q, err := storedQuota(st); err != nil || q.Policy() != quotaPolicy(cfg) {
		t.Errorf("stored policy %+v %v, want %+v", q.Policy(), err, quotaPolicy(cfg))
	}
	def := DefaultConfig()
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	teamFlags(fs, &def)
	if err := fs.Parse([]string{"--quota-daily-tokens", "5", "--quota-cached-fraction", "0.5", "--person-concurrency", "2"}); err != nil ||
		def.QuotaDailyTokens != 5 || def.QuotaCachedFraction != 0.5 || def.PersonConcurrency != 2 {
		t.Errorf("team flags: %v %+v", err, quotaPolicy(def))
	}
}
