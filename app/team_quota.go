package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/quota"
	"github.com/superfluid/superfluid/server/store"
)

// Team mode's token quotas (package quota): serve's policy flags, the quota service the
// limits and the admin API share, superfluid users quota, and the quotas superfluid usage
// prints.

// quotaPolicySetting is the app setting where serve --team keeps its quota policy, so that
// superfluid usage, run beside it, reports the same quotas.
const quotaPolicySetting = "team.quota_policy"

// quotaFlags declares serve's quota flags (with --team).
func quotaFlags(fs *pflag.FlagSet, cfg *Config) {
	fs.Int64Var(&cfg.QuotaDailyTokens, "quota-daily-tokens", cfg.QuotaDailyTokens, "with --team: the tokens one person may use per UTC day, unless given their own (superfluid users quota); 0 for no limit")
	fs.Int64Var(&cfg.QuotaMonthlyTokens, "quota-monthly-tokens", cfg.QuotaMonthlyTokens, "with --team: the tokens one person may use per UTC month, unless given their own; 0 for no limit")
	fs.Float64Var(&cfg.QuotaCachedFraction, "quota-cached-fraction", cfg.QuotaCachedFraction, "with --team: what a prompt token served from the prefix cache counts for in the quotas, 0 to 1")
	fs.IntVar(&cfg.PersonConcurrency, "person-concurrency", cfg.PersonConcurrency, "with --team: the model requests one person may have in flight at once over all their keys (0 for no limit)")
}

func quotaPolicy(cfg Config) quota.Policy {
	return quota.Policy{DailyTokens: cfg.QuotaDailyTokens, MonthlyTokens: cfg.QuotaMonthlyTokens, CachedFraction: cfg.QuotaCachedFraction}
}

// openQuota is team mode's quota service (nil without --team), its policy kept in the
// database for superfluid usage.
func openQuota(cfg Config, st *store.Store) (*quota.Service, error) {
	p := quotaPolicy(cfg)
	if err := p.Check(); err != nil {
		return nil, &UsageError{"--quota-daily-tokens, --quota-monthly-tokens, --quota-cached-fraction: " + strings.TrimPrefix(err.Error(), quota.ErrInvalid.Error()+": ")}
	}
	if cfg.PersonConcurrency < 0 {
		return nil, &UsageError{"--person-concurrency: give the requests one person may run at once, or 0 for no limit"}
	}
	if !cfg.Team {
		return nil, nil
	}
	raw, _ := json.Marshal(p)
	if err := st.SetAppSetting(context.Background(), quotaPolicySetting, string(raw)); err != nil {
		return nil, err
	}
	return quota.New(quota.Config{Store: st, Policy: p}), nil
}

// storedQuota is the quota service as the last serve --team on st set its policy (the
// defaults when none did).
func storedQuota(st *store.Store) (*quota.Service, error) {
	p := quota.Policy{CachedFraction: quota.DefaultCachedFraction}
	raw, err := st.AppSetting(context.Background(), quotaPolicySetting)
	if err != nil {
		return nil, err
	}
	if raw != "" {
		if err := json.Unmarshal([]byte(raw), &p); err != nil {
			return nil, fmt.Errorf("the stored quota policy %q: %w", raw, err)
		}
	}
	return quota.New(quota.Config{Store: st, Policy: p}), nil
}

// newUsersQuotaCommand is `superfluid users quota NAME [--daily N] [--monthly N]`.
func newUsersQuotaCommand(cfg *Config) *cobra.Command {
	var daily, monthly string
	cmd := &cobra.Command{
		Use:   "quota NAME",
		Short: "show or set a person's token quotas per UTC day and month",
		Long: `Show or set the tokens a person may use per UTC day and per UTC month, over all their keys
(prompt and completion tokens; prompt tokens served from the cache count at the server's
--quota-cached-fraction). N is a number of tokens, 0 for unlimited, or "default" for the
server's --quota-daily-tokens / --quota-monthly-tokens. Past a quota the person's requests get
429 quota_exceeded until it resets. Every change is audited.`,
		Example: `  superfluid users quota alice --daily 200000 --monthly 3000000
  superfluid users quota alice --daily default
  superfluid users quota alice`,
		Args: oneName("superfluid users quota NAME [--daily N|default] [--monthly N|default]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var ch quota.Change
			var err error
			if cmd.Flags().Changed("daily") {
				if ch.Daily, err = quota.ParseValue(daily); err != nil {
					return &UsageError{"--daily: " + strings.TrimPrefix(err.Error(), quota.ErrInvalid.Error()+": ")}
				}
			}
			if cmd.Flags().Changed("monthly") {
				if ch.Monthly, err = quota.ParseValue(monthly); err != nil {
					return &UsageError{"--monthly: " + strings.TrimPrefix(err.Error(), quota.ErrInvalid.Error()+": ")}
				}
			}
			st, err := store.Open(databasePath(cfg.DataDir))
			if err != nil {
				return fmt.Errorf("open the database in %s: %w", cfg.DataDir, err)
			}
			defer st.Close()
			ctx, s := context.Background(), people.New(people.Config{Store: st})
			p, err := s.Get(ctx, args[0])
			if err != nil {
				return usersUsage(err)
			}
			q, err := storedQuota(st)
			if err != nil {
				return err
			}
			o := quota.Owner{Kind: store.QuotaPerson, ID: p.ID}
			if ch.Daily.Given || ch.Monthly.Given {
				before, after, err := q.Set(ctx, o, ch)
				if err != nil {
					return err
				}
				if detail := quota.Detail(before, after); len(detail) > 0 {
					detail["id"] = p.ID
					if err := s.Record(ctx, people.CLI, "user.quota", p.Name, detail); err != nil {
						return err
					}
				}
			}
			status, err := q.StatusOf(ctx, o)
			if err != nil {
				return err
			}
			own, err := q.Settings(ctx, o)
			if err != nil {
				return err
			}
			printQuota(cmd.OutOrStdout(), p.Name, own, status)
			return nil
		},
	}
	cmd.Flags().StringVar(&daily, "daily", "", `tokens per UTC day: N, 0 for unlimited, or "default"`)
	cmd.Flags().StringVar(&monthly, "monthly", "", `tokens per UTC month: N, 0 for unlimited, or "default"`)
	return cmd
}

