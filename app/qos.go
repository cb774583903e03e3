package app

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/batches"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/quota"
)

// DefaultRateLimitIP is the per-address limit of a server bound to a non-loopback address
// when --rate-limit-ip is not given (requests a minute).
const DefaultRateLimitIP = 600

// qosFlags declares the flags of scheduling and limits (serve, bench and the desktop app).
func qosFlags(fs *pflag.FlagSet, cfg *Config) {
	fs.Var(rateIPFlag{&cfg.RateLimitIP}, "rate-limit-ip", fmt.Sprintf("requests a minute one client address may send, a minute's worth at once; "+
		"over it the answer is 429 (default: off on a loopback --host, %d on others; 0 = off)", DefaultRateLimitIP))
	fs.BoolVar(&cfg.AllowBatchInvariant, "http-allow-batch-invariant", cfg.AllowBatchInvariant,
		"let requests ask for a lane that ticks alone with x-superfluid-batch-invariant (such a request takes every lane of its model while it runs)")
	fs.Var(secondsFlag{&cfg.NonstreamKeepalive}, "nonstream-keepalive",
		"commit 200 when a non-streaming generation is admitted and send a space every SEC seconds until its JSON, for proxies that drop idle connections (0 = off)")
	fs.IntVar(&cfg.QoSReserve, "qos-reserve", cfg.QoSReserve,
		"lanes of each model that background work (x-superfluid-qos: background, batch lines) leaves free for interactive requests (0 = none)")
	fs.IntVar(&cfg.PersonReserve, "person-reserve", cfg.PersonReserve,
		"with --team: lanes of each model that one person's requests leave free while another person has asked for a lane within the last minute, so that person's request starts at once instead of waiting for a whole reply; a person alone gets every lane (0 = none)")
}

// rateLimitIP is the per-address limit in force: --rate-limit-ip, or its default for the host.
func rateLimitIP(cfg Config) int {
	if cfg.RateLimitIP >= 0 {
		return cfg.RateLimitIP
	}
	if auth.LoopbackHost(cfg.Host) {
		return 0
	}
	return DefaultRateLimitIP
}

// qosConfig is the core's scheduling configuration: the gate on, --qos-reserve, and
// --person-reserve in team mode.
func qosConfig(cfg Config) core.QoSConfig {
	reserve := cfg.QoSReserve
	if reserve <= 0 {
		reserve = -1 // the core's 0 is its default
	}
	q := core.QoSConfig{Gate: true, Reserve: reserve}
	if cfg.Team {
		q.OwnerReserve = max(cfg.PersonReserve, 0)
	}
	return q
}

// serverLimits are the HTTP rate limits.
func serverLimits(cfg Config, quotas *quota.Service) *server.Limits {
	return server.NewLimits(server.LimitsConfig{PerIP: rateLimitIP(cfg), Quota: quotas, PersonConcurrency: cfg.PersonConcurrency})
}

// rateIPFlag is --rate-limit-ip: requests a minute, 0 or more; unset (-1) shows as "auto".
type rateIPFlag struct{ n *int }

func (f rateIPFlag) String() string {
	if f.n == nil || *f.n < 0 {
		return "auto"
	}
	return strconv.Itoa(*f.n)
}

func (f rateIPFlag) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return fmt.Errorf("want a number of requests a minute (0 = off), got %q", v)
	}
	*f.n = n
	return nil
}

func (f rateIPFlag) Type() string { return "rpm" }

// secondsFlag is a duration given in whole seconds.
type secondsFlag struct{ d *time.Duration }

func (f secondsFlag) String() string {
	if f.d == nil {
		return "0"
	}
	return strconv.FormatInt(int64(*f.d/time.Second), 10)
}

func (f secondsFlag) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 3600 {
		return fmt.Errorf("want a whole number of seconds from 0 to 3600, got %q", v)
	}
	*f.d = time.Duration(n) * time.Second
	return nil
}

func (f secondsFlag) Type() string { return "SEC" }

// ownerLookup finds an active key by id, for the batches it made to run as it; nil without a
// keyring.
func ownerLookup(k *auth.Keyring) func(ctx context.Context, id string) (*auth.Identity, error) {
	if k == nil {
		return nil
	}
	return func(ctx context.Context, id string) (*auth.Identity, error) {
		infos, err := k.List(ctx, false)
		if err != nil {
			return nil, err
		}
		for _, info := range infos {
			if info.ID == id && info.RevokedAt.IsZero() && !info.Disabled { // a disabled person's batches do not run
				who := info.Identity
				return &who, nil
			}
		}
		return nil, batches.ErrOwnerNotFound
	}
}
