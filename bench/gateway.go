package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"syscall"
	"time"
)

// gatewayStreams are the concurrent stream counts the gateway suite is described with.
var gatewayStreams = []int{1, 32}

// GatewayReport is what the gateway suite measured (its --json form).
type GatewayReport struct {
	// Upstream is how the upstream ran: "`superfluid serve` process PID"; Lanes its lanes (as
	// many as the most streams asked for, so every row's streams run at once); Model the id
	// it serves.
	Upstream string `json:"upstream"`
	Lanes    int    `json:"lanes"`
	Model    string `json:"model"`
	// Gateway is how the gateway ran: "`superfluid serve --team` process PID".
	Gateway string `json:"gateway"`
	// Rows are one per stream count asked for.
	Rows []GatewayRow `json:"rows"`
	// CPU is CPU time (user+sys) per 1,000 streamed tokens, in ms: this process's (the client)
	// in the direct runs and in the gateway runs, and the gateway process's own in the gateway
	// runs and, as its floor, in the direct runs (it idles then). The gateway's is -1 where it
	// cannot be read (no /proc).
	CPU struct {
		Client        float64 `json:"client_ms_per_1k_tokens"`
		ClientViaGate float64 `json:"client_via_gateway_ms_per_1k_tokens"`
		Gateway       float64 `json:"gateway_ms_per_1k_tokens"`
		GatewayIdle   float64 `json:"gateway_during_direct_ms_per_1k_tokens"`
		DirectTokens  int     `json:"direct_tokens"`
		GatewayTokens int     `json:"gateway_tokens"`
	} `json:"cpu"`
}

// GatewayRow is one stream count: each path's throughput and median TTFT, and the ratios.
type GatewayRow struct {
	// Asked is the stream count asked for; Streams the count sent at once (the same: the
	// upstream has a lane for each).
	Asked   int         `json:"asked"`
	Streams int         `json:"streams"`
	Direct  GatewayPath `json:"direct"`
	Gateway GatewayPath `json:"gateway"`
	// Throughput is gateway tokens/s over direct tokens/s (target >= 0.97); TTFTDeltaMs the
	// gateway's median TTFT minus the direct one (target <= 2).
	Throughput  float64 `json:"throughput_ratio"`
	TTFTDeltaMs float64 `json:"ttft_delta_ms"`
}

// GatewayPath is one path's measurement at one stream count, over all runs.
type GatewayPath struct {
	TokensPerSecond float64 `json:"tokens_per_second"`
	TTFTP50Ms       float64 `json:"ttft_p50_ms"`
	Tokens          int     `json:"tokens"`
	// AtOnce is the most streams that were generating at the same moment (between their first
	// and last token), in any run: how many really ran at once.
	AtOnce int `json:"at_once"`
	// CPUMsPer1k is the client's CPU per 1,000 tokens.
	CPUMsPer1k float64 `json:"cpu_ms_per_1k_tokens"`
}

// benchGateway compares streaming through the gateway (a `superfluid serve --team` process: a
// person's key, routing by the model field, usage records, an openai lane forwarding to the
// upstream) with calling its upstream directly (a `superfluid serve` process with a lane for
// each stream), both started from Options.Command, in the same run: completion tokens/s summed
// over the streams and the median time to first token, at 1 and 32 concurrent streams, and the
// gateway process's CPU per 1,000 streamed tokens (read from /proc, so the client, this
// process, is not in it).
func benchGateway(model string, o Options, w io.Writer) error {
	r, err := measureGateway(model, o)
	if err != nil {
		return err
	}
	if o.JSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	writeGateway(w, r)
	return nil
}

