package app

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/superfluid/superfluid/assets"
	"github.com/superfluid/superfluid/bench"
)

// newBenchCommand is `superfluid bench MODEL.gguf`: the benchmark suites (package bench) against
// one model.
func newBenchCommand() *cobra.Command {
	cfg := DefaultConfig()
	opts := bench.Options{Suite: "all", Repeat: 5, DecodeTokens: 128, PrefillTokens: 256, Lanes: 8, Duration: time.Hour, Rate: 3}
	cmd := &cobra.Command{
		Use:   "bench MODEL.gguf",
		Short: "measure decode and prefill speed, API vs engine, downloads and model loads; soak the server",
		Long: "Run the benchmark suites against one model (the soak's and the media suite's default is the bundled " + assets.BundledModelID + "):\n" + suiteHelp() +
			"\n\nThe soak exits non-zero when a curve grows without bound, a record is lost or a reply is malformed.",
		Args: modelArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !bench.Known(opts.Suite) {
				return &commandLineError{fmt.Sprintf("unknown suite %q; choose %s", opts.Suite, bench.SuiteList())}
			}
			if opts.Repeat < 1 {
				return &commandLineError{fmt.Sprintf("--repeat must be at least 1, got %d", opts.Repeat)}
			}
			if opts.ImageSide < 1 || opts.AudioSeconds <= 0 {
				return &commandLineError{fmt.Sprintf("--image-side and --audio-seconds must be positive, got %d and %g", opts.ImageSide, opts.AudioSeconds)}
			}
			if opts.Duration <= 0 || opts.Rate <= 0 {
				return &commandLineError{fmt.Sprintf("--duration and --rate must be positive, got %s and %g", opts.Duration, opts.Rate)}
			}
			if len(args) == 0 && opts.Suite != "soak" && opts.Suite != "media" {
				return modelArgs(1, 1)(cmd, args)
			}
			model := ""
			if len(args) == 1 {
				model = args[0]
			}
			return runBench(cfg, opts, model, cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	serverFlags(fs, &cfg)
	fs.StringVar(&opts.Suite, "suite", opts.Suite, "the suite to run: "+bench.SuiteList())
	fs.IntVar(&opts.Repeat, "repeat", opts.Repeat, "runs of each measurement (median and min reported)")
	fs.IntVar(&opts.DecodeTokens, "decode-tokens", opts.DecodeTokens, "tokens generated per decode run")
	fs.IntVar(&opts.PrefillTokens, "prefill-tokens", opts.PrefillTokens, "prompt tokens per prefill run")
	fs.IntVar(&opts.Lanes, "lanes", opts.Lanes, "lanes of the server in the replay, streams and shared suites (--parallel sets the load suite's; the gateway suite's upstream gets one per stream of its largest row at least)")
	fs.IntVar(&opts.AgentTokens, "agent-tokens", 20000, "the agents suite's prompt size in tokens (Claude Code's system prompt and the tools that fit)")
	fs.StringVar(&opts.DraftModel, "draft-model", "", "the speed suite's draft model (a .gguf with the model's vocabulary; none: that ratio is not measured)")
	fs.DurationVar(&opts.Duration, "duration", opts.Duration, "how long the soak's traffic runs")
	fs.Float64Var(&opts.Rate, "rate", opts.Rate, "the soak's requests per second, all kinds together")
	fs.StringVar(&opts.Projector, "mmproj", "", "the media suite's multimodal projector (an mmproj .gguf for MODEL; none: random-weight vision and audio projectors written for it)")
	fs.IntVar(&opts.ImageSide, "image-side", 512, "the side in pixels of the media suite's square test images")
	fs.Float64Var(&opts.AudioSeconds, "audio-seconds", 10, "the length of the media suite's transcribed clips")
	fs.BoolVar(&opts.JSON, "json", false, "print the gateway and media suites' reports as JSON (the other suites print text)")
	fs.BoolVar(&opts.WriteModel, "write-model", false, "first write a TinyLlama-1.1B-shaped Q8_0 model with random weights at MODEL (outside the repository)")
	fs.BoolVar(&opts.WriteCopyModel, "write-copy-model", false, "first write a TinyLlama-1.1B-shaped Q8_0 model whose hand-set weights copy their prompt at MODEL (the speed suite's edit workload)")
	return cmd
}

// suiteHelp lists the suites, one a line.
func suiteHelp() string {
	var s string
	for _, suite := range bench.Suites {
		s += fmt.Sprintf("  %-8s %s\n", suite.Name, suite.About)
	}
	return s + "  all      every suite above but soak, in this order"
}

// runBench runs the suites with servers of this app, each in a fresh data folder that is
// removed afterwards. With no model (the soak, the media suite) it runs on a copy of the
// bundled one. The soak
// starts its server process with opts.Command (this binary unless set).
func runBench(cfg Config, opts bench.Options, model string, stdout io.Writer) error {
	dir, err := os.MkdirTemp("", "superfluid-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if model == "" {
		model = filepath.Join(dir, assets.BundledModelID+".gguf")
		if err := os.WriteFile(model, assets.BundledModel, 0o644); err != nil {
			return err
		}
	}
	cfg.DataDir = filepath.Join(dir, "data")
	opts.Parallel, opts.ContextLength, opts.Threads = cfg.Parallel, cfg.ContextLength, cfg.Threads
	opts.Serve = benchServe(cfg)
	if len(opts.Command) == 0 {
		opts.Command = selfCommand("")[:1]
	}
	return bench.Run(model, opts, stdout)
}

// benchServe starts the app (server + worker) on a loopback port with the model loaded.
func benchServe(cfg Config) func(bench.ServeOptions) (*bench.Server, error) {
	return func(so bench.ServeOptions) (*bench.Server, error) {
		cfg.ModelPath, cfg.Parallel, cfg.Threads = so.Model, so.Parallel, so.Threads
		if so.Projector != "" {
			cfg.ModelPath = "" // loaded below, once the catalog gives it its projector
		}
		if so.ContextLength > 0 {
			cfg.ContextLength = so.ContextLength
		}
		a, err := New(cfg)
		if err != nil {
			return nil, err
		}
		ctx := context.Background()
		// New registered the file; registering it again returns its entry (the bundled model's
		// when the file is the same).
		e, err := a.Manager().Catalog().AddLocal(ctx, so.Model, "")
		if err == nil && so.Projector != "" {
			r := e.Record
			r.Projector = so.Projector
			e, err = a.Manager().Catalog().Register(ctx, r)
		}
		// New started loading the model on a goroutine of its own; a suite's first unload must
		// not come before that load does (it would find the model unloaded, and the load would
		// start after it).
		a.preloading.Wait()
		if err == nil {
			_, err = a.Manager().Load(ctx, e.ID)
		}
		var l net.Listener
		if err == nil {
			l, err = net.Listen("tcp", "127.0.0.1:0")
		}
		var web *benchWeb
		if err == nil && so.Web {
			web, err = a.benchWeb()
		}
		if err != nil {
			if l != nil {
				l.Close()
			}
			a.Close()
			return nil, err
		}
		sctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			a.Serve(sctx, l)
		}()
		stop := func() {
			web.Close()
			cancel()
			<-done
			a.Close()
		}
		srv := &bench.Server{URL: "http://" + l.Addr().String(), Model: e.ID, Stop: stop}
		if web != nil {
			srv.WebURL, srv.WebToken = web.url, web.token
		}
		return srv, nil
	}
}
