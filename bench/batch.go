package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"sync"
	"time"

	"github.com/superfluid/superfluid/server/core"
)

// benchBatch measures the batch API: a batch's decode throughput (completion tokens per second
// from POST /v1/batches to "completed") as a ratio of the same requests sent at once over HTTP,
// and the time to first token of an interactive request while a batch keeps its lanes busy,
// as a ratio of that on an idle server. Batch lines run at background priority, which never
// takes the lane the QoS gate keeps for interactive requests (--qos-reserve, default 1): with
// 4 lanes the batch decodes on 3 while the concurrent requests use 4, the price of an
// interactive request never waiting behind a batch line. The two throughputs are interleaved run by run, so
// drift hits both alike.
func benchBatch(model string, o Options, w io.Writer) error {
	api, stop, err := serve(o, ServeOptions{Model: model, Parallel: o.Parallel, Threads: o.Threads})
	if err != nil {
		return err
	}
	defer stop()
	lines := orDefault(o.BatchLines, 64)
	fmt.Fprintf(w, "model %s, %d lanes, %d requests of %d tokens, %d runs\n", model, o.Parallel, lines, o.DecodeTokens, o.Repeat)
	if _, err := api.sample("Warm up.", 4); err != nil {
		return err
	}
	var httpRates, batchRates []float64
	for run := range o.Repeat {
		bodies := batchBodies(api.model, fmt.Sprintf("h%d", run), lines, o.DecodeTokens)
		rate, err := api.concurrentRate(bodies)
		if err != nil {
			return fmt.Errorf("concurrent HTTP: %w", err)
		}
		httpRates = append(httpRates, rate)
		// The batch runs after core.InteractiveHold, as on a server with no other traffic.
		time.Sleep(core.InteractiveHold + 100*time.Millisecond)
		bodies = batchBodies(api.model, fmt.Sprintf("b%d", run), lines, o.DecodeTokens)
		if rate, err = api.batchRate(bodies); err != nil {
			return fmt.Errorf("batch: %w", err)
		}
		batchRates = append(batchRates, rate)
	}
	hMed, hMin := medianMin(httpRates)
	bMed, bMin := medianMin(batchRates)
	fmt.Fprintf(w, "%-30s %12s %12s\n", "throughput (completion tok/s)", "median", "min")
	fmt.Fprintf(w, "%-30s %12.1f %12.1f\n", "concurrent HTTP requests", hMed, hMin)
	fmt.Fprintf(w, "%-30s %12.1f %12.1f\n", "batch", bMed, bMin)
	fmt.Fprintf(w, "batch/HTTP (medians) %.1f%% (target >= 95%%)\n", 100*bMed/hMed)

	probes := max(5, o.Repeat)
	idle, err := api.ttfts(probes, nil)
	if err != nil {
		return fmt.Errorf("idle TTFT: %w", err)
	}
	// A batch long enough to outlast the probes: its lanes busy with its lines throughout.
	bodies := batchBodies(api.model, "busy", max(lines, 4*o.Parallel), 4*o.DecodeTokens)
	id, err := api.startBatch(bodies)
	if err != nil {
		return fmt.Errorf("busy batch: %w", err)
	}
	var ended bool
	busy, err := api.ttfts(probes, func() error {
		b, err := api.waitBatch(id, func(b batchState) bool { return b.RequestCounts.Completed >= 1 || b.ended() })
		ended = b.ended()
		return err
	})
	if err != nil {
		return fmt.Errorf("TTFT under a batch: %w", err)
	}
	if b, err := api.getBatch(id); err != nil || b.ended() || ended {
		return fmt.Errorf("the batch ended before the probes did (%v); measure with more --decode-tokens", err)
	}
	if err := api.cancelBatch(id); err != nil {
		return err
	}
	iMed, _ := medianMin(idle)
	bMedT, _ := medianMin(busy)
	fmt.Fprintf(w, "%-30s %12s %12s %12s\n", "interactive TTFT (ms)", "median", "first", "max")
	fmt.Fprintf(w, "%-30s %12.1f %12.1f %12.1f\n", "idle server", iMed, idle[0], maxOf(idle))
	fmt.Fprintf(w, "%-30s %12.1f %12.1f %12.1f\n", "while a batch runs", bMedT, busy[0], maxOf(busy))
	fmt.Fprintf(w, "busy/idle (medians) %.2fx (target <= 1.5x); the first probe waits for a batch line to end\n", bMedT/iMed)
	return nil
}

func maxOf(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// batchBodies are n chat requests of the given completion length with distinct prompts of the
// same length (tag keeps runs apart, so no run finds another's prompts cached).
func batchBodies(model, tag string, n, tokens int) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = map[string]any{
			"model": model, "max_tokens": tokens, "ignore_eos": true, "temperature": 0,
			"messages": []map[string]string{{"role": "user", "content": fmt.Sprintf("Story %s-%03d: once upon a time, a dog", tag, i)}},
		}
	}
	return out
}

