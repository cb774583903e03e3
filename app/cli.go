package app

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/superfluid/superfluid/runtime/models"
)

// Main runs the command line and returns the exit code: 0 on success, 2 for a usage error (an
// unknown command, a bad flag, a wrong number of arguments, a bad model path), 1 otherwise.
func Main(args []string, stdout, stderr io.Writer) int {
	root := newRootCommand()
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetArgs(args[1:])
	cmd, err := root.ExecuteC()
	return exitCode(cmd, err, stderr)
}

// newRootCommand builds the whole command tree. A new subcommand is one constructor in its own
// cmd_NAME.go file, added to the list below.
func newRootCommand() *cobra.Command {
	desktopCfg, hidden := DefaultConfig(), false
	root := &cobra.Command{
		Use:   "superfluid",
		Short: "a local LLM server speaking the OpenAI, Anthropic and Ollama APIs",
		Long: `superfluid — a local LLM server speaking the OpenAI, Anthropic and Ollama APIs
on one listener (127.0.0.1:8453 by default).

With no command it starts the desktop app: a tray icon and a window (models, downloads,
server, playground) over the same server superfluid serve runs. Without a display it runs
the server alone.`,
		// Args runs instead of cobra's own unknown-command check so that the error is typed.
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			msg := fmt.Sprintf("unknown command %q", args[0])
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += fmt.Sprintf(" (did you mean %q?)", s[0])
			}
			return &commandLineError{msg}
		},
		// No command: the desktop app (or, with no display, the server alone).
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDesktop(cmd, desktopCfg, hidden)
		},
		SilenceErrors:     true, // exitCode prints them
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	desktopFlags(root, &desktopCfg, &hidden)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &commandLineError{err.Error()} })
	root.AddCommand(
		newServeCommand(),
		newBenchCommand(),
		newWorkerCommand(),
		newListCommand(),
		newPullCommand(),
		newAddCommand(),
		newRemoveCommand(),
		newKeysCommand(),
		newLanesCommand(),
		newUsersCommand(),
		newUsageCommand(),
		newBookingsCommand(),
		newPrefixesCommand(),
	)
	return root
}

// commandLineError is a malformed command line: an unknown command or flag, a bad flag value,
// a wrong number of arguments. It exits with code 2 and a hint to run --help.
type commandLineError struct{ msg string }

func (e *commandLineError) Error() string { return e.msg }

// exitCode reports err (from cmd, the command that ran) on stderr and maps it to the exit code.
func exitCode(cmd *cobra.Command, err error, stderr io.Writer) int {
	var cle *commandLineError
	var ue *UsageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &cle):
		path := "superfluid"
		if cmd != nil {
			path = cmd.CommandPath()
		}
		fmt.Fprintf(stderr, "superfluid: %s\nrun \"%s --help\" for usage\n", cle.msg, path)
		return 2
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "superfluid: %s\n", ue.msg)
		return 2
	default:
		fmt.Fprintf(stderr, "superfluid: %v\n", err)
		return 1
	}
}

// modelArgs accepts between min and max positional MODEL arguments (flags may come before or
// after them).
func modelArgs(min, max int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) < min:
			return &commandLineError{fmt.Sprintf("no model given; pass the path of a .gguf file: %s path/to/model.gguf", cmd.CommandPath())}
		case len(args) > max && max == 1:
			return &commandLineError{fmt.Sprintf("expected one model, got %d: %q", len(args), args)}
		case len(args) > max:
			return &commandLineError{fmt.Sprintf("expected at most %d arguments, got %d: %q", max, len(args), args)}
		}
		return nil
	}
}

// noArgs refuses positional arguments.
func noArgs(cmd *cobra.Command, args []string) error {
	return modelArgs(0, 0)(cmd, args)
}

// serverFlags declares the flags shared by serve and bench on fs.
func serverFlags(fs *pflag.FlagSet, cfg *Config) {
	fs.StringVar(&cfg.Host, "host", cfg.Host, "address to listen on")
	fs.IntVar(&cfg.Port, "port", cfg.Port, "port to listen on")
	fs.IntVar(&cfg.ContextLength, "ctx", cfg.ContextLength, "context window per request in tokens (0 = the model's, at most 4096)")
	fs.IntVar(&cfg.Parallel, "parallel", cfg.Parallel, "requests decoded together (lanes)")
	fs.IntVar(&cfg.Threads, "threads", cfg.Threads, "CPU threads (0 = chosen from the model size)")
	fs.IntVar(&cfg.MaxTokens, "max-tokens", cfg.MaxTokens, "default completion cap (0 = fill the context)")
	speculativeFlags(fs, cfg)
	fs.IntVar(&cfg.Queue, "queue", cfg.Queue, "requests that may wait for a lane; beyond it the answer is 429 (0 = unbounded)")
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "where the server keeps its data")
	fs.IntVar(&cfg.RecordsDays, "records-days", cfg.RecordsDays, "days the request records are kept; older ones are pruned in the background (0 = forever)")
	fs.Var(bytesFlag{&cfg.FilesMaxBytes}, "files-max-bytes", `bytes the uploaded files and batch results may take, e.g. "10GB"; past it uploads get 413 (0 = no cap)`)
	fs.DurationVar(&cfg.FilesExpiry, "files-expiry", cfg.FilesExpiry, `how long files are kept, e.g. "720h" (0 = until deleted)`)
	fs.IntVar(&cfg.CompletionBurst, "completion-burst", cfg.CompletionBurst, "fill-in-the-middle requests a client may send at once (0 = no limit)")
	fs.Var(rateFlag{&cfg.CompletionRate}, "completion-rate", "fill-in-the-middle requests per second a client's allowance refills at (above 0)")
	fs.Var(millis{&cfg.CompletionDeadline}, "completion-deadline-ms", "cut fill-in-the-middle generations after this many milliseconds (0 = none)")
	fs.Var(keepAliveFlag{&cfg.ModelKeepAlive}, "keep-alive", `how long an idle model stays loaded: "5m", seconds, 0 (unload after each request) or -1 (never unload)`)
	fs.IntVar(&cfg.MaxLoaded, "max-loaded", cfg.MaxLoaded, "models loaded at once; loading one more evicts the least recently used idle model (0 = no bound)")
	fs.Var(bytesFlag{&cfg.MemoryBudget}, "memory-budget", `RAM the loaded models may take, e.g. "12GB" (0 = three quarters of the RAM available at start)`)
	fs.Var(proxiesFlag{&cfg.TrustedProxies}, "trusted-proxies", "reverse proxies (addresses or CIDR ranges, comma-separated) whose X-Forwarded-For names the client; by default the header is ignored")
	kvDiskFlag(fs, cfg)
	mediaFlags(fs, cfg)
	accessFlags(fs, cfg)
	qosFlags(fs, cfg)
	libraryFlags(fs, cfg)
}