// measureGateway starts the upstream and the gateway and measures both paths.
func measureGateway(model string, o Options) (*GatewayReport, error) {
	if len(o.Command) == 0 {
		return nil, errors.New("the gateway suite needs the program to start the upstream with (Options.Command is empty)")
	}
	counts := o.Streams
	if len(counts) == 0 {
		counts = gatewayStreams
	}
	// A lane for each stream of the largest row: the 32-stream row runs 32 at once, not --lanes.
	lanes := max(1, o.Lanes, slices.Max(counts))
	up, err := startUpstream(o, model, lanes)
	if err != nil {
		return nil, err
	}
	defer up.stop()
	gw, key, err := startGateway(o, up.url, up.model)
	if err != nil {
		return nil, err
	}
	defer gw.stop()
	rep := &GatewayReport{Upstream: fmt.Sprintf("`superfluid serve` process %d", up.cmd.Process.Pid), Lanes: lanes, Model: up.model,
		Gateway: fmt.Sprintf("`superfluid serve --team` process %d", gw.cmd.Process.Pid)}
	paths := [2]*apiClient{{url: up.url, model: up.model},
		{url: gw.url, model: gatewayModel, headers: map[string]string{"Authorization": "Bearer " + key}}}
	names := [2]string{"direct", "gateway"}
	// One stream through each path first: the upstream's first request and the gateway's
	// first connections are not what is measured.
	for i, api := range paths {
		if _, err := api.sample("Warm up.", 2); err != nil {
			return nil, fmt.Errorf("%s: %w", names[i], err)
		}
	}
	gwPID := gw.cmd.Process.Pid
	var cpu [2]gatewayRuns
	for _, n := range counts {
		// An unmeasured run of n streams through each path first: the upstream's first batch
		// of a new width (its buffers grow) and the connections of n clients are not measured.
		for i, api := range paths {
			if _, err := streamThrough(api, n, min(8, o.DecodeTokens), "warm "+names[i], gwPID); err != nil {
				return nil, fmt.Errorf("%s, warming %d streams: %w", names[i], n, err)
			}
		}
		var runs [2]gatewayRuns
		for run := range o.Repeat {
			// The paths take turns, the first changing run by run, so drift on a noisy
			// machine falls on both.
			for k := range 2 {
				i := (k + run) % 2
				r, err := streamThrough(paths[i], n, o.DecodeTokens, fmt.Sprintf("%s %d", names[i], run), gwPID)
				if err != nil {
					return nil, fmt.Errorf("%s, %d streams: %w", names[i], n, err)
				}
				runs[i].add(r)
				cpu[i].add(gatewayRun{cpu: r.cpu, gatewayCPU: r.gatewayCPU, tokens: r.tokens})
			}
		}
		d, g := runs[0].path(), runs[1].path()
		rep.Rows = append(rep.Rows, GatewayRow{Asked: n, Streams: n, Direct: d, Gateway: g,
			Throughput: g.TokensPerSecond / d.TokensPerSecond, TTFTDeltaMs: g.TTFTP50Ms - d.TTFTP50Ms})
	}
	c := &rep.CPU
	c.DirectTokens, c.GatewayTokens = cpu[0].tokens, cpu[1].tokens
	c.Client, c.ClientViaGate = perThousand(cpu[0].cpu, cpu[0].tokens), perThousand(cpu[1].cpu, cpu[1].tokens)
	c.Gateway, c.GatewayIdle = -1, -1
	if _, ok := processCPUOf(gwPID); ok {
		c.Gateway, c.GatewayIdle = perThousand(cpu[1].gatewayCPU, cpu[1].tokens), perThousand(cpu[0].gatewayCPU, cpu[0].tokens)
	}
	if c.DirectTokens == 0 || c.GatewayTokens == 0 {
		return nil, fmt.Errorf("no tokens flowed (direct %d, gateway %d)", c.DirectTokens, c.GatewayTokens)
	}
	return rep, nil
}

// writeGateway prints the report as text.
func writeGateway(w io.Writer, r *GatewayReport) {
	fmt.Fprintf(w, "upstream: %s, %d lanes, %s; gateway: %s, a person's sk-ss- key, an openai lane forwarding to the upstream\n",
		r.Upstream, r.Lanes, r.Model, r.Gateway)
	fmt.Fprintf(w, "%8s %8s %12s %10s %12s %8s %12s\n", "streams", "path", "tokens/s", "TTFT p50", "tokens", "at once", "CPU ms/1k")
	for _, row := range r.Rows {
		for _, p := range []struct {
			name string
			GatewayPath
		}{{"direct", row.Direct}, {"gateway", row.Gateway}} {
			fmt.Fprintf(w, "%8d %8s %12.1f %8.2fms %12d %8d %12.2f\n", row.Streams, p.name, p.TokensPerSecond, p.TTFTP50Ms, p.Tokens,
				p.AtOnce, p.CPUMsPer1k)
		}
		fmt.Fprintf(w, "%8d %8s %11.1f%% %+8.2fms   (target >= 97%% throughput, <= +2 ms TTFT)\n", row.Streams, "gw/dir",
			100*row.Throughput, row.TTFTDeltaMs)
	}
	fmt.Fprintln(w, "(at once: the most streams generating at the same moment, between first and last token; CPU ms/1k: the client's, this process)")
	gate := "not measured (no /proc)"
	if r.CPU.Gateway >= 0 {
		gate = fmt.Sprintf("%.2f ms (%.2f ms while it idled through the direct runs)", r.CPU.Gateway, r.CPU.GatewayIdle)
	}
	fmt.Fprintf(w, "CPU (user+sys) per 1,000 streamed tokens: client %.2f ms direct, %.2f ms via the gateway; gateway's own %s\n",
		r.CPU.Client, r.CPU.ClientViaGate, gate)
}

