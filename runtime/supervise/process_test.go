package supervise

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fastConfig is a config with test-sized timings around the helper server.
func fastConfig(t *testing.T, mode string) Config {
	return Config{
		Command:       helperCommand(),
		Model:         "m1",
		LogDir:        t.TempDir(),
		Name:          "lane",
		Env:           []string{helperEnv + "=" + mode},
		StartTimeout:  5 * time.Second,
		CheckInterval: 20 * time.Millisecond,
		CheckTimeout:  time.Second,
		FailAfter:     2,
		Grace:         2 * time.Second,
		MinBackoff:    100 * time.Millisecond,
		MaxBackoff:    400 * time.Millisecond,
		ResetAfter:    time.Minute,
	}
}

func startProcess(t *testing.T, cfg Config) *Process {
	t.Helper()
	p, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		p.Stop(ctx)
	})
	return p
}

func getBody(t *testing.T, url string) string {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, b)
	}
	return string(b)
}

func TestStartRefusesBadCommands(t *testing.T) {
	dir := t.TempDir()
	for _, cmd := range []string{"", "serve {model}", "'unterminated --port {port}", "no-such-program-xyz --port {port}"} {
		if p, err := Start(Config{Command: cmd, LogDir: dir}); err == nil {
			p.Stop(context.Background())
			t.Errorf("Start(%q) started", cmd)
		}
	}
	for _, name := range []string{"../x", "a/b", ".."} {
		if p, err := Start(Config{Command: helperCommand(), LogDir: dir, Name: name}); err == nil {
			p.Stop(context.Background())
			t.Errorf("Start with the name %q started", name)
		}
	}
}

// A server that answers becomes healthy at URL; a switch restarts it with the new model; Stop
// leaves nothing running.
func TestHealthySwitchAndStop(t *testing.T) {
	var rec recorder
	cfg := fastConfig(t, "serve")
	cfg.OnChange = rec.add
	p := startProcess(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	if p.RetryAfter() != 0 {
		t.Errorf("RetryAfter() = %s while healthy, want 0", p.RetryAfter())
	}
	if body := getBody(t, p.URL()+"/v1/models"); !strings.Contains(body, `"m1"`) {
		t.Errorf("/v1/models = %s, want m1", body)
	}
	first := p.Status().PID
	if err := p.Switch("m2"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the switch to m2", 10*time.Second, func() bool {
		s := p.Status()
		return s.State == Healthy && s.Model == "m2"
	})
	if body := getBody(t, p.URL()+"/v1/models"); !strings.Contains(body, `"m2"`) {
		t.Errorf("/v1/models after the switch = %s, want m2", body)
	}
	second := p.Status().PID
	assertGone(t, first)
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if s := p.Status(); s.State != Stopped || s.URL != "" || s.PID != 0 {
		t.Errorf("after Stop: %+v", s)
	}
	assertGone(t, second)
	if err := p.Switch("m3"); err == nil {
		t.Error("Switch after Stop succeeded")
	}
	var states []State
	for _, s := range rec.all() {
		states = append(states, s.State)
	}
	want := []State{Starting, Healthy, Starting, Healthy, Stopped}
	if strings.Join(stateNames(states), ",") != strings.Join(stateNames(want), ",") {
		t.Errorf("states %v, want %v", states, want)
	}
}

func stateNames(s []State) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = string(v)
	}
	return out
}

// A command that exits at start fails, is started again with growing backoff, and its output
// stays in the log across the restarts.
func TestExitAtStartBacksOff(t *testing.T) {
	var rec recorder
	cfg := fastConfig(t, "exit")
	cfg.OnChange = rec.add
	p := startProcess(t, cfg)
	waitFor(t, "four starts", 10*time.Second, func() bool { return p.Status().Starts >= 4 })
	if p.URL() != "" {
		t.Errorf("URL() = %q for a server that never answered", p.URL())
	}
	var starts []time.Time
	var failed *Status
	for _, s := range rec.all() {
		switch s.State {
		case Starting:
			starts = append(starts, s.Since)
		case Failed:
			failed = &s
		case Healthy:
			t.Fatal("a server that exits became healthy")
		}
	}
	if failed == nil {
		t.Fatal("no failed state reported")
	}
	for _, want := range []string{"exited at start", "exit status 3", `fatal: cannot load model "m1"`} {
		if !strings.Contains(failed.Err, want) {
			t.Errorf("Err = %q, want it to say %q", failed.Err, want)
		}
	}
	// Backoff: 100ms, 200ms, 400ms (the cap) between the starts.
	for i, min := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
		if gap := starts[i+1].Sub(starts[i]); gap < min || gap > min+2*time.Second {
			t.Errorf("gap %d = %s, want about %s", i, gap, min)
		}
	}
	if p.State() == Failed {
		if ra := p.RetryAfter(); ra < time.Second {
			t.Errorf("RetryAfter() = %s while failed, want at least 1s", ra)
		}
	}
	log, err := os.ReadFile(p.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(log), "fatal: cannot load model"); n < 3 {
		t.Errorf("the log has the server's output %d times, want one per start:\n%s", n, log)
	}
	if filepath.Dir(p.LogPath()) != cfg.LogDir {
		t.Errorf("log at %s, want it in %s", p.LogPath(), cfg.LogDir)
	}
}

