package bench

import (
	"fmt"
	"io"

	"github.com/superfluid/superfluid/runtime/llamacpp"
)

// benchSingle measures single-stream decode and prefill speed through the HTTP API (server +
// worker process) and through the engine called directly in this process, interleaving the
// two so drift on a noisy machine hits both alike, and prints their ratio.
func benchSingle(model string, o Options, stdout io.Writer) error {
	direct, err := llamacpp.Load(llamacpp.Options{ModelPath: model, ContextLength: o.ContextLength, Parallel: 1, Threads: o.Threads})
	if err != nil {
		return err
	}
	defer direct.Close()
	// The same thread count on both sides.
	api, stop, err := serve(o, ServeOptions{Model: model, Parallel: 1, Threads: direct.Info().Threads})
	if err != nil {
		return err
	}
	defer stop()
	prompt, err := api.textOfTokens(o.PrefillTokens, 0)
	if err != nil {
		return err
	}
	info := direct.Info()
	fmt.Fprintf(stdout, "model %s (%s), ctx %d, threads %d, %d runs each\n", model, info.Architecture, info.ContextLength, info.Threads, o.Repeat)
	var rows []benchRow
	for _, m := range []struct {
		name   string
		prompt func(run int) string
		tokens int
		rate   func(s sample) float64
	}{
		{"decode tok/s", func(run int) string { return fmt.Sprintf("%d. Once upon a time", run) }, o.DecodeTokens, sample.decodeRate},
		{"prefill tok/s", func(run int) string { return fmt.Sprintf("%d. %s", run, prompt) }, 1, sample.prefillRate},
	} {
		var engineRates, apiRates []float64
		for run := range o.Repeat {
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
	// The rates above go through the engine's grouping of events on both sides; the time to
	// the first token and from the last token to the end of the stream do not.
	var latencies []latency
	for run := range o.Repeat {
		l, err := api.latencySample(fmt.Sprintf("%d. Latency. Once upon a time", run), o.DecodeTokens)
		if err != nil {
			return fmt.Errorf("latency run: %w", err)
		}
		latencies = append(latencies, l)
	}
	printLatency(stdout, latencies)
	return nil
}

// directSample generates through the engine in this process and times it.
func directSample(e *llamacpp.Engine, prompt string, tokens int) (sample, error) {
	s, _, err := engineDecode(e, prompt, tokens, nil)
	return s, err
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