// gatewayRun is one measurement: n concurrent streams through one path.
type gatewayRun struct {
	wall   time.Duration
	tokens int
	ttfts  []time.Duration
	atOnce int
	// cpu is this process's (the client's); gatewayCPU the gateway process's.
	cpu, gatewayCPU time.Duration
}

// gatewayRuns are the runs of one path at one stream count, added up.
type gatewayRuns gatewayRun

func (r *gatewayRuns) add(x gatewayRun) {
	r.wall += x.wall
	r.tokens += x.tokens
	r.ttfts = append(r.ttfts, x.ttfts...)
	r.atOnce = max(r.atOnce, x.atOnce)
	r.cpu += x.cpu
	r.gatewayCPU += x.gatewayCPU
}

// rate is the completion tokens of all streams over the wall time of the runs.
func (r *gatewayRuns) rate() float64 { return float64(r.tokens) / r.wall.Seconds() }

// path is the runs as a report's path.
func (r *gatewayRuns) path() GatewayPath {
	return GatewayPath{TokensPerSecond: r.rate(), TTFTP50Ms: float64(r.ttftP50()) / float64(time.Millisecond), Tokens: r.tokens,
		AtOnce: r.atOnce, CPUMsPer1k: perThousand(r.cpu, r.tokens)}
}

func (r *gatewayRuns) ttftP50() time.Duration {
	if len(r.ttfts) == 0 {
		return 0
	}
	s := slices.Clone(r.ttfts)
	slices.Sort(s)
	return s[len(s)/2]
}

// perThousand is the CPU time per 1,000 tokens, in milliseconds.
func perThousand(cpu time.Duration, tokens int) float64 {
	if tokens == 0 {
		return 0
	}
	return float64(cpu) / float64(time.Millisecond) * 1000 / float64(tokens)
}

// streamThrough streams n generations of tokens each at once through api, reading the CPU of
// this process and of the gateway process gatewayPID around them. Each prompt starts with label
// and the stream's number: no path finds another's prompt in the upstream's cache.
func streamThrough(api *apiClient, n, tokens int, label string, gatewayPID int) (gatewayRun, error) {
	samples := make([]sample, n)
	errs := make([]error, n)
	cpuBefore := processCPU()
	gwBefore, _ := processCPUOf(gatewayPID)
	began := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			samples[i], errs[i] = api.sample(fmt.Sprintf("%s-%d. Once upon a time", label, i), tokens)
		}()
	}
	wg.Wait()
	gwAfter, _ := processCPUOf(gatewayPID)
	r := gatewayRun{wall: time.Since(began), cpu: processCPU() - cpuBefore, gatewayCPU: gwAfter - gwBefore}
	for i, s := range samples {
		if errs[i] != nil {
			return r, errs[i]
		}
		r.tokens += s.tokens
		r.ttfts = append(r.ttfts, s.ttft())
	}
	r.atOnce = atOnce(samples)
	return r, nil
}

// atOnce is the most samples generating at the same moment: between their first and last
// token, both ends counted (a stream of one event spans an instant).
func atOnce(samples []sample) int {
	type edge struct {
		at    time.Time
		delta int
	}
	edges := make([]edge, 0, 2*len(samples))
	for _, s := range samples {
		edges = append(edges, edge{s.first, +1}, edge{s.last, -1})
	}
	// At the same instant starts come before ends, so touching spans overlap.
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return b.delta - a.delta
	})
	most, now := 0, 0
	for _, e := range edges {
		now += e.delta
		most = max(most, now)
	}
	return most
}

// processCPU is the user and system CPU time this process has used (getrusage RUSAGE_SELF).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
