package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/superfluid/superfluid/runtime/backends"
	"github.com/superfluid/superfluid/server/lanes"
	"github.com/superfluid/superfluid/server/people"
	"github.com/superfluid/superfluid/server/store"
)

// newLanesCommand is `superfluid lanes add|list|switch|rm`: team mode's lanes, stored in the
// data directory. A server started later serves them; one running now keeps the lanes it
// started with (its admin API, /v1/admin/lanes, changes them live).
func newLanesCommand() *cobra.Command {
	cfg := DefaultConfig()
	cmd := &cobra.Command{
		Use:   "lanes",
		Short: "add, list, switch and remove team mode's lanes",
		Long: `A lane is a named slot on a device (the CPU, a GPU) that serves one model at a time
through an engine: local (the built-in llama.cpp worker), openai (any OpenAI-compatible server
at a URL: vLLM, SGLang, llama-server, Ollama's /v1, another superfluid) or command (a server
process superfluid starts and supervises). Team mode (superfluid serve --team) routes requests
to lanes by their model field. Changes made here reach a server when it starts; a running
server's lanes change through its admin API (/v1/admin/lanes).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return &commandLineError{fmt.Sprintf("unknown lanes command %q: use add, list, switch or rm", args[0])}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return &commandLineError{"name a lanes command: superfluid lanes add NAME ..., lanes list, lanes switch NAME MODEL or lanes rm NAME"}
		},
	}
	cmd.PersistentFlags().StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "where the server keeps its data")
	cmd.AddCommand(newLanesAddCommand(&cfg), newLanesListCommand(&cfg), newLanesSwitchCommand(&cfg), newLanesRemoveCommand(&cfg))
	return cmd
}

func newLanesAddCommand(cfg *Config) *cobra.Command {
	var n lanes.NewLane
	var engine, keyFile string
	var headerTimeout, idleTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "add NAME --device D --engine local|openai|command --model M",
		Short: "add a lane",
		Long: `Add a lane named NAME on device D (superfluid lanes list shows the devices) serving
model M through the engine: a model of the catalog for local; the upstream's model name for
openai (with --url, and --upstream-key-file for its key, stored write-only); what the
command template's {model} becomes for command (with --command).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return &commandLineError{"name the lane: superfluid lanes add NAME --device D --engine local|openai|command --model M"}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			n.Name, n.Engine = args[0], lanes.Kind(engine)
			n.Config.HeaderTimeout, n.Config.IdleTimeout = wholeSeconds(headerTimeout), wholeSeconds(idleTimeout)
			if keyFile != "" {
				b, err := os.ReadFile(keyFile)
				if err != nil {
					return &UsageError{"--upstream-key-file: " + err.Error()}
				}
				n.UpstreamKey = strings.TrimSpace(string(b))
			}
			return withLanes(*cfg, func(m *lanes.Manager) error {
				st, err := m.Add(context.Background(), n)
				if err != nil {
					return lanesUsage(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "added lane %s (%s): %s on %s, engine %s\n", st.Name, st.ID, st.Model, st.Device, st.Engine)
				return nil
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&n.Device, "device", "", "the device: cpu, cuda:0, ... (an openai lane may leave it out: remote)")
	fs.StringVar(&engine, "engine", "", "local, openai or command")
	fs.StringVar(&n.Model, "model", "", "the model the lane serves")
	fs.StringVar(&n.Config.URL, "url", "", "an openai engine's base URL (http://host:8000/v1)")
	fs.StringVar(&keyFile, "upstream-key-file", "", "a file holding the key an openai engine is sent (stored write-only)")
	fs.StringVar(&n.Config.Command, "command", "", `a command engine's command line, with {model} and {port} ("vllm serve {model} --port {port}")`)
	fs.StringVar(&n.Config.ServedModel, "served-model", "", "the name the engine serves the model by, when it is not the model's")
	fs.DurationVar(&headerTimeout, "header-timeout", 0, "how long an openai or command engine may take to start a reply (default 10m: a long prefill)")
	fs.DurationVar(&idleTimeout, "idle-timeout", 0, "how long an openai or command engine may send nothing once a reply started (default 1m)")
	return cmd
}

func newLanesListCommand(cfg *Config) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "list the lanes and the machine's devices",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withLanes(*cfg, func(m *lanes.Manager) error {
				all, err := m.List(context.Background())
				if err != nil {
					return err
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "NAME\tID\tDEVICE\tENGINE\tMODEL\tUPSTREAM\tKEY")
				for _, l := range all {
					up := l.Config.URL + l.Config.Command
					if up == "" {
						up = "-"
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", l.Name, l.ID, l.Device, l.Engine, l.Model, up,
						map[bool]string{true: "stored", false: "-"}[l.HasKey])
				}
				if err := w.Flush(); err != nil {
					return err
				}
				var names []string
				for _, d := range lanes.Devices(backends.Detect()) {
					names = append(names, d.Name)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "devices: %s (and %s for an openai lane)\n", strings.Join(names, ", "), lanes.Remote)
				return nil
			})
		},
	}
}

func newLanesSwitchCommand(cfg *Config) *cobra.Command {
	return &cobra.Command{
		Use:   "switch NAME MODEL",
		Short: "point a lane at another model",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return &commandLineError{"name the lane and the model: superfluid lanes switch NAME MODEL"}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return withLanes(*cfg, func(m *lanes.Manager) error {
				st, err := m.Switch(context.Background(), args[0], args[1])
				if err != nil {
					return lanesUsage(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "lane %s now serves %s\n", st.Name, st.Model)
				return nil
			})
		},
	}
}

func newLanesRemoveCommand(cfg *Config) *cobra.Command {
	return &cobra.Command{
		Use:   "rm NAME",
		Short: "remove a lane",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return &commandLineError{"name the lane: superfluid lanes rm NAME"}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return withLanes(*cfg, func(m *lanes.Manager) error {
				if err := m.Remove(context.Background(), args[0]); err != nil {
					return lanesUsage(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "removed lane %s\n", args[0])
				return nil
			})
		},
	}
}

// withLanes runs fn on a manager of the stored lanes that starts no engine, checking local
// models against the catalog.
func withLanes(cfg Config, fn func(*lanes.Manager) error) error {
	return withLibrary(cfg, func(l *library) error {
		return fn(lanes.NewManager(lanes.Config{Store: l.store, Devices: lanes.Devices(backends.Detect()), Catalog: l.svc,
			Audit: auditLanes(people.New(people.Config{Store: l.store}), true)})) // audited as the CLI's (team_follow.go)
	})
}

// wholeSeconds is d in seconds as a lane keeps its timeouts, rounded up (1ms is 1s, not the
// default); a negative d stays negative, for the manager to refuse.
func wholeSeconds(d time.Duration) int {
	switch {
	case d < 0:
		return -1
	case d == 0:
		return 0
	}
	return int((d + time.Second - 1) / time.Second)
}

// lanesUsage makes complaints about what the user typed exit with code 2.
func lanesUsage(err error) error {
	for _, e := range []error{lanes.ErrLaneExists, lanes.ErrLaneNotFound, lanes.ErrUnknownDevice, lanes.ErrUnknownEngine,
		lanes.ErrUnknownModel, lanes.ErrInvalidLane, store.ErrNotFound} {
		if errors.Is(err, e) {
			return &UsageError{err.Error()}
		}
	}
	return err
}
