package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core/qos"
	"github.com/superfluid/superfluid/server/store"
)

// newKeysCommand is `superfluid keys create|list|revoke`: the API keys stored in the data
// directory. A running server on the same directory sees a change within auth.DefaultRefresh.
func newKeysCommand() *cobra.Command {
	cfg := DefaultConfig()
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "create, list and revoke API keys",
		Long: `Create, list and revoke the API keys stored in the data directory (hashed: a key is
shown once, when it is created). Once a key exists, every request but GET /health needs one,
sent as Authorization: Bearer KEY or x-api-key: KEY. Admin keys may also load, unload,
delete, pull and copy models and manage keys. A running server picks up changes within
a few seconds.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return &commandLineError{fmt.Sprintf("unknown keys command %q: use create, list or revoke", args[0])}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return &commandLineError{"name a keys command: superfluid keys create NAME, superfluid keys list or superfluid keys revoke NAME"}
		},
	}
	cmd.PersistentFlags().StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "where the server keeps its data")
	cmd.AddCommand(newKeysCreateCommand(&cfg), newKeysListCommand(&cfg), newKeysRevokeCommand(&cfg))
	return cmd
}

func newKeysCreateCommand(cfg *Config) *cobra.Command {
	var admin bool
	var models, origins []string
	var class, user string
	var limits auth.Limits
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "create an API key and print it (the only time it is shown)",
		Long: `Create an API key named NAME and print it on standard output, alone on its line (the
details go to standard error), so KEY=$(superfluid keys create ci) keeps just the key.
The key is not shown again: only its hash is stored.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return &commandLineError{"name the key: superfluid keys create NAME [--admin] [--models a,b]"}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			q, err := qos.Parse(class)
			if err != nil {
				return &UsageError{"--qos: " + err.Error()}
			}
			return withKeys(*cfg, func(k *auth.Keyring) error {
				key, info, err := k.Create(context.Background(), auth.NewKey{Name: args[0], Admin: admin, Models: models, QoS: q,
					Limits: limits, Origins: origins, Person: user})
				if err != nil {
					return keysUsage(err)
				}
				if info.Person != nil {
					if err := auditKeyCreate(*cfg, info); err != nil {
						return err
					}
				}
				fmt.Fprintln(cmd.OutOrStdout(), key)
				fmt.Fprintf(cmd.ErrOrStderr(), "created %s key %s (%s), %s; copy the key now: it is not shown again\n",
					map[bool]string{true: "admin", false: "API"}[info.Admin], info.Name, info.ID, modelsText(info.Models))
				return nil
			})
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&admin, "admin", false, "the key may also manage models (load, unload, delete, pull, copy) and keys")
	fs.StringSliceVar(&models, "models", nil, "the model ids the key may use, comma-separated (default: every model)")
	fs.StringVar(&class, "qos", "", "the highest scheduling class the key may ask for: interactive, completion, agent or background (default: any)")
	fs.IntVar(&limits.RPM, "rpm", 0, "requests per minute (0 = no limit)")
	fs.IntVar(&limits.TPM, "tpm", 0, "tokens per minute (0 = no limit)")
	fs.IntVar(&limits.Concurrency, "concurrency", 0, "requests at once (0 = no limit)")
	fs.StringSliceVar(&origins, "origins", nil, "browser origins the key may be used from, comma-separated (default: any the server allows)")
	fs.StringVar(&user, "user", "", "team mode: the person the key is for (an sk-ss- key, an admin key when the person is an admin)")
	return cmd
}

func newKeysListCommand(cfg *Config) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "list the API keys (never the keys themselves)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withKeys(*cfg, func(k *auth.Keyring) error {
				infos, err := k.List(context.Background(), all)
				if err != nil {
					return err
				}
				printKeys(cmd.OutOrStdout(), infos, all)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "list revoked keys too")
	return cmd
}

func newKeysRevokeCommand(cfg *Config) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke NAME|ID...",
		Short: "revoke API keys: they stop working at once (a running server: within seconds)",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return &commandLineError{"name the key to revoke: superfluid keys revoke NAME (superfluid keys list shows them)"}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return withKeys(*cfg, func(k *auth.Keyring) error {
				for _, name := range args {
					info, err := k.Revoke(context.Background(), name)
					if err != nil {
						return keysUsage(err)
					}
					fmt.Fprintf(cmd.OutOrStdout(), "revoked %s (%s)\n", info.Name, info.ID)
				}
				return nil
			})
		},
	}
}

// withKeys opens the database alone (no catalog, no models) and runs fn on its keyring.
func withKeys(cfg Config, fn func(*auth.Keyring) error) error {
	st, err := store.Open(databasePath(cfg.DataDir))
	if err != nil {
		return fmt.Errorf("open the database in %s: %w", cfg.DataDir, err)
	}
	defer st.Close()
	k, err := auth.New(context.Background(), auth.Config{Store: st})
	if err != nil {
		return err
	}
	return fn(k)
}

// keysUsage makes the keyring's complaints about what the user typed exit with code 2.
func keysUsage(err error) error {
	for _, e := range []error{auth.ErrInvalidKey, auth.ErrKeyExists, auth.ErrKeyNotFound, auth.ErrConfiguredKey} {
		if errors.Is(err, e) {
			return &UsageError{err.Error()}
		}
	}
	return err
}

func modelsText(models []string) string {
	if len(models) == 0 {
		return "every model"
	}
	return "models " + strings.Join(models, ", ")
}

// printKeys writes the keys as a table.
func printKeys(w io.Writer, infos []auth.Info, revoked bool) {
	if len(infos) == 0 {
		fmt.Fprintln(w, "no API keys: the server answers without one (on 127.0.0.1 only); create one with superfluid keys create NAME --admin")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "ID\tNAME\tKEY\tADMIN\tMODELS\tQOS\tLIMITS\tCREATED"
	team := slices.ContainsFunc(infos, func(k auth.Info) bool { return k.Person != nil }) // a USER column in team mode only
	if team {
		head += "\tUSER"
	}
	if revoked {
		head += "\tREVOKED"
	}
	fmt.Fprintln(tw, head)
	for _, k := range infos {
		prefix := k.Prefix + "…"
		if k.Prefix == "" {
			prefix = "(" + k.Source + ")"
		}
		models := strings.Join(k.Models, ",")
		if models == "" {
			models = "all"
		}
		qos := k.QoS.String()
		if qos == "" {
			qos = "any"
		}
		limits := "none"
		if k.Limits != (auth.Limits{}) {
			limits = fmt.Sprintf("rpm %d, tpm %d, concurrency %d", k.Limits.RPM, k.Limits.TPM, k.Limits.Concurrency)
		}
		created := "-"
		if !k.CreatedAt.IsZero() {
			created = k.CreatedAt.Local().Format(time.DateTime)
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", k.ID, k.Name, prefix, map[bool]string{true: "yes", false: "no"}[k.Admin],
			models, qos, limits, created)
		if team {
			user := "-"
			if k.Person != nil {
				user = k.Person.Name
			}
			line += "\t" + user
		}
		if revoked {
			r := "-"
			if !k.RevokedAt.IsZero() {
				r = k.RevokedAt.Local().Format(time.DateTime)
			}
			line += "\t" + r
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
}
