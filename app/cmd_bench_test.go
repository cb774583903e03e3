package app

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/bench"
)

// TestBenchSuites runs every suite end to end on the test model, at the smallest sizes that
// exercise it: the app's servers (real workers) through bench.Options.Serve, the engine in
// this process, the fake Hub.
func TestBenchSuites(t *testing.T) {
	if testing.Short() {
		t.Skip("starts workers")
	}
	cases := []struct {
		suite string
		sizes func(*bench.Options)
		want  []string
	}{
		{"single", nil, []string{"== single:", "decode tok/s", "prefill tok/s", "API/eng",
			"latency at the HTTP client", "first token", "first to last token", "last token to end", "whole request"}},
		{"replay", func(o *bench.Options) { o.Repeat, o.ReplayTurns, o.ReplaySystemTokens = 1, 2, 48 },
			[]string{"== replay:", "warm TTFT", "cold TTFT", "\n    1 ", "\n    2 "}},
		{"streams", func(o *bench.Options) { o.Repeat, o.Streams = 1, []int{1, 2} },
			[]string{"== streams:", "aggregate t/s", "vs 1", "  engine        2 ", "     API        2 "}},
		{"shared", func(o *bench.Options) { o.Repeat, o.SharedChats, o.SharedTokens = 1, 4, 64 },
			[]string{"== shared:", "4 chats", "what 4 separate prompts compute", "prefill computed", "prefix copies"}},
		{"load", nil, []string{"== load:", "model " + modelID(testModel), "cold", "warm", "cold/warm (medians)"}},
		{"pull", nil, []string{"== pull:", "too small to measure", "Download/plain (medians)"}},
		{"tools", func(o *bench.Options) { o.DecodeTokens = 16 }, []string{"== tools:", "tool_choice required", "top_logprobs 5", "vs plain"}},
		{"batch", func(o *bench.Options) { o.Repeat, o.BatchLines, o.DecodeTokens = 1, 4, 32 },
			[]string{"== batch:", "concurrent HTTP requests", "batch/HTTP (medians)", "idle server", "while a batch runs", "busy/idle (medians)"}},
		// A 1,500-token agent prompt: seconds, where the suite's 20k tokens take minutes on CPU.
		{"agents", func(o *bench.Options) { o.Repeat, o.AgentTokens = 1, 1500 },
			[]string{"== agents:", "Claude Code 2.1.332's first request", "engine prefill", "cold TTFT (API)", "warm TTFT (API)", "turn 2 TTFT (API)", "warm/cold (medians)", "of them cached"}},
		{"qos", func(o *bench.Options) { o.Repeat, o.DecodeTokens = 1, 16 },
			[]string{"== qos:", "idle server", "while 8 background streams run", "busy/idle (medians)", "no keys, no limits", "key checks and rate limits", "with/without (medians)"}},
		// The upstream is a `superfluid serve` process of this binary's command line, the
		// gateway a `superfluid serve --team` one.
		{"gateway", func(o *bench.Options) {
			o.Repeat, o.Streams, o.Command, o.Env = 1, []int{1, 2}, []string{os.Args[0]}, []string{cliEnv + "=1"}
		}, []string{"== gateway:", "upstream: `superfluid serve` process", "2 lanes", "gateway: `superfluid serve --team` process",
			"sk-ss- key", "openai lane", "TTFT p50", "at once", "CPU ms/1k",
			"       1   direct ", "       1  gateway ", "       2  gateway ", "  gw/dir ", "gateway's own"}},
		{"web", func(o *bench.Options) { o.Repeat, o.DecodeTokens = 2, 16 },
			[]string{"== web:", "/v1 chat stream", "/web/stream SSE", "/web/ws", "TTFT med", "tok/s med", "vs /v1"}},
		// A `superfluid serve --team` process of this binary's command line, people made by its CLI.
		{"fairshare", func(o *bench.Options) {
			o.Repeat, o.DecodeTokens, o.Command, o.Env = 1, 16, []string{os.Args[0]}, []string{cliEnv + "=1"}
		}, []string{"== fairshare:", "`superfluid serve --team` process", "4 lanes; A holds 32 streams of 16 tokens", "idle server",
			"while A holds 3 streams (engine floor: no wait)", "while A holds 32 streams (fair share)", "p50/floor", "B as A's second key (no fair share)", "p90/idle", "target: B's TTFT within 1.5x"}},
		// Projectors the suite writes for the model, small images, a short clip.
		{"media", func(o *bench.Options) { o.Repeat, o.ImageSide, o.AudioSeconds = 1, 40, 2 },
			[]string{"== media:", "random-weight projectors written for the model's width", "images 40×40 PNG", "B med [min]",
				"(a) TTFT, new image: engine vs server", "(b) transcription, 2 s clip: engine vs server", "(c) TTFT, image re-sent vs new (server)",
				"prompt tokens (the image's positions included)", "re-sent: cached tokens", "verdict"}},
		// The model drafts for itself; speculation and the disk cache may not be in this build
		// yet, and then the suite says "not available" for them.
		{"speed", func(o *bench.Options) {
			o.Repeat, o.DecodeTokens, o.EditTokens, o.PrefixTokens, o.DraftModel = 1, 16, 64, 96, testModel
		},
			[]string{"== speed:", "(a) n-gram vs off, edit workload", "(a) n-gram vs off, free text", "(b) draft model vs off",
				"(c) TTFT, 96-token prefix after restart vs cold", "(d) flash attention", "target", "verdict"}},
		// The soak's 30-second version: a server process of this binary's command line.
		{"soak", func(o *bench.Options) {
			o.Duration, o.Command, o.Env = 30*time.Second, []string{os.Args[0]}, []string{cliEnv + "=1"}
		}, []string{"== soak:", "server RSS", "server open fds", "server goroutines", "workers' RSS", "openai chat stream",
			"anthropic messages stream", "ollama generate stream", "openai embeddings", "file upload", "batch create", "worker kills", "verdict: PASS"}},
	}
	if len(cases) != len(bench.Suites) {
		t.Errorf("%d suites, %d tested", len(bench.Suites), len(cases))
	}
	for _, c := range cases {
		t.Run(c.suite, func(t *testing.T) {
			cfg := testConfig(t, testModel)
			opts := bench.Options{Suite: c.suite, Repeat: 2, DecodeTokens: 8, PrefillTokens: 32, Lanes: 2}
			if c.sizes != nil {
				c.sizes(&opts)
			}
			var out bytes.Buffer
			if err := runBench(cfg, opts, testModel, &out); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			t.Log(out.String())
			for _, w := range c.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

// TestBenchCommandLine: the help lists every suite; a bad suite or repeat is a usage error.
func TestBenchCommandLine(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"superfluid", "bench", "--help"}, &stdout, &stderr); code != 0 {
		t.Fatalf("bench --help: exit %d, stderr %q", code, stderr.String())
	}
	for _, s := range bench.Suites {
		if !strings.Contains(stdout.String(), s.Name+" ") || !strings.Contains(stdout.String(), s.About) {
			t.Errorf("bench --help does not list the %s suite:\n%s", s.Name, stdout.String())
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--suite", "bogus"}, `unknown suite "bogus"`},
		{[]string{"--repeat", "0"}, "--repeat must be at least 1"},
		{[]string{"--suite", "media", "--image-side", "0"}, "--image-side and --audio-seconds must be positive"},
		{[]string{"--suite", "media", "--audio-seconds", "-1"}, "--image-side and --audio-seconds must be positive"},
		{[]string{"--suite", "soak", "--duration", "0s"}, "--duration and --rate must be positive"},
		{[]string{"--suite", "soak", "--rate", "-1"}, "--duration and --rate must be positive"},
	} {
		stdout.Reset()
		stderr.Reset()
		code := Main(append([]string{"superfluid", "bench", testModel}, c.args...), &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("bench %v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
	// Only the soak and the media suite have a default model (the bundled one).
	stderr.Reset()
	if code := Main([]string{"superfluid", "bench", "--suite", "single"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "no model given") {
		t.Errorf("bench --suite single without a model: exit %d, stderr %q", code, stderr.String())
	}
}
