package bench

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/superfluid/superfluid/runtime/llamacpp"
)

// laneServer starts a server with o.Lanes lanes.
func laneServer(model string, o Options, threads int) (*apiClient, func(), error) {
	return serve(o, ServeOptions{Model: model, Parallel: o.Lanes, Threads: threads})
}

// benchReplay replays a recorded-style conversation of 8 turns (Options.ReplayTurns) — a long
// system prompt (Options.ReplaySystemTokens), then short questions and scripted answers —
// whose history grows past 1,500 tokens, and compares each turn's time to first token warm
// (prefix cache) vs cold (cache_prompt off). The answers are scripted rather than generated
// so the bench is the same on a random-weight model.
func benchReplay(model string, o Options, w io.Writer) error {
	api, stop, err := laneServer(model, o, o.Threads)
	if err != nil {
		return err
	}
	defer stop()
	system, err := api.textOfTokens(orDefault(o.ReplaySystemTokens, 750), 100)
	if err != nil {
		return err
	}
	msgs := []map[string]string{{"role": "system", "content": system}}
	fmt.Fprintf(w, "%5s %8s %8s %12s %12s %10s\n", "turn", "prompt", "cached", "warm TTFT", "cold TTFT", "warm/cold")
	for turn := 1; turn <= orDefault(o.ReplayTurns, 8); turn++ {
		user, err := api.textOfTokens(40, turn)
		if err != nil {
			return err
		}
		msgs = append(msgs, map[string]string{"role": "user", "content": user})
		warm, err := api.stream(map[string]any{"messages": msgs, "max_tokens": 4, "temperature": 0})
		if err != nil {
			return err
		}
		cold, err := api.stream(map[string]any{"messages": msgs, "max_tokens": 1, "temperature": 0, "cache_prompt": false})
		if err != nil {
			return err
		}
		wt, ct := warm.ttft(), cold.ttft()
		fmt.Fprintf(w, "%5d %8d %8d %12s %12s %9.1f%%\n", turn, warm.promptTokens, warm.cached,
			wt.Round(time.Millisecond), ct.Round(time.Millisecond), 100*wt.Seconds()/ct.Seconds())
		answer, err := api.textOfTokens(60, 50+turn)
		if err != nil {
			return err
		}
		msgs = append(msgs, map[string]string{"role": "assistant", "content": answer})
	}
	return nil
}

// benchStreams runs 1, 4 and 8 concurrent streams through the HTTP API and, for comparison,
// through the engine called directly in this process, and reports aggregate and per-stream
// decode rates.
func benchStreams(model string, o Options, w io.Writer) error {
	direct, err := llamacpp.Load(llamacpp.Options{ModelPath: model, ContextLength: o.ContextLength, Parallel: o.Lanes, Threads: o.Threads})
	if err != nil {
		return err
	}
	defer direct.Close()
	api, stop, err := laneServer(model, o, direct.Info().Threads)
	if err != nil {
		return err
	}
	defer stop()
	sides := []struct {
		name string
		run  func(prompt string) (sample, error)
	}{
		{"engine", func(p string) (sample, error) { return directSample(direct, p, o.DecodeTokens) }},
		{"API", func(p string) (sample, error) { return api.sample(p, o.DecodeTokens) }},
	}
	counts := o.Streams
	if len(counts) == 0 {
		counts = []int{1, 4, 8}
	}
	fmt.Fprintf(w, "%8s %8s %14s %16s %10s\n", "", "streams", "aggregate t/s", "per-stream t/s", fmt.Sprintf("vs %d", counts[0]))
	single := map[string]float64{}
	for _, n := range counts {
		for _, side := range sides {
			var aggregates, perStream []float64
			for run := range max(1, o.Repeat/2) {
				agg, per, err := concurrentStreams(n, func(i int) (sample, error) {
					return side.run(fmt.Sprintf("%d-%d. Once upon a time", run, i))
				})
				if err != nil {
					return fmt.Errorf("%s: %w", side.name, err)
				}
				aggregates, perStream = append(aggregates, agg), append(perStream, per)
			}
			agg, _ := medianMin(aggregates)
			per, _ := medianMin(perStream)
			if _, ok := single[side.name]; !ok {
				single[side.name] = agg // the first count is the base of the comparison
			}
			fmt.Fprintf(w, "%8s %8d %14.1f %16.1f %9.2fx\n", side.name, n, agg, per, agg/single[side.name])
		}
	}
	return nil
}

// concurrentStreams runs n generations at once and returns the aggregate rate (all tokens over
// the wall time) and the mean per-stream decode rate.
func concurrentStreams(n int, run func(i int) (sample, error)) (aggregate, perStream float64, err error) {
	samples := make([]sample, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	began := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			samples[i], errs[i] = run(i)
		}()
	}
	wg.Wait()
	wall := time.Since(began)
	total, rateSum := 0, 0.0
	for i, s := range samples {
		if errs[i] != nil {
			return 0, 0, errs[i]
		}
		total += s.tokens
		rateSum += s.decodeRate()
	}
	return float64(total) / wall.Seconds(), rateSum / float64(n), nil
}

// benchShared runs 32 concurrent chats (Options.SharedChats) that share a 1,000-token system
// prompt (Options.SharedTokens) and counts the prompt tokens the model actually computed.
func benchShared(model string, o Options, w io.Writer) error {
	api, stop, err := laneServer(model, o, o.Threads)
	if err != nil {
		return err
	}
	defer stop()
	system, err := api.textOfTokens(orDefault(o.SharedTokens, 1000), 0)
	if err != nil {
		return err
	}
	before, err := api.slotsTotals()
	if err != nil {
		return err
	}
	chats := orDefault(o.SharedChats, 32)
	errs := make([]error, chats)
	var wg sync.WaitGroup
	began := time.Now()
	for i := range chats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = api.stream(map[string]any{"max_tokens": 16, "temperature": 0, "messages": []map[string]string{
				{"role": "system", "content": system}, {"role": "user", "content": fmt.Sprintf("Question %d: what happened next?", i)}}})
		}()
	}
	wg.Wait()
	wall := time.Since(began)
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	after, err := api.slotsTotals()
	if err != nil {
		return err
	}
	prompt := after.PromptTokens - before.PromptTokens
	computed := after.PrefillComputed - before.PrefillComputed
	fmt.Fprintf(w, "%d chats, %d prompt tokens in all (what %d separate prompts compute)\n", chats, prompt, chats)
	fmt.Fprintf(w, "prefill computed %d tokens (%.1fx fewer), %d served from the cache, %d prefix copies, wall %s\n",
		computed, float64(prompt)/float64(max(1, computed)), after.CachedTokens-before.CachedTokens,
		after.PrefixCopies-before.PrefixCopies, wall.Round(time.Millisecond))
	return nil
}
