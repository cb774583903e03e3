package app

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/bench"
)

// TestBenchGatewayJSON: --json prints the gateway suite's report as JSON; tokens flowed through
// both paths at every stream count, and a count above --lanes still runs that many streams
// (the upstream gets a lane for each). Timings are never asserted.
func TestBenchGatewayJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process and workers")
	}
	opts := bench.Options{Suite: "gateway", Repeat: 1, DecodeTokens: 8, Lanes: 2, Streams: []int{1, 3}, JSON: true,
		Command: []string{os.Args[0]}, Env: []string{cliEnv + "=1"}}
	var out bytes.Buffer
	if err := runBench(testConfig(t, testModel), opts, testModel, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	_, body, _ := strings.Cut(out.String(), "\n{") // after the suite's heading
	var r bench.GatewayReport
	if err := json.Unmarshal([]byte("{"+body), &r); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	if r.Lanes != 3 || r.Model == "" || !strings.Contains(r.Upstream, "superfluid serve") ||
		!strings.Contains(r.Gateway, "superfluid serve --team") || len(r.Rows) != 2 {
		t.Fatalf("report %+v", r)
	}
	for i, row := range r.Rows {
		if want := opts.Streams[i]; row.Asked != want || row.Streams != want {
			t.Errorf("row %d: asked %d, sent %d streams, want %d", i, row.Asked, row.Streams, want)
		}
		for _, p := range []bench.GatewayPath{row.Direct, row.Gateway} {
			if p.AtOnce < 1 || p.AtOnce > row.Streams {
				t.Errorf("row %d: %d at once of %d streams", i, p.AtOnce, row.Streams)
			}
		}
		// Every stream of every run yields DecodeTokens tokens (ignore_eos) on both paths.
		if want := row.Streams * opts.DecodeTokens; row.Direct.Tokens != want || row.Gateway.Tokens != want {
			t.Errorf("row %d: %d tokens direct, %d through the gateway, want %d each", i, row.Direct.Tokens, row.Gateway.Tokens, want)
		}
		if row.Direct.TokensPerSecond <= 0 || row.Gateway.TokensPerSecond <= 0 || row.Throughput <= 0 || row.Gateway.TTFTP50Ms <= 0 {
			t.Errorf("row %d: %+v", i, row)
		}
	}
	if r.CPU.DirectTokens != 32 || r.CPU.GatewayTokens != 32 {
		t.Errorf("cpu %+v", r.CPU)
	}
	t.Log(out.String())
}
