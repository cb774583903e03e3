package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/prefixes"
	"github.com/superfluid/superfluid/server/store"
)

// newPrefixesCommand is `superfluid prefixes add|list|rm`: team mode's shared prefixes, stored
// in the data directory; a running server on it sees a change within prefixes.DefaultRefresh.
func newPrefixesCommand() *cobra.Command {
	cfg := DefaultConfig()
	cmd := &cobra.Command{
		Use:   "prefixes",
		Short: "add, list and remove shared prefixes (team mode's shared system prompts)",
		Long: `In team mode (superfluid serve --team) the prefix cache is partitioned by person: nobody's
cached_tokens or x-superfluid-warm tells them what someone else sent. A shared prefix (a team
system prompt) is the one exception: a request whose prompt begins with it reuses the tokens of
it that anyone's request computed, and nothing past them. Every change is audited; a running
server sees it within seconds.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return &commandLineError{fmt.Sprintf("unknown prefixes command %q: use add, list or rm", args[0])}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return &commandLineError{"name a prefixes command: superfluid prefixes add TEXT (or --file F), list or rm ID"}
		},
	}
	cmd.PersistentFlags().StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "where the server keeps its data")
	cmd.AddCommand(newPrefixesAddCommand(&cfg), newPrefixesListCommand(&cfg), newPrefixesRemoveCommand(&cfg))
	return cmd
}

func newPrefixesAddCommand(cfg *Config) *cobra.Command {
	var np prefixes.NewPrefix
	var file string
	cmd := &cobra.Command{
		Use:   "add [TEXT] [--file F] [--name N] [--model M]",
		Short: "mark a text shared; prints its id",
		Long: `Mark TEXT, or the contents of --file F exactly as they are (a final newline included), as a
shared prefix: for every model, or with --model for that model only (its id, as GET /v1/models
lists it). The id is printed on standard output, alone on its line.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if (len(args) == 1) == (file != "") || len(args) > 1 {
				return &commandLineError{"give the text as one argument or with --file F: superfluid prefixes add TEXT [--name N] [--model M]"}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if file != "" {
				b, err := os.ReadFile(file)
				if err != nil {
					return &UsageError{"--file: " + err.Error()}
				}
				np.Text = string(b)
			} else {
				np.Text = args[0]
			}
			return withPrefixes(*cfg, func(s *prefixes.Service, by prefixes.By) error {
				p, err := s.Add(context.Background(), by, np)
				if err != nil {
					return prefixesUsage(err)
				}
				fmt.Fprintln(cmd.OutOrStdout(), p.ID)
				fmt.Fprintf(cmd.ErrOrStderr(), "shared %d bytes for %s\n", len(p.Text), modelsOf(p))
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&file, "file", "", "a file whose contents are the text")
	cmd.Flags().StringVar(&np.Name, "name", "", "a label for lists")
	cmd.Flags().StringVar(&np.Model, "model", "", "the one model it is shared for (default: every model)")
	return cmd
}

func newPrefixesListCommand(cfg *Config) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "list the shared prefixes",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withPrefixes(*cfg, func(s *prefixes.Service, _ prefixes.By) error {
				all, err := s.List(context.Background())
				if err != nil {
					return err
				}
				printPrefixes(cmd.OutOrStdout(), all)
				return nil
			})
		},
	}
}

func newPrefixesRemoveCommand(cfg *Config) *cobra.Command {
	return &cobra.Command{
		Use:   "rm ID",
		Short: "stop sharing a prefix",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return &commandLineError{"name the shared prefix: superfluid prefixes rm ID (prefixes list shows the ids)"}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return withPrefixes(*cfg, func(s *prefixes.Service, by prefixes.By) error {
				p, err := s.Remove(context.Background(), by, args[0])
				if err != nil {
					return prefixesUsage(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "removed shared prefix %s\n", p.ID)
				return nil
			})
		},
	}
}

// withPrefixes opens the store in cfg's data directory for fn, with the CLI as the one who
// changes it (audited).
func withPrefixes(cfg Config, fn func(*prefixes.Service, prefixes.By) error) error {
	st, err := store.Open(databasePath(cfg.DataDir))
	if err != nil {
		return fmt.Errorf("open the database in %s: %w", cfg.DataDir, err)
	}
	defer st.Close()
	ppl := people.New(people.Config{Store: st})
	return fn(prefixes.New(prefixes.Config{Store: st}), prefixes.By{Name: people.CLI.Via,
		Record: func(ctx context.Context, action, target string, detail map[string]any) error {
			return ppl.Record(ctx, people.CLI, action, target, detail)
		}})
}

// prefixesUsage makes the complaints about what the user typed exit with code 2.
func prefixesUsage(err error) error {
	if errors.Is(err, prefixes.ErrInvalid) || errors.Is(err, prefixes.ErrNotFound) {
		return &UsageError{err.Error()}
	}
	return err
}

func modelsOf(p prefixes.Prefix) string {
	if p.Model == "" {
		return "every model"
	}
	return p.Model
}

// printPrefixes writes the shared prefixes as a table, each text's beginning quoted.
func printPrefixes(w io.Writer, all []prefixes.Prefix) {
	if len(all) == 0 {
		fmt.Fprintln(w, "no shared prefixes: superfluid prefixes add TEXT marks one")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tMODEL\tBYTES\tBY\tCREATED\tTEXT")
	for _, p := range all {
		text := []rune(p.Text)
		if len(text) > 40 {
			text = append(text[:40], '…')
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%q\n", p.ID, p.Name, modelsOf(p), len(p.Text), p.CreatedBy,
			p.CreatedAt.Local().Format(time.DateTime), string(text))
	}
	tw.Flush()
}

// teamPrefixes is team mode's shared prefixes over st; nil outside team mode.
func teamPrefixes(cfg Config, st *store.Store) *prefixes.Service {
	if !cfg.Team {
		return nil
	}
	return prefixes.New(prefixes.Config{Store: st})
}

// corePrefixes is s as the core's SharedPrefixes (nil, not a nil *prefixes.Service, when none).
func corePrefixes(s *prefixes.Service) core.SharedPrefixes {
	if s == nil {
		return nil
	}
	return s
}
