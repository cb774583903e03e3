package bench

import (
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

// benchGateway compares streaming through a gateway (router + core over forward.NewModel, in
// this process) with calling its upstream directly (a `superfluid serve` process of its own,
// started from Options.Command), in the same run: completion tokens/s summed over the streams
// and the median time to first token, at 1 and 32 concurrent streams (no more than the
// upstream's lanes), and this process's CPU per 1,000 streamed tokens. The upstream being
// another process is what lets this process's getrusage count only the client and the gateway.
func benchGateway(model string, o Options, w io.Writer) error {
	if len(o.Command) == 0 {
		return errors.New("the gateway suite needs the program to start the upstream with (Options.Command is empty)")
	}
	lanes := max(1, o.Lanes)
	up, err := startUpstream(o, model, lanes)
	if err != nil {
		return err
	}
	defer up.stop()
	gw, err := startGateway(up.url, up.model)
	if err != nil {
		return err
	}
	defer gw.stop()
	fmt.Fprintf(w, "upstream: `superfluid serve` process %d, %d lanes, %s; gateway: router + core over forward.NewModel in this process\n",
		up.cmd.Process.Pid, lanes, up.model)
	counts := o.Streams
	if len(counts) == 0 {
		counts = gatewayStreams
	}
	paths := []struct {
		name string
		api  *apiClient
	}{{"direct", &apiClient{url: up.url, model: up.model}}, {"gateway", &apiClient{url: gw.url, model: "gateway"}}}
	// One stream through each path first: the upstream's first request and the gateway's
	// connections are not what is measured.
	for _, p := range paths {
		if _, err := p.api.sample("Warm up.", 2); err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
	}
	fmt.Fprintf(w, "%8s %8s %12s %10s %12s %12s\n", "streams", "path", "tokens/s", "TTFT p50", "tokens", "CPU ms/1k")
	var cpu [2]struct {
		used   time.Duration
		tokens int
	}
	for _, n := range counts {
		if n > lanes {
			fmt.Fprintf(w, "%d streams: the upstream has %d lanes, so %d streams\n", n, lanes, lanes)
			n = lanes
		}
		var runs [2]gatewayRuns
		// The paths take turns run by run, so drift on a noisy machine falls on both.
		for run := range o.Repeat {
			for i, p := range paths {
				r, err := streamThrough(p.api, n, o.DecodeTokens, run)
				if err != nil {
					return fmt.Errorf("%s, %d streams: %w", p.name, n, err)
				}
				runs[i].add(r)
				cpu[i].used += r.cpu
				cpu[i].tokens += r.tokens
			}
		}
		for i, p := range paths {
			fmt.Fprintf(w, "%8d %8s %12.1f %10s %12d %12.2f\n", n, p.name, runs[i].rate(), runs[i].ttftP50().Round(10*time.Microsecond),
				runs[i].tokens, perThousand(runs[i].cpu, runs[i].tokens))
		}
		d, g := runs[0], runs[1]
		fmt.Fprintf(w, "%8d %8s %11.1f%% %+9.2fms   (target >= 97%% throughput, <= +2 ms TTFT)\n", n, "gw/dir",
			100*g.rate()/d.rate(), float64(g.ttftP50()-d.ttftP50())/float64(time.Millisecond))
	}
	client := perThousand(cpu[0].used, cpu[0].tokens)
	both := perThousand(cpu[1].used, cpu[1].tokens)
	fmt.Fprintf(w, "CPU of this process (getrusage user+sys) per 1,000 streamed tokens: client alone (direct runs) %.2f ms, "+
		"client + gateway %.2f ms, gateway's own %.2f ms (the difference)\n", client, both, both-client)
	if cpu[0].tokens == 0 || cpu[1].tokens == 0 {
		return fmt.Errorf("no tokens flowed (direct %d, gateway %d)", cpu[0].tokens, cpu[1].tokens)
	}
	return nil
}

// gatewayRun is one measurement: n concurrent streams through one path.
type gatewayRun struct {
	wall   time.Duration
	tokens int
	ttfts  []time.Duration
	cpu    time.Duration
}

// gatewayRuns are the runs of one path at one stream count, added up.
type gatewayRuns gatewayRun

func (r *gatewayRuns) add(x gatewayRun) {
	r.wall += x.wall
	r.tokens += x.tokens
	r.ttfts = append(r.ttfts, x.ttfts...)
	r.cpu += x.cpu
}

// rate is the completion tokens of all streams over the wall time of the runs.
func (r *gatewayRuns) rate() float64 { return float64(r.tokens) / r.wall.Seconds() }

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

// streamThrough streams n generations of tokens each at once through api.
func streamThrough(api *apiClient, n, tokens, run int) (gatewayRun, error) {
	samples := make([]sample, n)
	errs := make([]error, n)
	cpuBefore := processCPU()
	began := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			samples[i], errs[i] = api.sample(fmt.Sprintf("%d-%d. Once upon a time", run, i), tokens)
		}()
	}
	wg.Wait()
	r := gatewayRun{wall: time.Since(began), cpu: processCPU() - cpuBefore}
	for i, s := range samples {
		if errs[i] != nil {
			return r, errs[i]
		}
		r.tokens += s.tokens
		r.ttfts = append(r.ttfts, s.ttft())
	}
	return r, nil
}

// processCPU is the user and system CPU time this process has used (getrusage RUSAGE_SELF).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
