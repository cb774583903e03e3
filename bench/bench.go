// Package bench measures superfluid against one model: decode and prefill speed through the
// HTTP API next to the engine called directly, multi-turn and concurrent serving, prefix
// sharing, model downloads from a fake Hugging Face Hub, the time to first token of an
// unloaded model, tool-calling grammars, the batch API, the scheduling classes and rate
// limits, a gateway forwarding to another superfluid vs that superfluid directly, the speed
// ratios of issue 21 (speculation, the prefix cache across a restart, flash attention;
// speed.go), images and audio in the prompt vs the engine's own encoding (media.go); and the
// soak (package bench/soak), a long run of mixed traffic against a server process. It starts
// the app through Options.Serve (the soak and the gateway's upstream through
// Options.Command), so it does not depend on package app.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/superfluid/superfluid/bench/soak"
	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
)

// Options are what the bench is told: the suites to run, their sizes, and how to start the app.
type Options struct {
	// Suite is a suite name (see Suites) or "all".
	Suite string
	// Repeat is the number of runs of each measurement (median and min are reported).
	Repeat int
	// DecodeTokens are the tokens generated per decode run; PrefillTokens the prompt tokens per
	// prefill run.
	DecodeTokens, PrefillTokens int
	// Lanes are the server's lanes in the replay, streams and shared suites; Parallel its lanes
	// in the load suite.
	Lanes, Parallel int
	// ContextLength and Threads are what the engine called directly loads with (0: the
	// model's window capped at 4096; threads chosen from the model size).
	ContextLength, Threads int
	// Sizes of the replay, streams and shared suites; zero values take the sizes the suites
	// are described with. Tests shrink them to fit a small model's window.
	ReplayTurns, ReplaySystemTokens int   // turns after a system prompt of that many tokens: 8 and 750
	Streams                         []int // the counts of concurrent streams: 1, 4 and 8
	SharedChats, SharedTokens       int   // chats sharing a system prompt of that many tokens: 32 and 1,000
	BatchLines                      int   // requests in the batch suite's batch: 64
	AgentTokens                     int   // the agents suite's prompt size: 20,000 tokens
	EditTokens, PrefixTokens        int   // the speed suite's edit input and restarted prefix: 1,000 and 2,000 tokens
	// DraftModel is the speed suite's draft model (a .gguf path; "": that ratio is not measured).
	DraftModel string
	// Projector is the media suite's multimodal projector (an mmproj .gguf; "": random-weight
	// vision and audio projectors written for the model). ImageSide is the side in pixels of
	// its square test images (0: 512); AudioSeconds the length of its transcribed clips (0: 10).
	Projector    string
	ImageSide    int
	AudioSeconds float64
	// JSON asks the suites that have a JSON report (gateway, media) for it instead of text.
	JSON bool
	// WriteModel asks for a TinyLlama-1.1B-shaped Q8_0 model to be written at the model path
	// first (see WriteModel).
	WriteModel bool
	// WriteCopyModel asks for the copy model of the same shape instead (see WriteCopyModel).
	WriteCopyModel bool
	// TempDir is where the pull suite writes its downloads ("": the system's temporary folder).
	TempDir string
	// Serve starts the app (HTTP server and worker processes) on a loopback port with the
	// model loaded. The suites that go through the HTTP API need it.
	Serve func(ServeOptions) (*Server, error)
	// Duration and Rate are the soak's length and requests per second (0: 1 hour, 3/s).
	Duration time.Duration
	Rate     float64
	// Command runs this program (the soak starts `superfluid serve` with it); Env is added to
	// the environment of what it starts.
	Command []string
	Env     []string
}

// ServeOptions are what one server of the bench runs with.
type ServeOptions struct {
	// Model is the path of the .gguf file to serve (and load before Serve returns).
	Model string
	// Parallel is the number of lanes; Threads the CPU threads (0: chosen from the model size).
	Parallel, Threads int
	// ContextLength is the window the model is served with (0: the bench's --ctx).
	ContextLength int
	// Web asks for the browser transport (--web) beside the API (Server.WebURL).
	Web bool
	// Projector is the model's multimodal projector (mmproj .gguf), "" for none.
	Projector string
}

// Server is a running app.
type Server struct {
	// URL is the base URL, such as "http://127.0.0.1:41234".
	URL string
	// Model is the id the app registered the model file as (what requests name).
	Model string
	// Stop shuts the server down and unloads every model.
	Stop func()
	// WebURL is the browser transport's base URL and WebToken its token (ServeOptions.Web).
	WebURL, WebToken string
}

// Suite is one benchmark.
type Suite struct {
	Name, About string
	run         func(model string, o Options, w io.Writer) error
	// alone reports whether the suite runs only when named ("all" leaves it out).
	alone bool
}

