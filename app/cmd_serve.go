package app

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"
)

// newServeCommand is `superfluid serve [MODEL.gguf]`: the server without the desktop app.
func newServeCommand() *cobra.Command {
	cfg := DefaultConfig()
	var verbose bool
	cmd := &cobra.Command{
		Use:   "serve [MODEL.gguf]",
		Short: "serve a model on 127.0.0.1:8453 (headless)",
		Long: `Serve the OpenAI, Anthropic and Ollama APIs on one listener, without the desktop app.
MODEL is the path of a .gguf file; its id is the file name without .gguf.`,
		Args: modelArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				cfg.ModelPath = args[0]
			}
			if verbose {
				cfg.WorkerLog = cmd.ErrOrStderr()
			}
			return serve(cmd, cfg)
		},
	}
	serverFlags(cmd.Flags(), &cfg)
	cmd.Flags().BoolVar(&verbose, "verbose", false, "show llama.cpp's log (the worker's stderr); failures quote its last line either way")
	return cmd
}

// serve listens first (a port in use fails before any worker starts), then runs the app until
// SIGINT or SIGTERM.
func serve(cmd *cobra.Command, cfg Config) error {
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another server using the port? pass --port)", addr, err)
	}
	defer l.Close()
	a, err := New(cfg)
	if err != nil {
		return err
	}
	defer a.Close()
	fmt.Fprintf(cmd.ErrOrStderr(), "superfluid: serving %s on http://%s (data in %s)\n", cfg.ModelPath, l.Addr(), cfg.DataDir)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return a.Serve(ctx, l)
}