// printQuota writes one person's quotas: the limit (and whether it is their own or the
// server's default), what is used and left, and when it resets.
func printQuota(w io.Writer, name string, own store.TokenQuota, st quota.Status) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PERSON\tWINDOW\tQUOTA\tUSED\tLEFT\tRESETS (UTC)")
	for _, row := range []struct {
		window string
		w      quota.Window
		own    *int64
	}{{"day", st.Daily, own.Daily}, {"month", st.Monthly, own.Monthly}} {
		limit, left := "unlimited", "-"
		if row.w.Limit > 0 {
			limit, left = humanize.Comma(row.w.Limit), humanize.Comma(row.w.Remaining())
		}
		if row.own == nil {
			limit += " (default)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, row.window, limit, humanize.Comma(row.w.Used), left, row.w.ResetsAt.UTC().Format(time.DateTime))
	}
	tw.Flush()
}

// usageQuotas are the quotas superfluid usage reports: each person's in the rows when they
// are grouped by person, from the database's people otherwise (none outside team mode).
func usageQuotas(ctx context.Context, st *store.Store, rows []core.UsageRow) (server.UsageQuotas, []quotaLine, error) {
	var uq server.UsageQuotas
	all, err := st.People(ctx)
	if err != nil || len(all) == 0 {
		return uq, nil, err
	}
	svc, err := storedQuota(st)
	if err != nil {
		return uq, nil, err
	}
	if uq.People, err = server.PeopleQuotas(ctx, svc, rows); err != nil {
		return uq, nil, err
	}
	var lines []quotaLine
	for _, p := range all {
		st, err := svc.StatusOf(ctx, quota.Owner{Kind: store.QuotaPerson, ID: p.ID})
		if err != nil {
			return uq, nil, err
		}
		if st.Daily.Limit > 0 || st.Monthly.Limit > 0 {
			lines = append(lines, quotaLine{p.Name, st})
		}
	}
	return uq, lines, nil
}

// quotaLine is one person's quotas in superfluid usage.
type quotaLine struct {
	name   string
	status quota.Status
}

// printQuotaLines writes what is left of each person's quotas, under the usage table.
func printQuotaLines(w io.Writer, lines []quotaLine) {
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "QUOTA\tDAY USED\tDAY LEFT\tMONTH USED\tMONTH LEFT\t")
	cell := func(w quota.Window) (string, string) {
		if w.Limit == 0 {
			return humanize.Comma(w.Used), "unlimited"
		}
		return humanize.Comma(w.Used) + " / " + humanize.Comma(w.Limit), humanize.Comma(w.Remaining())
	}
	for _, l := range lines {
		du, dl := cell(l.status.Daily)
		mu, ml := cell(l.status.Monthly)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", l.name, du, dl, mu, ml)
	}
	tw.Flush()
}

// quotaLineAdmission holds each batch line to its owner's token quotas as the HTTP limits hold
// a request (batch lines never pass them); nil without quotas.
func quotaLineAdmission(q *quota.Service) func(context.Context) (context.Context, func(), error) {
	if q == nil {
		return nil
	}
	return func(ctx context.Context) (context.Context, func(), error) {
		id, ok := auth.FromContext(ctx)
		if !ok || id == nil {
			return ctx, func() {}, nil
		}
		meter := &core.TokenMeter{}
		done, err := q.Admit(ctx, id, meter)
		if err != nil {
			return ctx, nil, err
		}
		return core.WithTokenMeter(ctx, meter), done, nil
	}
}
