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
				printModels(cmd.OutOrStdout(), a.mgr.Catalog())
				return nil
			})
		},
	}
	libraryFlags(cmd.Flags(), &cfg)
	return cmd
}

// printModels writes the catalog as a table: each model with what it takes besides text, then
// its LoRA adapters indented under it; adapters of no known model come last.
func printModels(w io.Writer, cat *models.Catalog) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSIZE\tQUANT\tPARAMS\tCONTEXT\tINPUT\tSOURCE\tADDED\tLAST USED")
	listed := map[string]bool{}
	for _, e := range cat.List() {
		printEntry(tw, e, e.ID, inputColumn(e))
		if e.IsAlias() {
			continue // its adapters are listed under the model it copies
		}
		for _, a := range cat.Adapters(e.ID) {
			listed[a.ID] = true
			printEntry(tw, a, "  └ "+a.ID, "lora")
		}
	}
	for _, a := range cat.Adapters("") {
		if !listed[a.ID] {
			printEntry(tw, a, a.ID+" (adapter, base unknown)", "lora")
		}
	}
	tw.Flush()
}

// printEntry writes one row of the catalog table.
func printEntry(tw io.Writer, e *models.Entry, name, input string) {
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
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", name, humanize.Bytes(uint64(e.Size)), e.Quantization,
		paramCount(e.ParameterCount), e.ContextLength, input, source, humanize.Time(e.AddedAt), used)
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
	var req models.AddRequest
	cmd := &cobra.Command{
		Use:   "add PATH.gguf",
		Short: "register a local GGUF file in the catalog (it is not copied)",
		Long: `Register a local GGUF file in the catalog, in place. A model's multimodal projector
(an mmproj-*.gguf beside it that fits it) is found and registered with it, or named with
--mmproj. A LoRA adapter (a GGUF whose general.type is adapter) is registered as an adapter of
the catalog model it fits, or of the one --base names.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return &commandLineError{"pass one .gguf file: superfluid add path/to/model.gguf [--name ID] [--mmproj FILE] [--base ID]"}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Path = args[0]
			return withLibrary(cfg, func(a *library) error {
				e, err := a.mgr.Catalog().Add(context.Background(), req)
				if err != nil {
					if errors.Is(err, models.ErrNotModel) || errors.Is(err, os.ErrNotExist) {
						return &UsageError{fmt.Sprintf("%s cannot be added: %v", args[0], err)}
					}
					return usageIfBadName(err)
				}
				printAdded(cmd.OutOrStdout(), a.mgr.Catalog(), e)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&req.ID, "name", "", "the model's id (default: the file name without .gguf)")
	cmd.Flags().StringVar(&req.Projector, "mmproj", "", "the model's multimodal projector GGUF (default: one beside the model that fits it)")
	cmd.Flags().StringVar(&req.Base, "base", "", "for a LoRA adapter: the id of the catalog model it applies to (default: the one it fits)")
	libraryFlags(cmd.Flags(), &cfg)
	return cmd
}

// printAdded says what add registered: the model and what its projector encodes, or the
// adapter and its base model.
func printAdded(w io.Writer, cat *models.Catalog, e *models.Entry) {
	if e.IsAdapter() {
		base := e.BaseModel
		if base == "" {
			base = "no known model (several or none fit it; name one with --base)"
		}
		fmt.Fprintf(w, "added LoRA adapter %s (%s, %s) of %s\n", e.ID, e.Architecture, humanize.Bytes(uint64(e.Size)), base)
		return
	}
	fmt.Fprintf(w, "added %s (%s, %s, %s)\n", e.ID, e.Architecture, e.Quantization, humanize.Bytes(uint64(e.Size)))
	if e.Projector != "" {
		fmt.Fprintf(w, "  projector %s: %s\n", e.Projector, inputColumn(e))
	}
}

// inputs are what a model takes besides text: "vision", "audio".
func inputs(e *models.Entry) []string {
	var out []string
	if e.Facts.Vision {
		out = append(out, models.CapabilityVision)
	}
	if e.Facts.Audio {
		out = append(out, models.CapabilityAudio)
	}
	return out
}

// inputColumn is what the model takes: "text", "text+vision", ...
func inputColumn(e *models.Entry) string {
	if e.Projector != "" && e.Facts.ProjectorErr != nil {
		return "text (projector unreadable)"
	}
	return strings.Join(append([]string{"text"}, inputs(e)...), "+")
}

// usageIfBadName makes errors about what the user typed exit with code 2.
func usageIfBadName(err error) error {
	if errors.Is(err, llm.ErrInvalidInput) || errors.Is(err, llm.ErrModelNotFound) {
		return &UsageError{strings.TrimPrefix(strings.TrimPrefix(err.Error(), "invalid input: "), "model not found: ")}
	}
	return err
}
