package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/bookings"
	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/store"
)

// newUsersCommand is `superfluid users add|list|disable|enable|passwd`: team mode's people,
// stored in the data directory. A running server on the same directory applies a disabled
// person's keys being refused within auth.DefaultRefresh.
func newUsersCommand() *cobra.Command {
	cfg := DefaultConfig()
	cmd := &cobra.Command{
		Use:   "users",
		Short: "add, list, disable, enable people and set their passwords (team mode)",
		Long: `Manage the people of team mode (superfluid serve --team): each has a name, a password
(stored as an argon2id hash), a role (admin or member) and a state (active or disabled).
A person's keys (superfluid keys create NAME --user PERSON) stop working when they are
disabled: a running server refuses them within a few seconds. Every change is audited.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return &commandLineError{fmt.Sprintf("unknown users command %q: use add, list, disable, enable or passwd", args[0])}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return &commandLineError{"name a users command: superfluid users add NAME, list, disable NAME, enable NAME or passwd NAME"}
		},
	}
	cmd.PersistentFlags().StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "where the server keeps its data")
	cmd.AddCommand(newUsersAddCommand(&cfg), newUsersListCommand(&cfg), newUsersStateCommand(&cfg, "disable"),
		newUsersStateCommand(&cfg, "enable"), newUsersPasswdCommand(&cfg), newUsersQuotaCommand(&cfg))
	return cmd
}

// oneName accepts exactly one NAME argument.
func oneName(usage string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != 1 {
			return &commandLineError{"name the person: " + usage}
		}
		return nil
	}
}

// passwordFrom is the password of --password-file, or a generated one (generated is true).
func passwordFrom(file string) (password string, generated bool, err error) {
	if file == "" {
		return people.GeneratePassword(), true, nil
	}
	password, err = people.ReadPasswordFile(file)
	if err != nil {
		return "", false, &UsageError{"--password-file: " + err.Error()} // a file the user named
	}
	return password, false, nil
}

func newUsersAddCommand(cfg *Config) *cobra.Command {
	var admin bool
	var file string
	cmd := &cobra.Command{
		Use:   "add NAME",
		Short: "add a person; prints a generated password unless --password-file",
		Long: `Add a person named NAME. Without --password-file a random password is printed on standard
output, alone on its line (the details go to standard error); it is not shown again.`,
		Args: oneName("superfluid users add NAME [--admin] [--password-file FILE]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			password, generated, err := passwordFrom(file)
			if err != nil {
				return err
			}
			role := people.RoleMember
			if admin {
				role = people.RoleAdmin
			}
			return withPeople(*cfg, func(s *people.Service) error {
				p, err := s.Create(context.Background(), people.CLI, people.NewPerson{Name: args[0], Password: password, Role: role})
				if err != nil {
					return usersUsage(err)
				}
				if generated {
					fmt.Fprintln(cmd.OutOrStdout(), password)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "added %s %s (%s); make them a key with superfluid keys create NAME --user %s\n", p.Role, p.Name, p.ID, p.Name)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&admin, "admin", false, "the person is an admin: manages people, keys and models")
	cmd.Flags().StringVar(&file, "password-file", "", "a file whose first line is the password (default: a random one, printed)")
	return cmd
}

func newUsersListCommand(cfg *Config) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "list the people (never their passwords)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withPeople(*cfg, func(s *people.Service) error {
				all, err := s.List(context.Background())
				if err != nil {
					return err
				}
				printPeople(cmd.OutOrStdout(), all)
				return nil
			})
		},
	}
}

// newUsersStateCommand is users disable or users enable.
func newUsersStateCommand(cfg *Config, verb string) *cobra.Command {
	short := map[string]string{
		"disable": "disable a person: their keys stop working (a running server: within seconds), their password is refused",
		"enable":  "enable a disabled person again",
	}[verb]
	return &cobra.Command{
		Use:   verb + " NAME",
		Short: short,
		Args:  oneName("superfluid users " + verb + " NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withPeople(*cfg, func(s *people.Service) error {
				change := s.Disable
				if verb == "enable" {
					change = s.Enable
				}
				p, err := change(context.Background(), people.CLI, args[0])
				if err != nil {
					return usersUsage(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%sd %s (%s)\n", verb, p.Name, p.ID)
				return nil
			})
		},
	}
}

func newUsersPasswdCommand(cfg *Config) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "passwd NAME",
		Short: "set a person's password; prints a generated one unless --password-file",
		Args:  oneName("superfluid users passwd NAME [--password-file FILE]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			password, generated, err := passwordFrom(file)
			if err != nil {
				return err
			}
			return withPeople(*cfg, func(s *people.Service) error {
				p, err := s.SetPassword(context.Background(), people.CLI, args[0], password)
				if err != nil {
					return usersUsage(err)
				}
				if generated {
					fmt.Fprintln(cmd.OutOrStdout(), password)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "set the password of %s (%s)\n", p.Name, p.ID)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&file, "password-file", "", "a file whose first line is the password (default: a random one, printed)")
	return cmd
}

// withPeople opens the database alone and runs fn on its people. Keys are not reloaded here:
// a running server's keyring rereads the people with the keys.
func withPeople(cfg Config, fn func(*people.Service) error) error {
	st, err := store.Open(databasePath(cfg.DataDir))
	if err != nil {
		return fmt.Errorf("open the database in %s: %w", cfg.DataDir, err)
	}
	defer st.Close()
	p := people.New(people.Config{Store: st})
	if b, err := newBookings(st, bookings.Policy{}, auditBookings(p, true), nil); err == nil {
		endBookingsOnDisable(p, b) // a disabled person's bookings end (team_bookings.go)
	}
	return fn(p)
}

// auditKeyCreate records, from the CLI, the creation of a key for a person.
func auditKeyCreate(cfg Config, info auth.Info) error {
	return withPeople(cfg, func(s *people.Service) error {
		return s.Record(context.Background(), people.CLI, "key.create", info.Name, map[string]any{"id": info.ID, "user": info.Person.Name})
	})
}

// usersUsage makes the complaints about what the user typed exit with code 2.
func usersUsage(err error) error {
	for _, e := range []error{people.ErrInvalid, people.ErrNameTaken, people.ErrNotFound, people.ErrLastAdmin} {
		if errors.Is(err, e) {
			return &UsageError{err.Error()}
		}
	}
	return err
}

// printPeople writes the people as a table.
func printPeople(w io.Writer, all []people.Person) {
	if len(all) == 0 {
		fmt.Fprintln(w, "nobody yet: superfluid serve --team creates the first admin, or add one with superfluid users add NAME --admin")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tROLE\tSTATE\tCREATED")
	for _, p := range all {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.ID, p.Name, p.Role, p.State, p.CreatedAt.Local().Format(time.DateTime))
	}
	tw.Flush()
}