// Suites are the benchmarks in the order "all" runs them.
var Suites = []Suite{
	{"single", "one stream through the HTTP API vs the engine called directly", benchSingle, false},
	{"replay", "an 8-turn conversation, time to first token warm vs with the cache off", benchReplay, false},
	{"streams", "1, 4 and 8 concurrent streams", benchStreams, false},
	{"shared", "32 concurrent chats sharing a 1,000-token system prompt", benchShared, false},
	{"pull", "download throughput from a local fake Hugging Face Hub, with sha256, vs a plain HTTP GET", benchPull, false},
	{"load", "time to first token of an unloaded model (worker start + load) vs a loaded one", benchLoad, false},
	{"tools", "decode under the tool_choice required grammar and with top_logprobs 5, vs plain decode", benchTools, false},
	{"batch", "a 64-line batch's throughput vs the same requests sent at once, and interactive TTFT while it runs vs idle", benchBatch, false},
	{"agents", "time to first token of a 20k-token Claude Code request (system prompt + tools), cold and with its prefix cached, vs the engine's prefill of it", benchAgents, false},
	{"qos", "interactive TTFT while 8 background streams run vs idle, and requests/s with key checks and rate limits vs without", benchQoS, false},
	{"gateway", "streaming tokens/s and TTFT through a `serve --team` gateway (a person's key, an openai lane forwarding to a superfluid process) vs that process directly, at 1 and 32 streams at once, and the gateway's CPU per 1,000 tokens", benchGateway, false},
	{"web", "the browser transport (--web): /web/stream and /web/ws tokens/s and time to first token vs /v1/chat/completions streaming", benchWeb, false},
	{"fairshare", "team mode: one person's single streams' TTFT while another holds 32 streams on a 4-lane model, vs idle, with fair share and without, beside the engine floor (3 streams, no wait)", benchFairShare, false},
	{"media", "image TTFT (OpenAI chat, a data URL PNG) and audio transcription time vs the engine's own encode + prefill (+ decode) of the same prompt, and a re-sent image's TTFT vs a new one's", benchMedia, false},
	{"speed", "issue 21's ratios: n-gram speculation vs plain decode on an edit workload and free text, a draft model vs plain, TTFT of a 2,000-token prefix after a restart vs cold, flash attention's chosen setting vs the other", benchSpeed, false},
	{"soak", "mixed traffic in every dialect with hang-ups, worker kills and reloads for --duration (1h): memory, fd and goroutine curves, nothing lost, nothing malformed; not in all", benchSoak, true},
}

// Known reports whether name is a suite or "all".
func Known(name string) bool {
	return name == "all" || slices.ContainsFunc(Suites, func(s Suite) bool { return s.Name == name })
}

// SuiteList is the suite names joined with commas and "or all", for help texts.
func SuiteList() string {
	names := make([]string, len(Suites))
	for i, s := range Suites {
		names[i] = s.Name
	}
	return strings.Join(names, ", ") + " or all"
}

// benchSoak runs the soak (package soak) on the model for o.Duration.
func benchSoak(model string, o Options, w io.Writer) error {
	if len(o.Command) == 0 {
		return errors.New("the soak needs the program to start servers with (Options.Command is empty)")
	}
	if o.Duration == 0 {
		o.Duration = time.Hour
	}
	return soak.Run(context.Background(), soak.Options{Command: o.Command, Env: o.Env, Model: model, Duration: o.Duration, Rate: o.Rate,
		ContextLength: o.ContextLength, Threads: o.Threads, Parallel: o.Parallel, Dir: o.TempDir}, w)
}

// Run runs the suites o selects against the model file at model, printing to w.
func Run(model string, o Options, w io.Writer) error {
	if !Known(o.Suite) {
		return fmt.Errorf("unknown suite %q; choose %s", o.Suite, SuiteList())
	}
	if o.Repeat < 1 {
		return errors.New("repeat must be at least 1")
	}
	if o.WriteModel {
		if err := WriteModel(model); err != nil {
			return fmt.Errorf("write the bench model: %w", err)
		}
	}
	if o.WriteCopyModel {
		if err := WriteCopyModel(model); err != nil {
			return fmt.Errorf("write the copy model: %w", err)
		}
	}
	if _, err := os.Stat(model); err != nil {
		return fmt.Errorf("model file: %w", err)
	}
	for _, s := range Suites {
		if o.Suite != s.Name && (o.Suite != "all" || s.alone) {
			continue
		}
		fmt.Fprintf(w, "\n== %s: %s\n", s.Name, s.About)
		if err := s.run(model, o, w); err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
	}
	return nil
}

// WriteModel writes a model of real shape (TinyLlama-1.1B, Q8_0, 1.1 GB) with random weights at
// path: speed does not depend on weight values, and no real model can be downloaded here.
func WriteModel(path string) error {
	return gguftest.WriteTinyLlama(path, gguftest.TinyLlamaOptions{
		Vocab: 32000, Embd: 2048, Layers: 22, Heads: 32, KVHeads: 4, FF: 5632, ContextLength: 2048,
		Q8: true, Name: "TinyLlama-1.1B-shape-random",
	})
}

// WriteCopyModel writes a TinyLlama-1.1B-shaped Q8_0 model whose weights are set by hand to
// copy (gguftest.WriteCopyLlama): it rewrites a text from its prompt token for token, the edit
// workload speculation is measured on, at the cost per token of the random-weight model above.
// Texts it copies exactly come from gguftest.CopyText.
func WriteCopyModel(path string) error {
	return gguftest.WriteCopyLlama(path, gguftest.TinyLlamaOptions{
		Vocab: 32000, Embd: 2048, Layers: 22, Heads: 32, KVHeads: 4, FF: 5632, ContextLength: 2048,
		Q8: true, Name: "TinyLlama-1.1B-shape-copy",
	})
}

// serve starts a server through o.Serve.
func serve(o Options, so ServeOptions) (*apiClient, func(), error) {
	if o.Serve == nil {
		return nil, nil, errors.New("this suite needs the app (Options.Serve is nil)")
	}
	s, err := o.Serve(so)
	if err != nil {
		return nil, nil, err
	}
	return &apiClient{url: s.URL, model: s.Model}, s.Stop, nil
}

// orDefault is v, or def when v is 0.
func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// medianMin returns the median and the minimum of xs (0, 0 when empty).
func medianMin(xs []float64) (median, least float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2], s[0]
}
