package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/superfluid/superfluid/runtime/llamacpp"
	"github.com/superfluid/superfluid/runtime/llm"
)

// benchOptions are the bench's own flags.
type benchOptions struct {
	suite         string
	repeat        int
	decodeTokens  int
	prefillTokens int
	lanes         int
	writeModel    bool
}

// runBench runs the benchmark suites against one model (see benchSuites); newBenchCommand
// parses its flags.
func runBench(cfg Config, opts benchOptions, model string, stdout io.Writer) error {
	if opts.writeModel {
		if err := writeBenchModel(model); err != nil {
			return err
		}
	}
	cfg.ModelPath = model
	dir, err := os.MkdirTemp("", "superfluid-bench-")
	if err != nil {
		return err
	}
	cfg.DataDir = dir
	defer os.RemoveAll(cfg.DataDir)
	for _, suite := range benchSuites {
		if opts.suite != "all" && opts.suite != suite.name {
			continue
		}
		fmt.Fprintf(stdout, "\n== %s: %s\n", suite.name, suite.about)
		if err := suite.run(cfg, opts, stdout); err != nil {
			return fmt.Errorf("%s: %w", suite.name, err)
		}
	}
	return nil
}

var benchSuites = []struct {
	name, about string
	run         func(Config, benchOptions, io.Writer) error
}{
	{"single", "one stream through the HTTP API vs the engine called directly", benchSingle},
	{"replay", "an 8-turn conversation, time to first token warm vs with the cache off", benchReplay},
	{"streams", "1, 4 and 8 concurrent streams", benchStreams},
	{"shared", "32 concurrent chats sharing a 1,000-token system prompt", benchShared},
}

