package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/store"
)

// newUsageCommand is `superfluid usage`: the request records of the data directory summed by
// key, model and day, as GET /v1/usage sums them for an admin key.
func newUsageCommand() *cobra.Command {
	cfg := DefaultConfig()
	var from, to, by, key, model string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "usage",
		Short: "show the requests and tokens used, by API key, model and day",
		Long: `Show the requests answered and the tokens they used (prompt, cached, completion),
summed by API key, model and day (UTC), from the request records in the data directory.
Records are kept for --records-days (30 by default). GET /v1/usage answers the same with an
admin key; other keys see their own. In team mode what is left of each person's token
quotas (per UTC day and month) follows the table.`,
		Example: `  superfluid usage
  superfluid usage --from 2026-05-01 --to 2026-05-31 --by key
  superfluid usage --key alice --by model,day --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var q core.UsageQuery
			var err error
			if q.From, err = core.ParseUsageDate(from); err != nil {
				return &UsageError{"--from: " + strings.TrimPrefix(err.Error(), llm.ErrInvalidInput.Error()+": ")}
			}
			if q.To, err = core.ParseUsageDate(to); err != nil {
				return &UsageError{"--to: " + strings.TrimPrefix(err.Error(), llm.ErrInvalidInput.Error()+": ")}
			}
			if by != "none" {
				if q.GroupBy, err = core.ParseGroupBy(by); err != nil {
					return &UsageError{"--by: " + strings.TrimPrefix(err.Error(), llm.ErrInvalidInput.Error()+": ")}
				}
			}
			q.Key, q.Model = key, model
			st, err := store.Open(databasePath(cfg.DataDir))
			if err != nil {
				return fmt.Errorf("open the database in %s: %w", cfg.DataDir, err)
			}
			defer st.Close()
			rows, err := core.New(core.Config{}, st).Usage(context.Background(), q)
			if errors.Is(err, llm.ErrInvalidInput) {
				return &UsageError{strings.TrimPrefix(err.Error(), llm.ErrInvalidInput.Error()+": ")}
			}
			if err != nil {
				return err
			}
			uq, quotas, err := usageQuotas(context.Background(), st, rows) // team mode (team_quota.go)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(server.TeamUsageList(q, from, to, rows, uq))
			}
			printUsage(cmd.OutOrStdout(), q.GroupBy, rows)
			printQuotaLines(cmd.OutOrStdout(), quotas)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "where the server keeps its data")
	fs.StringVar(&from, "from", "", "first day included, YYYY-MM-DD (UTC)")
	fs.StringVar(&to, "to", "", "last day included, YYYY-MM-DD (UTC)")
	fs.StringVar(&by, "by", "key,model,day", `what to sum by: key, model, day and person (team mode), comma-separated, or "none" for one total`)
	fs.StringVar(&key, "key", "", "only this API key (its name or id)")
	fs.StringVar(&model, "model", "", "only this model")
	fs.BoolVar(&asJSON, "json", false, "print the JSON GET /v1/usage answers")
	return cmd
}

// printUsage writes the rows as a table: the groupings' columns, then the sums.
func printUsage(w io.Writer, groups []string, rows []core.UsageRow) {
	if len(rows) == 0 {
		fmt.Fprintln(w, "no requests recorded in that range")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	has := map[string]bool{}
	var head []string
	for _, g := range []string{core.GroupDay, core.GroupPerson, core.GroupKey, core.GroupLane, core.GroupModel} {
		for _, x := range groups {
			if x == g {
				has[g] = true
				head = append(head, strings.ToUpper(g))
			}
		}
	}
	head = append(head, "REQUESTS", "ERRORS", "PROMPT", "CACHED", "COMPLETION", "TOTAL", "TIME")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, r := range rows {
		var cells []string
		if has[core.GroupDay] {
			cells = append(cells, r.Day)
		}
		if has[core.GroupPerson] {
			name := r.PersonName
			if r.PersonID == "" {
				name = "(no person)"
			}
			cells = append(cells, name)
		}
		if has[core.GroupKey] {
			name := r.KeyName
			if r.KeyID == "" {
				name = "(no key)"
			}
			cells = append(cells, name)
		}
		if has[core.GroupLane] {
			name := r.LaneName + " (" + r.Engine + ")"
			if r.LaneName == "" {
				name = "(no lane)"
			}
			cells = append(cells, name)
		}
		if has[core.GroupModel] {
			cells = append(cells, r.Model)
		}
		cells = append(cells, humanize.Comma(r.Requests), humanize.Comma(r.Errors), humanize.Comma(r.PromptTokens),
			humanize.Comma(r.CachedTokens), humanize.Comma(r.CompletionTokens), humanize.Comma(r.Total), r.Duration.Round(time.Millisecond).String())
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	tw.Flush()
}
