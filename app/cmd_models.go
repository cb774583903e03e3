package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models"
)

// newListCommand is `superfluid list`: the catalog.
func newListCommand() *cobra.Command {
	cfg := DefaultConfig()
	cmd := &cobra.Command{
		Use:   "list",
		Short: "list the models in the catalog",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withLibrary(cfg, func(a *library) error {
				printModels(cmd.OutOrStdout(), a.mgr.Catalog().List())
				return nil
			})
		},
	}
	libraryFlags(cmd.Flags(), &cfg)
	return cmd
}

// printModels writes the catalog as a table.
func printModels(w io.Writer, entries []*models.Entry) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSIZE\tQUANT\tPARAMS\tCONTEXT\tSOURCE\tADDED\tLAST USED")
	for _, e := range entries {
		source := e.Source
		switch {
		case e.Missing():
			source += " (file missing)"
		case e.Err != nil:
			source += " (damaged)"
		}
		used := "never"
		if !e.LastUsedAt.IsZero() {
			used = humanize.Time(e.LastUsedAt)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", e.ID, humanize.Bytes(uint64(e.Size)), e.Quantization,
			paramCount(e.ParameterCount), e.ContextLength, source, humanize.Time(e.AddedAt), used)
	}
	tw.Flush()
}

func paramCount(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	default:
		return fmt.Sprintf("%.0fK", float64(n)/1e3)
	}
}

// newRemoveCommand is `superfluid rm ID...`.
func newRemoveCommand() *cobra.Command {
	cfg := DefaultConfig()
	cmd := &cobra.Command{
		Use:   "rm ID...",
		Short: "remove models from the catalog (their files too, when superfluid downloaded them)",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return &commandLineError{"name the model to remove: superfluid rm ID (superfluid list shows the ids)"}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return withLibrary(cfg, func(a *library) error {
				for _, id := range args {
					m, err := a.svc.DeleteModel(context.Background(), id)
					if err != nil {
						return usageIfBadName(err)
					}
					fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", m.ID)
				}
				return nil
			})
		},
	}
	libraryFlags(cmd.Flags(), &cfg)
	return cmd
}

// newAddCommand is `superfluid add PATH.gguf`: register a file in place.
func newAddCommand() *cobra.Command {
	cfg := DefaultConfig()
	var name string
	cmd := &cobra.Command{
		Use:   "add PATH.gguf",
		Short: "register a local GGUF file in the catalog (it is not copied)",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return &commandLineError{"pass one .gguf file: superfluid add path/to/model.gguf [--name ID]"}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return withLibrary(cfg, func(a *library) error {
				e, err := a.mgr.Catalog().AddLocal(context.Background(), args[0], name)
				if err != nil {
					if errors.Is(err, models.ErrNotModel) || errors.Is(err, os.ErrNotExist) {
						return &UsageError{fmt.Sprintf("%s cannot be added: %v", args[0], err)}
					}
					return usageIfBadName(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "added %s (%s, %s, %s)\n", e.ID, e.Architecture, e.Quantization, humanize.Bytes(uint64(e.Size)))
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "the model's id (default: the file name without .gguf)")
	libraryFlags(cmd.Flags(), &cfg)
	return cmd
}

// usageIfBadName makes errors about what the user typed exit with code 2.
func usageIfBadName(err error) error {
	if errors.Is(err, llm.ErrInvalidInput) || errors.Is(err, llm.ErrModelNotFound) {
		return &UsageError{strings.TrimPrefix(strings.TrimPrefix(err.Error(), "invalid input: "), "model not found: ")}
	}
	return err
}