// concurrentRate sends the bodies all at once as chat completions and returns the completion
// tokens per second from the first send to the last reply.
func (b *apiClient) concurrentRate(bodies []map[string]any) (float64, error) {
	var wg sync.WaitGroup
	errs := make([]error, len(bodies))
	tokens := make([]int, len(bodies))
	start := time.Now()
	for i, body := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out struct {
				Usage struct {
					CompletionTokens int `json:"completion_tokens"`
				} `json:"usage"`
			}
			errs[i] = b.post("/v1/chat/completions", body, &out)
			tokens[i] = out.Usage.CompletionTokens
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	total := 0
	for i, err := range errs {
		if err != nil {
			return 0, err
		}
		total += tokens[i]
	}
	return float64(total) / elapsed.Seconds(), nil
}

// batchRate uploads the bodies as a batch input, then times the batch from its creation to
// its end, and returns its completion tokens per second.
func (b *apiClient) batchRate(bodies []map[string]any) (float64, error) {
	file, err := b.uploadBatch(bodies)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	id, err := b.createBatch(file)
	if err != nil {
		return 0, err
	}
	done, err := b.waitBatch(id, batchState.ended)
	elapsed := time.Since(start)
	if err != nil {
		return 0, err
	}
	if done.Status != "completed" || done.RequestCounts.Failed > 0 {
		return 0, fmt.Errorf("batch %s ended %s with %d failed lines", id, done.Status, done.RequestCounts.Failed)
	}
	return float64(done.Usage.OutputTokens) / elapsed.Seconds(), nil
}

// ttfts times n interactive streaming requests one after another, in milliseconds; before, when
// set, runs first.
func (b *apiClient) ttfts(n int, before func() error) ([]float64, error) {
	if before != nil {
		if err := before(); err != nil {
			return nil, err
		}
	}
	var out []float64
	for i := range n {
		s, err := b.sample(fmt.Sprintf("Question %d: what did the dog see?", i), 8)
		if err != nil {
			return nil, err
		}
		out = append(out, float64(s.ttft().Microseconds())/1000)
	}
	return out, nil
}

// batchState is the part of a batch object the bench reads.
type batchState struct {
	ID            string `json:"id"`
	Status        string `json:"status"`
	RequestCounts struct {
		Completed int `json:"completed"`
		Failed    int `json:"failed"`
	} `json:"request_counts"`
	Usage struct {
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
}

func (s batchState) ended() bool {
	return s.Status == "completed" || s.Status == "failed" || s.Status == "cancelled"
}

// startBatch uploads the bodies and creates a batch on them.
func (b *apiClient) startBatch(bodies []map[string]any) (string, error) {
	file, err := b.uploadBatch(bodies)
	if err != nil {
		return "", err
	}
	return b.createBatch(file)
}

// uploadBatch uploads the bodies as a JSONL batch input (POST /v1/files) and returns its id.
func (b *apiClient) uploadBatch(bodies []map[string]any) (string, error) {
	var input bytes.Buffer
	for i, body := range bodies {
		line, _ := json.Marshal(map[string]any{"custom_id": fmt.Sprintf("r%d", i), "method": "POST", "url": "/v1/chat/completions", "body": body})
		input.Write(append(line, '\n'))
	}
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	part, _ := mw.CreateFormFile("file", "batch.jsonl")
	part.Write(input.Bytes())
	mw.WriteField("purpose", "batch")
	mw.Close()
	res, err := http.Post(b.url+"/v1/files", mw.FormDataContentType(), &form)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(res.Body)
		return "", fmt.Errorf("upload: status %d: %s", res.StatusCode, msg)
	}
	var out struct{ ID string }
	err = json.NewDecoder(res.Body).Decode(&out)
	return out.ID, err
}

func (b *apiClient) createBatch(file string) (string, error) {
	var out batchState
	err := b.post("/v1/batches", map[string]string{"input_file_id": file, "endpoint": "/v1/chat/completions", "completion_window": "24h"}, &out)
	return out.ID, err
}

func (b *apiClient) getBatch(id string) (batchState, error) {
	var out batchState
	res, err := http.Get(b.url + "/v1/batches/" + id)
	if err != nil {
		return out, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(res.Body)
		return out, fmt.Errorf("batch %s: status %d: %s", id, res.StatusCode, msg)
	}
	return out, json.NewDecoder(res.Body).Decode(&out)
}

func (b *apiClient) cancelBatch(id string) error {
	return b.post("/v1/batches/"+id+"/cancel", map[string]string{}, nil)
}

// waitBatch polls the batch every 10 ms until done says so (more often would take CPU from
// the server on a small machine).
func (b *apiClient) waitBatch(id string, done func(batchState) bool) (batchState, error) {
	deadline := time.Now().Add(30 * time.Minute)
	for {
		s, err := b.getBatch(id)
		if err != nil || done(s) {
			return s, err
		}
		if time.Now().After(deadline) {
			return s, fmt.Errorf("batch %s still %s after 30 minutes", id, s.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
