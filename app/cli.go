package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

const usage = `superfluid — a local LLM server speaking the OpenAI API

usage:
  superfluid serve [flags] MODEL.gguf   serve a model on 127.0.0.1:8453
  superfluid bench [flags] MODEL.gguf   measure decode and prefill speed, API vs engine

run "superfluid serve -h" for the flags
`

// Main runs the command line and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) < 2 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[1] {
	case "serve":
		err = serveCommand(args[2:], stderr)
	case "worker":
		err = workerCommand(args[2:], stdout, stderr)
	case "bench":
		err = benchCommand(args[2:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "superfluid: unknown command %q\n\n%s", args[1], usage)
		return 2
	}
	var ue *UsageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "superfluid: %s\n", ue.msg)
		return 2
	default:
		fmt.Fprintf(stderr, "superfluid: %v\n", err)
		return 1
	}
}

// serverFlags declares the flags shared by serve and bench on fs.
func serverFlags(fs *flag.FlagSet, cfg *Config) {
	fs.StringVar(&cfg.Host, "host", cfg.Host, "address to listen on")
	fs.IntVar(&cfg.Port, "port", cfg.Port, "port to listen on")
	fs.IntVar(&cfg.ContextLength, "ctx", cfg.ContextLength, "context window per request in tokens (0 = the model's, at most 4096)")
	fs.IntVar(&cfg.Parallel, "parallel", cfg.Parallel, "requests decoded together (lanes)")
	fs.IntVar(&cfg.Threads, "threads", cfg.Threads, "CPU threads (0 = chosen from the model size)")
	fs.IntVar(&cfg.MaxTokens, "max-tokens", cfg.MaxTokens, "default completion cap (0 = fill the context)")
	fs.IntVar(&cfg.Queue, "queue", cfg.Queue, "requests that may wait for a lane; beyond it the answer is 429 (0 = unbounded)")
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "where the server keeps its data")
	fs.IntVar(&cfg.CompletionBurst, "completion-burst", cfg.CompletionBurst, "fill-in-the-middle requests a client may send at once (0 = no limit)")
	fs.Float64Var(&cfg.CompletionRate, "completion-rate", cfg.CompletionRate, "fill-in-the-middle requests per second a client's allowance refills at")
	fs.Func("completion-deadline-ms", "cut fill-in-the-middle generations after this many milliseconds (0 = none)", func(v string) error {
		ms, err := strconv.Atoi(v)
		if err != nil || ms < 0 {
			return fmt.Errorf("want a whole number of milliseconds, got %q", v)
		}
		cfg.CompletionDeadline = time.Duration(ms) * time.Millisecond
		return nil
	})
}

// parseWithModel parses flags placed before or after the one positional MODEL argument.
func parseWithModel(fs *flag.FlagSet, args []string) (string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return "", err
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	switch len(positional) {
	case 0:
		return "", &UsageError{"no model given; pass the path of a .gguf file: superfluid " + fs.Name() + " path/to/model.gguf"}
	case 1:
		return positional[0], nil
	default:
		return "", &UsageError{fmt.Sprintf("expected one model, got %d: %v", len(positional), positional)}
	}
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func serveCommand(args []string, stderr io.Writer) error {
	cfg := DefaultConfig()
	fs := newFlagSet("serve", stderr)
	serverFlags(fs, &cfg)
	verbose := fs.Bool("verbose", false, "show llama.cpp's log (the worker's stderr); failures quote its last line either way")
	model, err := parseWithModel(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		var ue *UsageError
		if errors.As(err, &ue) {
			return err
		}
		return &UsageError{err.Error()}
	}
	cfg.ModelPath = model
	if *verbose {
		cfg.WorkerLog = stderr
	}
	a, err := New(cfg)
	if err != nil {
		return err
	}
	defer a.Close()
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another server using the port? pass --port)", addr, err)
	}
	fmt.Fprintf(stderr, "superfluid: serving %s on http://%s (data in %s)\n", cfg.ModelPath, addr, cfg.DataDir)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return a.Serve(ctx, l)
}