// A command that never answers fails at the start timeout; Stop of a process that ignores
// SIGTERM kills it and its grandchild after the grace period, leaving no process.
func TestStartTimeoutAndStubbornStop(t *testing.T) {
	cfg := fastConfig(t, "hang")
	cfg.StartTimeout = 400 * time.Millisecond
	cfg.Grace = 300 * time.Millisecond
	cfg.MinBackoff = 5 * time.Second // stay failed while the test looks
	p := startProcess(t, cfg)
	waitFor(t, "the grandchild", 5*time.Second, func() bool {
		b, _ := os.ReadFile(p.LogPath())
		return strings.Contains(string(b), "grandchild ")
	})
	gc := grandchildPID(t, p.LogPath())
	if p.State() != Starting {
		t.Errorf("state %s, want starting", p.State())
	}
	if ra := p.RetryAfter(); ra < time.Second {
		t.Errorf("RetryAfter() = %s while starting, want at least 1s", ra)
	}
	waitFor(t, "the start timeout", 5*time.Second, func() bool { return p.State() == Failed })
	if s := p.Status(); !strings.Contains(s.Err, "start timeout") || !strings.Contains(s.Err, "loading weights") {
		t.Errorf("Err = %q, want the start timeout and the last output", s.Err)
	}
	// The failed run's group is gone already, the grandchild with it: the leader ignored
	// SIGTERM, so only the SIGKILL after the grace took them.
	assertGone(t, gc)
	if b, _ := os.ReadFile(p.LogPath()); !strings.Contains(string(b), "SIGKILL") {
		t.Errorf("the log does not say the stubborn server was killed:\n%s", b)
	}

	// Stop while a stubborn one runs: the second run.
	p.Switch("m2") // start again now instead of after the long backoff
	waitFor(t, "the second run", 5*time.Second, func() bool { return p.Status().PID != 0 })
	pid := p.Status().PID
	waitFor(t, "the second grandchild", 5*time.Second, func() bool { return len(descendants(pid)) > 0 })
	kids := descendants(pid)
	start := time.Now()
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < cfg.Grace || took > cfg.Grace+3*time.Second {
		t.Errorf("Stop took %s, want about the %s grace", took, cfg.Grace)
	}
	assertGone(t, append(kids, pid)...)
}

// A healthy server that stops answering is restarted, and healthy again once it answers.
func TestRestartWhenItStopsAnswering(t *testing.T) {
	sick := filepath.Join(t.TempDir(), "sick")
	cfg := fastConfig(t, "serve")
	cfg.Env = append(cfg.Env, "SUPERVISE_TEST_SICK="+sick)
	cfg.MinBackoff = 300 * time.Millisecond
	p := startProcess(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	first := p.Status().PID
	os.WriteFile(sick, nil, 0o600)
	waitFor(t, "the restart", 5*time.Second, func() bool { return p.State() != Healthy })
	if p.URL() != "" {
		t.Errorf("URL() = %q while not healthy", p.URL())
	}
	if s := p.Status(); !strings.Contains(s.Err, "stopped answering") {
		t.Errorf("Err = %q", s.Err)
	}
	os.Remove(sick)
	if err := p.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	if s := p.Status(); s.Starts != 2 || s.PID == first {
		t.Errorf("after the restart: %+v (first pid %d)", s, first)
	}
	assertGone(t, first)
}

// The backoff starts again after a run that was healthy for ResetAfter: two failures of
// long-healthy runs both wait MinBackoff, where a second failure in a row would wait double.
func TestBackoffResetsAfterAHealthyRun(t *testing.T) {
	var rec recorder
	sick := filepath.Join(t.TempDir(), "sick")
	cfg := fastConfig(t, "serve")
	cfg.Env = append(cfg.Env, "SUPERVISE_TEST_SICK="+sick)
	cfg.MinBackoff = time.Second // the doubled one is 2s: room for a loaded machine's slow starts
	cfg.MaxBackoff = 5 * time.Second
	cfg.ResetAfter = 100 * time.Millisecond
	// Only the sick file fails a run: on a loaded machine a check or two may time out, which
	// would end a run that had been healthy for less than ResetAfter (a doubled backoff).
	cfg.FailAfter, cfg.CheckTimeout = 5, 3*time.Second
	cfg.OnChange = rec.add
	p := startProcess(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for round := 0; round < 2; round++ {
		if err := p.WaitHealthy(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		os.WriteFile(sick, nil, 0o600)
		waitFor(t, "the failure", 5*time.Second, func() bool { return p.State() == Failed })
		os.Remove(sick)
	}
	if err := p.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	var gaps []time.Duration
	var failedAt time.Time
	for _, s := range rec.all() {
		switch {
		case s.State == Failed:
			failedAt = s.Since
		case s.State == Starting && !failedAt.IsZero():
			gaps = append(gaps, s.Since.Sub(failedAt))
			failedAt = time.Time{}
		}
	}
	if len(gaps) != 2 {
		t.Fatalf("want two restarts, got gaps %v", gaps)
	}
	for _, g := range gaps {
		if g < cfg.MinBackoff || g >= 2*cfg.MinBackoff {
			t.Errorf("backoff %s, want %s each time (gaps %v)", g, cfg.MinBackoff, gaps)
		}
	}
}
