package bench

import (
	"fmt"
	"io"
	"time"
)

// benchLoad measures the time to first token of a model that is not loaded (the request starts
// the worker process and loads the model) and of the same model loaded, through the HTTP API:
// each run unloads the model (POST /v1/models/unload), times a streaming chat completion to its
// first content, then times the same request again. Both skip the prefix cache (cache_prompt
// false), so the warm request computes the whole prompt too.
func benchLoad(model string, o Options, w io.Writer) error {
	api, stop, err := serve(o, ServeOptions{Model: model, Parallel: o.Parallel, Threads: o.Threads})
	if err != nil {
		return err
	}
	defer stop()
	var cold, warm []float64
	var prompt int
	for run := range o.Repeat {
		if err := api.unload(); err != nil {
			return err
		}
		body := func() map[string]any {
			return map[string]any{"max_tokens": 4, "ignore_eos": true, "temperature": 0, "cache_prompt": false,
				"messages": []map[string]string{{"role": "user", "content": fmt.Sprintf("%d. Once upon a time", run)}}}
		}
		c, err := api.stream(body())
		if err != nil {
			return fmt.Errorf("cold request: %w", err)
		}
		h, err := api.stream(body())
		if err != nil {
			return fmt.Errorf("warm request: %w", err)
		}
		cold, warm = append(cold, c.ttft().Seconds()), append(warm, h.ttft().Seconds())
		prompt = h.promptTokens
	}
	fmt.Fprintf(w, "model %s, %d lanes, a %d-token prompt, %d runs each; cold: unloaded first (worker start + load + prefill), warm: loaded\n",
		api.model, o.Parallel, prompt, o.Repeat)
	cm, ci := medianMin(cold)
	wm, wi := medianMin(warm)
	fmt.Fprintf(w, "%-10s %12s %12s\n", "TTFT", "median", "min")
	fmt.Fprintf(w, "%-10s %12s %12s\n", "cold", seconds(cm), seconds(ci))
	fmt.Fprintf(w, "%-10s %12s %12s\n", "warm", seconds(wm), seconds(wi))
	fmt.Fprintf(w, "cold/warm (medians) %.1fx, load cost about %s\n", cm/wm, seconds(cm-wm))
	return nil
}

// seconds formats s seconds as a duration rounded to a tenth of a millisecond.
func seconds(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(100 * time.Microsecond).String()
}
