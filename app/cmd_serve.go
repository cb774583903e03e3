package app

import (
	"context"
	"fmt"
	"io"
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
		Use:   "serve [MODEL]",
		Short: "serve the model catalog on 127.0.0.1:8453 (headless)",
		Long: `Serve the OpenAI, Anthropic and Ollama APIs on one listener, without the desktop app.
Every model in the catalog (superfluid list) loads when a request names it. MODEL, when given,
is loaded at start: a catalog id, the path of a .gguf file (registered in place; its id is the
file name without .gguf) or a Hugging Face reference such as hf.co/OWNER/REPO:QUANT (pulled
first when it is not in the catalog).`,
		Args: modelArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cfg.Projector != "" && len(args) == 0 {
				return &commandLineError{"--mmproj is the projector of the model serve loads: superfluid serve MODEL --mmproj FILE"}
			}
			if len(args) == 1 {
				cfg.ModelPath = args[0]
				if err := pullIfMissing(cfg, cmd.ErrOrStderr()); err != nil {
					return err
				}
			}
			defer installRuntimeLog(&cfg, cmd.ErrOrStderr(), verbose)()
			return serve(cmd, cfg)
		},
	}
	serverFlags(cmd.Flags(), &cfg)
	teamFlags(cmd.Flags(), &cfg)
	webFlag(cmd.Flags(), &cfg)
	cmd.Flags().StringVar(&cfg.Projector, "mmproj", "", "the model's multimodal projector GGUF (images, audio); by default one beside the model that fits it")
	cmd.Flags().BoolVar(&verbose, "verbose", false, "show llama.cpp's log (the worker's stderr); failures quote its last line either way")
	return cmd
}

// pullIfMissing pulls a Hugging Face reference that is not in the catalog yet.
func pullIfMissing(cfg Config, out io.Writer) error {
	if looksLikePath(cfg.ModelPath) || !isReference(cfg.ModelPath) {
		return nil
	}
	model := cfg.ModelPath
	cfg.ModelPath = ""
	return withLibrary(cfg, func(a *library) error {
		// A bad --api-key or --key-policy fails here, before any download, as the server's
		// start would fail on it after one.
		keys, err := openKeys(cfg, a.store)
		if err != nil {
			return err
		}
		keys.Close()
		if _, err := a.mgr.Catalog().Lookup(model); err == nil {
			return nil
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		fmt.Fprintf(out, "superfluid: %s is not in the catalog; pulling it\n", model)
		_, err = a.Pull(ctx, model, out)
		return err
	})
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
	wl, err := listenWeb(cfg)
	if err != nil {
		return err
	}
	a, err := New(cfg)
	if err != nil {
		if wl != nil {
			wl.Close()
		}
		return err
	}
	defer a.Close()
	what := "1 model"
	if n := len(a.mgr.Catalog().List()); n != 1 {
		what = fmt.Sprintf("%d models", n)
	}
	if a.preload != nil {
		what += ", loading " + a.preload.ID
	}
	a.exposureNote(cmd.ErrOrStderr(), l.Addr())
	a.teamNote(cmd.ErrOrStderr())
	fmt.Fprintf(cmd.ErrOrStderr(), "superfluid: serving %s on http://%s (data in %s)\n", what, l.Addr(), cfg.DataDir)
	if wl != nil {
		c := newController(a)
		defer c.Close()
		web, err := a.startWeb(wl, c)
		if err != nil {
			wl.Close()
			return err
		}
		defer web.Close()
		web.note(cmd.ErrOrStderr())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return a.Serve(ctx, l)
}