// benchServer starts the app (server + worker) on a loopback port.
func benchServer(cfg Config) (*apiBench, func(), error) {
	a, err := New(cfg)
	if err != nil {
		return nil, nil, err
	}
	if err := a.Worker().Start(context.Background()); err != nil {
		a.Close()
		return nil, nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		a.Close()
		return nil, nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	go a.Serve(ctx, l)
	api := &apiBench{url: "http://" + l.Addr().String(), model: a.Service().Models()[0].ID}
	return api, func() { stop(); a.Close() }, nil
}

// benchSingle measures single-stream decode and prefill speed through the HTTP API (server +
// worker process) and through the engine called directly in this process, interleaving the
// two so drift on a noisy machine hits both alike, and prints their ratio.
func benchSingle(cfg Config, opts benchOptions, stdout io.Writer) error {
	cfg.Parallel = 1
	direct, err := llamacpp.Load(llamacpp.Options{ModelPath: cfg.ModelPath, ContextLength: cfg.ContextLength, Parallel: 1, Threads: cfg.Threads})
	if err != nil {
		return err
	}
	defer direct.Close()
	cfg.Threads = direct.Info().Threads // the same thread count on both sides
	api, stop, err := benchServer(cfg)
	if err != nil {
		return err
	}
	defer stop()
	model := cfg.ModelPath
	prompt, err := api.textOfTokens(opts.prefillTokens, 0)
	if err != nil {
		return err
	}
	info := direct.Info()
	fmt.Fprintf(stdout, "model %s (%s), ctx %d, threads %d, %d runs each\n", model, info.Architecture, info.ContextLength, info.Threads, opts.repeat)
	var rows []benchRow
	for _, m := range []struct {
		name   string
		prompt func(run int) string
		tokens int
		rate   func(s sample) float64
	}{
		{"decode tok/s", func(run int) string { return fmt.Sprintf("%d. Once upon a time", run) }, opts.decodeTokens, sample.decodeRate},
		{"prefill tok/s", func(run int) string { return fmt.Sprintf("%d. %s", run, prompt) }, 1, sample.prefillRate},
	} {
		var engineRates, apiRates []float64
		for run := range opts.repeat {
			// A fresh leading number per run keeps the prefix cache from serving the prompt.
			p := m.prompt(run)
			s, err := directSample(direct, p, m.tokens)
			if err != nil {
				return fmt.Errorf("engine run: %w", err)
			}
			engineRates = append(engineRates, m.rate(s))
			if s, err = api.sample(p, m.tokens); err != nil {
				return fmt.Errorf("API run: %w", err)
			}
			apiRates = append(apiRates, m.rate(s))
		}
		rows = append(rows, benchRow{m.name, engineRates, apiRates})
	}
	printBench(stdout, rows)
	return nil
}

// sample is one timed generation: when it started, its first and last token.
type sample struct {
	start, first, last time.Time
	promptTokens       int
	tokens             int
	cached             int
	text               string
}

func (s sample) decodeRate() float64 {
	if s.tokens < 2 {
		return 0
	}
	return float64(s.tokens-1) / s.last.Sub(s.first).Seconds()
}

func (s sample) prefillRate() float64 {
	return float64(s.promptTokens) / s.first.Sub(s.start).Seconds()
}

func directSample(e *llamacpp.Engine, prompt string, tokens int) (sample, error) {
	zero := 0.0
	req := &llm.Request{Prompt: prompt, AddSpecial: true, MaxTokens: tokens, IgnoreEOS: true, Sampling: llm.Sampling{Temperature: &zero}}
	s := sample{start: time.Now()}
	err := e.Generate(context.Background(), req, func(ev llm.Event) error {
		now := time.Now()
		if ev.Tokens > 0 {
			if s.first.IsZero() {
				s.first = now
			}
			s.last = now
		}
		if ev.Done != nil {
			s.promptTokens, s.tokens = ev.Done.Usage.PromptTokens, ev.Done.Usage.CompletionTokens
		}
		return nil
	})
	return s, err
}

// apiBench streams chat completions over HTTP, as a client would.
type apiBench struct {
	url, model string
}

func (b *apiBench) sample(prompt string, tokens int) (sample, error) {
	return b.stream(map[string]any{
		"max_tokens": tokens, "ignore_eos": true, "temperature": 0,
		"messages": []map[string]string{{"role": "user", "content": prompt}},
	})
}

// stream posts a streaming chat completion (body without model and stream) and times it.
func (b *apiBench) stream(body map[string]any) (sample, error) {
	body["model"], body["stream"] = b.model, true
	data, _ := json.Marshal(body)
	s := sample{start: time.Now()}
	res, err := http.Post(b.url+"/v1/chat/completions", "application/json", bytes.NewReader(data))
	if err != nil {
		return s, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(res.Body)
		return s, fmt.Errorf("status %d: %s", res.StatusCode, msg)
	}
	var text strings.Builder
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var ch struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
			Usage *struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
				Details          struct {
					CachedTokens int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
			Error *struct{ Message string } `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &ch); err != nil {
			return s, err
		}
		if ch.Error != nil {
			return s, fmt.Errorf("stream error: %s", ch.Error.Message)
		}
		now := time.Now()
		if len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != "" {
			if s.first.IsZero() {
				s.first = now
			}
			s.last = now
			text.WriteString(ch.Choices[0].Delta.Content)
		}
		if ch.Usage != nil {
			s.promptTokens, s.tokens, s.cached = ch.Usage.PromptTokens, ch.Usage.CompletionTokens, ch.Usage.Details.CachedTokens
		}
	}
	s.text = text.String()
	if s.first.IsZero() { // nothing generated: time to the end instead
		s.first, s.last = time.Now(), time.Now()
	}
	return s, sc.Err()
}

type benchRow struct {
	name        string
	engine, api []float64
}

func printBench(w io.Writer, rows []benchRow) {
	fmt.Fprintf(w, "%-14s %12s %12s %12s %12s %8s\n", "", "engine med", "engine min", "API med", "API min", "API/eng")
	for _, r := range rows {
		em, ei := medianMin(r.engine)
		am, ai := medianMin(r.api)
		fmt.Fprintf(w, "%-14s %12.1f %12.1f %12.1f %12.1f %7.1f%%\n", r.name, em, ei, am, ai, 100*am/em)
	}
}

func medianMin(xs []float64) (float64, float64) {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2], s[0]
}
