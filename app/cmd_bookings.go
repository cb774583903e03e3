package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/bookings"
	"github.com/superfluid/superfluid/server/people"
)

// newBookingsCommand is `superfluid bookings add|list|approve|reject|cancel`: team mode's
// bookings in the data directory, made and decided as this machine's admin.
func newBookingsCommand() *cobra.Command {
	cfg := DefaultConfig()
	cmd := &cobra.Command{
		Use:   "bookings",
		Short: "book a lane or a whole device for a time window; list, approve, reject and cancel bookings",
		Long: `Book a lane (optionally with a model to load at the start) or a whole device for a
window of time, and list, approve, reject and cancel the bookings stored in the data
directory. Overlapping bookings of one lane, or of a device and any of its lanes, are
refused. The command line acts as this machine's admin: its bookings need no approval.
Times are RFC 3339 (2026-06-01T09:00:00Z), "now", or now plus a duration ("+2h", "+90m").`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return &commandLineError{fmt.Sprintf("unknown bookings command %q: use add, list, approve, reject or cancel", args[0])}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return &commandLineError{"name a bookings command: add, list, approve, reject or cancel"}
		},
	}
	cmd.PersistentFlags().StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "where the server keeps its data")
	cmd.AddCommand(newBookingsAddCommand(&cfg), newBookingsListCommand(&cfg),
		newBookingsDecideCommand(&cfg, "approve", (*bookings.Service).Approve),
		newBookingsDecideCommand(&cfg, "reject", (*bookings.Service).Reject),
		newBookingsDecideCommand(&cfg, "cancel", (*bookings.Service).Cancel))
	return cmd
}

func newBookingsAddCommand(cfg *Config) *cobra.Command {
	var lane, device, model, from, to string
	cmd := &cobra.Command{
		Use:     "add (--lane NAME | --device D) --from T --to T [--model M]",
		Short:   "book a lane or a whole device",
		Example: "  superfluid bookings add --lane big --from now --to +2h --model qwen3-32b\n  superfluid bookings add --device cuda:0 --from 2026-06-01T09:00:00Z --to 2026-06-01T17:00:00Z",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if lane == "" && device == "" {
				return &commandLineError{"name what to book: --lane NAME or --device D"}
			}
			now := time.Now()
			start, err := bookings.ParseTime(from, now)
			if err != nil {
				return &UsageError{"--from: " + trimInvalid(err)}
			}
			end, err := bookings.ParseTime(to, now)
			if err != nil {
				return &UsageError{"--to: " + trimInvalid(err)}
			}
			return withBookings(*cfg, func(svc *bookings.Service, names laneNames) error {
				b, err := svc.Book(context.Background(), bookings.NewBooking{Lane: lane, Device: device, Model: model, Start: start, End: end})
				if err != nil {
					return bookingsUsage(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "booked %s: %s from %s to %s (%s)\n", b.ID, names.target(b),
					b.Start.Local().Format(time.DateTime), b.End.Local().Format(time.DateTime), b.State)
				return nil
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&lane, "lane", "", "the lane to book")
	fs.StringVar(&device, "device", "", "the device to book whole (with --lane: the device the lane is on)")
	fs.StringVar(&model, "model", "", "the model to load on the lane at the start")
	fs.StringVar(&from, "from", "", "when the booking starts: RFC 3339, \"now\" or \"+2h\"")
	fs.StringVar(&to, "to", "", "when it ends: RFC 3339 or \"+2h\" (from now)")
	return cmd
}

func newBookingsListCommand(cfg *Config) *cobra.Command {
	var all bool
	var state string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "list the bookings not ended yet (--all: every one)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withBookings(*cfg, func(svc *bookings.Service, names laneNames) error {
				q := bookings.ListQuery{All: true, Current: !all}
				if state != "" {
					q.States = strings.Split(state, ",")
				}
				list, err := svc.List(context.Background(), q)
				if err != nil {
					return err
				}
				printBookings(cmd.OutOrStdout(), list, names)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "list ended, rejected and cancelled bookings too")
	cmd.Flags().StringVar(&state, "state", "", "only these states, comma-separated: pending, approved, rejected, cancelled, ended")
	return cmd
}

func newBookingsDecideCommand(cfg *Config, verb string, fn func(*bookings.Service, context.Context, string) (bookings.Booking, error)) *cobra.Command {
	return &cobra.Command{
		Use:   verb + " ID...",
		Short: verb + " bookings",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return &commandLineError{fmt.Sprintf("name the booking to %s: superfluid bookings %s ID (superfluid bookings list shows them)", verb, verb)}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return withBookings(*cfg, func(svc *bookings.Service, names laneNames) error {
				for _, id := range args {
					b, err := fn(svc, context.Background(), id)
					if err != nil {
						return bookingsUsage(err)
					}
					fmt.Fprintf(cmd.OutOrStdout(), "%s: %s (%s)\n", b.ID, b.State, names.target(b))
				}
				return nil
			})
		},
	}
}

// withBookings opens the catalog (a booking's model must be registered) and runs fn on a
// bookings service over its database, with the lanes' names by id for what it prints.
func withBookings(cfg Config, fn func(*bookings.Service, laneNames) error) error {
	return withLibrary(cfg, func(l *library) error {
		st := l.store
		svc, err := newBookings(st, bookings.Policy{}, auditBookings(people.New(people.Config{Store: st}), true), l.svc)
		if err != nil {
			return err
		}
		stored, err := st.Lanes(context.Background())
		if err != nil {
			return err
		}
		names := laneNames{}
		for _, l := range stored {
			names[l.ID] = l.Name
		}
		return fn(svc, names)
	})
}

// laneNames are the lanes' names by id (a booking keeps the id; a removed lane shows its id).
type laneNames map[string]string

func (n laneNames) target(b bookings.Booking) string {
	if b.WholeDevice() {
		return "device " + b.Device
	}
	name := n[b.Lane]
	if name == "" {
		name = b.Lane
	}
	t := "lane " + name
	if b.Model != "" {
		t += " with " + b.Model
	}
	return t
}

// bookingsUsage makes a refused window and an unknown lane or booking exit with code 2; the
// other refusals (a conflict, a quota, a booking in the wrong state) say what happened and exit
// with 1.
func bookingsUsage(err error) error {
	var se *llm.StatusError
	switch {
	case errors.Is(err, llm.ErrInvalidInput):
		return &UsageError{trimInvalid(err)}
	case errors.As(err, &se) && se.Status == http.StatusNotFound:
		return &UsageError{se.Message}
	}
	return err
}

func trimInvalid(err error) string {
	return strings.TrimPrefix(err.Error(), llm.ErrInvalidInput.Error()+": ")
}

// printBookings writes the bookings as a table.
func printBookings(w io.Writer, list []bookings.Booking, names laneNames) {
	if len(list) == 0 {
		fmt.Fprintln(w, "no bookings; make one with superfluid bookings add --lane NAME --from now --to +2h")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPERSON\tBOOKED\tFROM\tTO\tSTATE\tDECIDED BY")
	for _, b := range list {
		decided := "-"
		if b.DecidedBy != "" {
			decided = b.DecidedBy
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", b.ID, b.PersonName, names.target(b),
			b.Start.Local().Format(time.DateTime), b.End.Local().Format(time.DateTime), b.State, decided)
	}
	tw.Flush()
}