// libraryFlags declares the flags of every command that touches the model library.
func libraryFlags(fs *pflag.FlagSet, cfg *Config) {
	if fs.Lookup("data-dir") == nil {
		fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "where the server keeps its data")
	}
	fs.StringVar(&cfg.ModelsDir, "models-dir", cfg.ModelsDir, "where models are stored (default: the folder the desktop app moved them to, else DATA-DIR/models)")
	fs.StringVar(&cfg.HFEndpoint, "hf-endpoint", cfg.HFEndpoint, "Hugging Face base URL ($HF_ENDPOINT); the token comes from $HF_TOKEN and is sent only to this host")
}

// keepAliveFlag is a keep-alive in Ollama's syntax; negative means forever.
type keepAliveFlag struct{ d *time.Duration }

func (k keepAliveFlag) String() string {
	if k.d == nil {
		return "5m0s"
	}
	if *k.d < 0 {
		return "-1"
	}
	return k.d.String()
}

func (k keepAliveFlag) Set(v string) error {
	d, err := models.ParseKeepAlive(strconv.AppendQuote(nil, v))
	if err != nil || d == nil {
		return fmt.Errorf(`want a duration such as "5m", seconds, 0 or -1, got %q`, v)
	}
	*k.d = *d
	return nil
}

func (k keepAliveFlag) Type() string { return "duration" }

// bytesFlag is a size such as "12GB" or "512MiB".
type bytesFlag struct{ n *int64 }

func (b bytesFlag) String() string {
	if b.n == nil || *b.n == 0 {
		return "0"
	}
	return humanize.Bytes(uint64(*b.n))
}

func (b bytesFlag) Set(v string) error {
	n, err := humanize.ParseBytes(v)
	if err != nil || n > math.MaxInt64 {
		return fmt.Errorf(`want a size such as "12GB" or "512MiB", got %q`, v)
	}
	*b.n = int64(n)
	return nil
}

func (b bytesFlag) Type() string { return "size" }

// rateFlag is a rate per second above 0: a rate of 0 would never refill a client's allowance.
type rateFlag struct{ r *float64 }

func (f rateFlag) String() string {
	if f.r == nil {
		return "0"
	}
	return strconv.FormatFloat(*f.r, 'g', -1, 64)
}

func (f rateFlag) Set(v string) error {
	r, err := strconv.ParseFloat(v, 64)
	if err != nil || !(r > 0) || math.IsInf(r, 1) {
		return fmt.Errorf("want a number of requests per second above 0, got %q (to turn the limit off, pass --completion-burst 0)", v)
	}
	*f.r = r
	return nil
}

func (f rateFlag) Type() string { return "float" }

// proxiesFlag is a comma-separated list of IP addresses and CIDR ranges; it may be repeated.
type proxiesFlag struct{ list *[]string }

func (f proxiesFlag) String() string {
	if f.list == nil {
		return ""
	}
	return strings.Join(*f.list, ",")
}

func (f proxiesFlag) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		_, perr := netip.ParsePrefix(p)
		addr, aerr := netip.ParseAddr(p)
		if perr != nil && (aerr != nil || addr.Zone() != "") {
			return fmt.Errorf("want IP addresses or CIDR ranges such as 127.0.0.1 or 10.0.0.0/8, got %q", p)
		}
		*f.list = append(*f.list, p)
	}
	return nil
}

func (f proxiesFlag) Type() string { return "CIDRs" }

// millis is a time.Duration flag given in whole milliseconds.
type millis struct{ d *time.Duration }

func (m millis) String() string {
	if m.d == nil {
		return "0"
	}
	return strconv.FormatInt(m.d.Milliseconds(), 10)
}

func (m millis) Set(v string) error {
	ms, err := strconv.Atoi(v)
	if err != nil || ms < 0 {
		return fmt.Errorf("want a whole number of milliseconds, got %q", v)
	}
	*m.d = time.Duration(ms) * time.Millisecond
	return nil
}

func (m millis) Type() string { return "int" }
