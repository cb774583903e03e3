package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core"
)

// backgroundStreams is how many background streams run while the qos suite's probes do.
const backgroundStreams = 8

// benchQoS measures the scheduling classes and the cost of keys and rate limits:
//   - the time to first token of interactive requests while 8 streams with x-superfluid-qos:
//     background run (each restarted as it ends, so 8 are always running or waiting), as a ratio
//     of that on an idle server (target <= 1.5x): the core's gate keeps a lane free of
//     background work, so an interactive request waits for the engine's tick, not for a stream;
//   - requests a second through the HTTP layer on a fake engine with an API key and rate limits
//     (the key's rpm, tpm and concurrency, and a per-address limit, all too high to refuse), as
//     a ratio of the same server without them (target >= 95%). Runs of the two alternate, so
//     drift hits both alike.
func benchQoS(model string, o Options, w io.Writer) error {
	api, stop, err := serve(o, ServeOptions{Model: model, Parallel: o.Parallel, Threads: o.Threads})
	if err != nil {
		return err
	}
	defer stop()
	fmt.Fprintf(w, "model %s, %d lanes, %d background streams of %d tokens\n", model, o.Parallel, backgroundStreams, 4*o.DecodeTokens)
	if _, err := api.sample("Warm up.", 4); err != nil {
		return err
	}
	probes := max(5, o.Repeat)
	idle, err := api.ttfts(probes, nil)
	if err != nil {
		return fmt.Errorf("idle TTFT: %w", err)
	}
	busy, err := underBackground(api, o, probes)
	if err != nil {
		return err
	}
	iMed, _ := medianMin(idle)
	bMed, _ := medianMin(busy)
	fmt.Fprintf(w, "%-34s %12s %12s %12s\n", "interactive TTFT (ms)", "median", "min", "max")
	fmt.Fprintf(w, "%-34s %12.1f %12.1f %12.1f\n", "idle server", iMed, slices.Min(idle), maxOf(idle))
	fmt.Fprintf(w, "%-34s %12.1f %12.1f %12.1f\n", fmt.Sprintf("while %d background streams run", backgroundStreams), bMed, slices.Min(busy), maxOf(busy))
	fmt.Fprintf(w, "busy/idle (medians) %.2fx (target <= 1.5x)\n", bMed/iMed)

	plain, keyed, err := limitsOverhead(o)
	if err != nil {
		return err
	}
	pMed, pMin := medianMin(plain)
	kMed, kMin := medianMin(keyed)
	fmt.Fprintf(w, "%-34s %12s %12s\n", "fake engine, requests/s", "median", "min")
	fmt.Fprintf(w, "%-34s %12.0f %12.0f\n", "no keys, no limits", pMed, pMin)
	fmt.Fprintf(w, "%-34s %12.0f %12.0f\n", "key checks and rate limits", kMed, kMin)
	fmt.Fprintf(w, "with/without (medians) %.1f%% (target >= 95%%)\n", 100*kMed/pMed)
	return nil
}

// underBackground times probes interactive requests while backgroundStreams background streams
// keep running; it starts the probes once every stream has ended once (steady state).
func underBackground(api *apiClient, o Options, probes int) ([]float64, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ended atomic.Int64
	errs := make(chan error, backgroundStreams)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for i := range backgroundStreams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ctx.Err() == nil; n++ {
				_, err := api.streamWith(map[string]any{"max_tokens": 4 * o.DecodeTokens, "ignore_eos": true, "temperature": 0,
					"messages": []map[string]string{{"role": "user", "content": fmt.Sprintf("Background %d-%d: once upon a time", i, n)}}},
					map[string]string{"X-Superfluid-Qos": "background"})
				if err != nil && ctx.Err() == nil {
					errs <- fmt.Errorf("background stream: %w", err)
					return
				}
				ended.Add(1)
			}
		}()
	}
	return api.ttfts(probes, func() error {
		for ended.Load() < backgroundStreams {
			select {
			case err := <-errs:
				return err
			case <-time.After(5 * time.Millisecond):
			}
		}
		return nil
	})
}

// limitsOverhead measures requests a second on two in-process servers over the fake engine,
// without and with a key and rate limits, o.Repeat runs each, alternating.
func limitsOverhead(o Options) (plain, keyed []float64, err error) {
	const key = "sk-sf-bench-qos-key"
	keys, err := auth.ParsePolicy([]byte(`{"keys": [{"name": "bench", "key": "` + key + `", "rpm": 1000000000, "tpm": 1000000000, "concurrency": 1000}]}`))
	if err != nil {
		return nil, nil, err
	}
	ring, err := auth.New(context.Background(), auth.Config{Keys: keys})
	if err != nil {
		return nil, nil, err
	}
	open := fakeServer(server.Config{})
	defer open.Close()
	guarded := fakeServer(server.Config{Keys: ring, Limits: server.NewLimits(server.LimitsConfig{PerIP: 1_000_000_000})})
	defer guarded.Close()
	const workers, requests = 8, 10_000
	for _, url := range []string{open.URL, guarded.URL} { // warm up both: connections, allocations
		if _, err := requestRate(url, key, workers, requests/4); err != nil {
			return nil, nil, fmt.Errorf("warm up: %w", err)
		}
	}
	for range o.Repeat {
		rate, err := requestRate(open.URL, "", workers, requests)
		if err != nil {
			return nil, nil, fmt.Errorf("without keys: %w", err)
		}
		plain = append(plain, rate)
		if rate, err = requestRate(guarded.URL, key, workers, requests); err != nil {
			return nil, nil, fmt.Errorf("with keys: %w", err)
		}
		keyed = append(keyed, rate)
	}
	return plain, keyed, nil
}

// fakeServer is the HTTP server over one fake model ("fake", replying "ok").
func fakeServer(cfg server.Config) *httptest.Server {
	tmpl, _ := chat.Parse("")
	svc := core.New(core.Config{}, nil, &core.Model{ID: "fake", Path: "/fake.gguf", Engine: enginetest.New(256, "ok"), Template: tmpl})
	return httptest.NewServer(server.New(cfg, svc))
}

// requestRate sends n short chat completions from workers clients at once and returns the
// requests a second.
func requestRate(url, key string, workers, n int) (float64, error) {
	body, _ := json.Marshal(map[string]any{"model": "fake", "messages": []map[string]string{{"role": "user", "content": "hi"}}})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	defer client.CloseIdleConnections()
	var next atomic.Int64
	errs := make([]error, workers)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				if key != "" {
					req.Header.Set("Authorization", "Bearer "+key)
				}
				res, err := client.Do(req)
				if err != nil {
					errs[i] = err
					return
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					errs[i] = fmt.Errorf("status %d", res.StatusCode)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}
