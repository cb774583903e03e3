// Package soak runs superfluid for a long time under mixed traffic and says whether it holds
// up: a `superfluid serve` process of its own (started from Options.Command on a fresh data
// folder and a free port) gets a steady rate of requests in all three dialects (OpenAI chat
// completions and Responses, Anthropic messages, Ollama chat and generate), streamed and not,
// with forced tool calls, embeddings on a tiny BERT, batches and files, while 10% of the
// streaming clients hang up mid-stream, a worker is killed with SIGKILL every few minutes and
// a model is unloaded and loaded again every few minutes. Every 10 s it samples the server's
// RSS, open files and goroutines and its workers' RSS.
//
// It fails when a curve grows without bound (see curve.judge), when something the server
// acknowledged is lost (a file that no longer downloads with its bytes, a batch line without
// exactly one result, a stored response that reads back changed, a request missing from
// GET /v1/usage), when a reply is malformed (every reply is decoded strictly against its
// dialect; streams must end with their terminal event unless the client hung up), or when a
// request fails other than the way chaos explains: a 5xx or an error frame while a worker was
// being killed or a model reloaded.
package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
)

// Options are what a soak is told.
type Options struct {
	// Command runs this program: the superfluid binary and any leading arguments; Env is added
	// to the environment of the processes it starts.
	Command []string
	Env     []string
	// Model is the .gguf file generation requests run on (stories260K).
	Model string
	// Duration is how long the traffic runs; Rate its requests per second, all kinds together
	// (default 3).
	Duration time.Duration
	Rate     float64
	// ContextLength, Parallel and Threads are the server's --ctx (default 2048: room for tool
	// instructions), --parallel (default 4) and --threads.
	ContextLength, Parallel, Threads int
	// Dir is where the soak makes its data folder ("": the system's temporary folder). The
	// folder is removed after a passing run and kept (with the server's log) after a failing one.
	Dir string
	// SampleEvery, KillEvery, UnloadEvery and Warmup are chosen from Duration when 0: every
	// 10 s, 3 and 4 minutes, and 5 minutes, for runs long enough (see defaults).
	SampleEvery, KillEvery, UnloadEvery, Warmup time.Duration
	// Seed seeds the traffic's choices (0: random).
	Seed uint64
}

func (o *Options) defaults() error {
	if len(o.Command) == 0 {
		return errors.New("soak: no command to start the server with")
	}
	if o.Duration <= 0 {
		return errors.New("soak: the duration must be positive")
	}
	if o.Rate == 0 {
		o.Rate = 3
	}
	if o.Rate < 0 {
		return errors.New("soak: the rate must be positive")
	}
	if o.ContextLength == 0 {
		o.ContextLength = 2048
	}
	if o.Parallel == 0 {
		o.Parallel = 4
	}
	clamp := func(d, lo, hi time.Duration) time.Duration { return min(hi, max(lo, d)) }
	if o.SampleEvery == 0 {
		o.SampleEvery = clamp(o.Duration/30, time.Second, 10*time.Second)
	}
	if o.KillEvery == 0 {
		o.KillEvery = clamp(o.Duration/3, 5*time.Second, 3*time.Minute)
	}
	if o.UnloadEvery == 0 {
		o.UnloadEvery = clamp(o.Duration/3, 5*time.Second, 4*time.Minute)
	}
	if o.Warmup == 0 {
		o.Warmup = min(5*time.Minute, o.Duration/5)
	}
	if o.Seed == 0 {
		o.Seed = rand.Uint64()
	}
	return nil
}

// bertEmbd is the size of the BERT's vectors.
const bertEmbd = 32

// soak is one run.
type soak struct {
	o                      Options
	http                   *http.Client
	srv                    *server
	url, model, embedModel string
	bertPath               string
	records                *records
	tally                  *tally
	chaos                  *chaos
	start                  time.Time

	curves       []*curve // server RSS, fds, goroutines, workers' RSS
	cpu0, cpu1   float64  // the server's CPU seconds at the first and last sample
	workerPeak   float64
	workerPIDs   map[int]bool
	sampleErrors []string
	usage        []usageCheck
	endWorkers   string // the models' states and workers after the traffic
	mostWorkers  map[string]int
	mu           sync.Mutex
	sampling     atomic.Bool
	background   sync.WaitGroup // the requests the chaos starts
}

// Run runs a soak and writes its report to w. The error says why it failed.
func Run(ctx context.Context, o Options, w io.Writer) (err error) {
	if err := o.defaults(); err != nil {
		return err
	}
	if _, err := os.Stat(o.Model); err != nil {
		return fmt.Errorf("model file: %w", err)
	}
	dir, err := os.MkdirTemp(o.Dir, "superfluid-soak-")
	if err != nil {
		return err
	}
	defer func() {
		if err == nil {
			os.RemoveAll(dir)
		} else {
			fmt.Fprintf(w, "the data folder and the server's log are kept in %s\n", dir)
		}
	}()
	s := &soak{o: o, records: newRecords(), tally: newTally(), chaos: newChaos(), workerPIDs: map[int]bool{}, mostWorkers: map[string]int{},
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute}}}
	defer s.http.CloseIdleConnections()
	s.curves = []*curve{
		{name: "server RSS", unit: unitBytes, dayFloor: 256 << 20, stepFloor: 32 << 20},
		{name: "server open fds", unit: unitCount, dayFloor: 100, stepFloor: 8},
		{name: "server goroutines", unit: unitCount, dayFloor: 500, stepFloor: 30},
		{name: "workers' RSS (sum)", unit: unitBytes, dayFloor: 256 << 20, stepFloor: 64 << 20},
	}
	if err := s.setUp(dir); err != nil {
		return err
	}
	defer func() {
		if s.srv != nil {
			s.srv.kill()
		}
	}()
	fmt.Fprintf(w, "server pid %d on %s, models %s and %s; %s at %.1f requests/s (seed %d), a worker killed every %s, a model reloaded every %s, samples every %s\n",
		s.srv.pid, s.url, s.model, s.embedModel, o.Duration, o.Rate, o.Seed, o.KillEvery, o.UnloadEvery, o.SampleEvery)
	baseline, err := s.usageByModel(ctx)
	if err != nil {
		return err
	}
	s.traffic(ctx, w)
	verdict := s.finish(ctx, baseline)
	exit, stopErr := s.srv.stop()
	if stopErr != nil {
		verdict = append(verdict, stopErr.Error())
	} else if exit != 0 {
		verdict = append(verdict, fmt.Sprintf("the server exited with code %d after SIGTERM", exit))
	}
	if left := s.orphans(); len(left) > 0 {
		verdict = append(verdict, fmt.Sprintf("workers outlived the server: %v", left))
	}
	verdict = append(verdict, s.judgeAll()...)
	s.report(w, verdict)
	s.srv = nil
	if len(verdict) > 0 {
		return fmt.Errorf("the soak failed: %s", strings.Join(verdict, "; "))
	}
	return nil
}

// setUp writes the BERT, registers it and starts the server.
func (s *soak) setUp(dir string) error {
	data := filepath.Join(dir, "data")
	s.bertPath = filepath.Join(dir, "soak-bert.gguf")
	if err := gguftest.WriteTinyBERT(s.bertPath, gguftest.TinyBERTOptions{Embd: bertEmbd, Name: "soak-bert"}); err != nil {
		return fmt.Errorf("write the embedding model: %w", err)
	}
	s.embedModel = "soak-bert"
	if err := run(&s.o, "add", "--data-dir", data, "--name", s.embedModel, s.bertPath); err != nil {
		return fmt.Errorf("register the embedding model: %w", err)
	}
	srv, err := startServer(&s.o, data)
	if err != nil {
		return err
	}
	s.srv, s.url, s.model = srv, srv.url, srv.model
	if err := srv.waitReady(context.Background(), s.http); err != nil {
		return fmt.Errorf("%w\n%s", err, srv.log.lastLines())
	}
	return nil
}

// traffic runs the mix, the chaos and the sampler for the duration, printing progress to w
// every twelfth of it.
func (s *soak) traffic(ctx context.Context, w io.Writer) {
	s.start = time.Now()
	ctx, stop := context.WithTimeout(ctx, s.o.Duration)
	defer stop()
	rnd := rand.New(rand.NewPCG(s.o.Seed, 1))
	var wg sync.WaitGroup
	var inflight atomic.Int32
	const maxInflight = 32
	launch := func(k kind, r *req) {
		wg.Add(1)
		inflight.Add(1)
		go func() {
			defer wg.Done()
			defer inflight.Add(-1)
			// Requests finish even when the duration ends under them.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
			defer cancel()
			t0 := time.Now()
			o := k.run(s, rctx, r)
			from := t0
			if !o.from.IsZero() {
				from = o.from
			}
			s.tally.add(k, o, s.chaos.overlaps(from, time.Now()))
		}()
	}
	total, issued := 0, 0
	for _, k := range kinds {
		total += k.weight
	}
	pick := func() kind {
		n := rnd.IntN(total)
		for _, k := range kinds {
			if n -= k.weight; n < 0 {
				return k
			}
		}
		return kinds[0]
	}
	s.sample(ctx)
	tick := time.NewTicker(time.Duration(float64(time.Second) / s.o.Rate))
	defer tick.Stop()
	sampleT := time.NewTicker(s.o.SampleEvery)
	defer sampleT.Stop()
	killT := time.NewTicker(s.o.KillEvery)
	defer killT.Stop()
	batchT := time.NewTicker(2 * time.Second)
	defer batchT.Stop()
	progressT := time.NewTicker(max(s.o.Duration/12, 10*time.Second))
	defer progressT.Stop()
	// Reloads start half a period after the kills, so the two seldom coincide.
	var reloadT <-chan time.Time
	reloadStart := time.After(s.o.UnloadEvery / 2)
	var reloadTicker *time.Ticker
	reloads := 0
	var chaosWG sync.WaitGroup
	reload := func() {
		name := onStory
		if reloads%2 == 1 {
			name = onBERT
		}
		reloads++
		chaosWG.Add(1)
		go func() {
			defer chaosWG.Done()
			s.reload(context.WithoutCancel(ctx), name)
		}()
	}
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			chaosWG.Wait()
			s.background.Wait()
			if reloadTicker != nil {
				reloadTicker.Stop()
			}
			return
		case <-tick.C:
			if inflight.Load() >= maxInflight {
				s.tally.mu.Lock()
				s.tally.skipped++
				s.tally.mu.Unlock()
				continue
			}
			// The first round takes every kind once, in order, so that even a short run
			// covers the whole mix; the draws follow the weights after it.
			k := kinds[issued%len(kinds)]
			if issued >= len(kinds) {
				k = pick()
			}
			issued++
			r := &req{rnd: rand.New(rand.NewPCG(rnd.Uint64(), rnd.Uint64()))}
			r.hangUp = k.hangs && rnd.Float64() < hangUpShare
			launch(k, r)
		case <-batchT.C:
			launch(batchCheck, &req{rnd: rand.New(rand.NewPCG(rnd.Uint64(), 0))})
		case <-sampleT.C:
			if !s.sampling.Swap(true) {
				go func() {
					defer s.sampling.Store(false)
					s.sample(ctx)
				}()
			}
		case <-progressT.C:
			s.progress(w)
		case <-killT.C:
			s.kill(rnd)
		case <-reloadStart:
			reloadTicker = time.NewTicker(s.o.UnloadEvery)
			reloadT = reloadTicker.C
			reload()
		case <-reloadT:
			reload()
		}
	}
}

// sample reads the server's RSS, open files, CPU time and goroutines and its workers' RSS.
func (s *soak) sample(ctx context.Context) {
	at := time.Since(s.start)
	p, err := readProc(s.srv.pid)
	if err != nil {
		s.sampleError("read /proc of the server: %v", err)
		return
	}
	fds, err := openFiles(s.srv.pid)
	if err != nil {
		s.sampleError("count the server's open files: %v", err)
		return
	}
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	g, err := goroutines(gctx, s.http, s.url)
	if err != nil {
		s.sampleError("read the server's goroutines: %v", err)
		return
	}
	var workers float64
	kids := children(s.srv.pid)
	s.mu.Lock()
	defer s.mu.Unlock()
	perModel := map[string]int{}
	for _, k := range kids {
		if model, vocab := workerModel(k); model != "" && !vocab {
			perModel[model]++
			s.mostWorkers[model] = max(s.mostWorkers[model], perModel[model])
		}
		workers += k.rss
		s.workerPeak = max(s.workerPeak, k.rss)
		s.workerPIDs[k.pid] = true
	}
	if len(s.curves[0].t) == 0 {
		s.cpu0 = p.cpu
	}
	s.cpu1 = p.cpu
	for i, v := range []float64{p.rss, float64(fds), g, workers} {
		s.curves[i].add(at, v)
	}
}

// progress prints one line: the traffic so far and the last sample.
func (s *soak) progress(w io.Writer) {
	t := s.tally.totals()
	s.mu.Lock()
	var last []string
	for _, c := range s.curves {
		if n := len(c.v); n > 0 {
			last = append(last, c.name+" "+c.unit.format(c.v[n-1]))
		}
	}
	s.mu.Unlock()
	fmt.Fprintf(w, "%s: %d requests (%d ok, %d hung up, %d chaos, %d unexpected, %d malformed); %s\n", time.Since(s.start).Round(time.Second),
		t.sent, t.ok, t.disconnects, t.chaosErrors, t.unexpected, t.malformed, strings.Join(last, ", "))
}

func (s *soak) sampleError(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sampleErrors) < keptExamples {
		s.sampleErrors = append(s.sampleErrors, fmt.Sprintf(format, args...))
	}
}

// finish waits for the batches, checks every record the server acknowledged, and takes the
// last sample. It returns the reasons the soak failed so far.
func (s *soak) finish(ctx context.Context, baseline map[string]int64) []string {
	var verdict []string
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	// The batches still running: each ends, every line answered.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		s.records.mu.Lock()
		pending := make([]*batchRecord, 0, len(s.records.batches))
		for _, b := range s.records.batches {
			pending = append(pending, b)
		}
		s.records.mu.Unlock()
		if len(pending) == 0 {
			break
		}
		if time.Now().After(deadline) {
			verdict = append(verdict, fmt.Sprintf("%d batches did not end within 3 minutes of the traffic", len(pending)))
			break
		}
		for _, b := range pending {
			t0 := time.Now()
			if o, ended := s.checkBatch(ctx, b); ended || o.malformed != "" || o.failure != "" {
				s.tally.add(batchCheck, o, s.chaos.overlaps(b.created, t0))
			}
		}
		time.Sleep(time.Second)
	}
	// Every live upload is listed and downloads with its bytes; then it is deleted.
	s.tally.add(kind{name: "file list"}, s.fileList(ctx, nil), false)
	s.records.mu.Lock()
	live := make(map[string]fileRecord, len(s.records.files))
	for id, f := range s.records.files {
		live[id] = f
	}
	s.records.mu.Unlock()
	for id, f := range live {
		s.tally.add(kind{name: "file download"}, s.checkFile(ctx, id, f), false)
		s.tally.add(kind{name: "file delete"}, s.deleteFile(ctx, id), false)
	}
	// Every kept stored response reads back the same.
	s.records.mu.Lock()
	stored := append([]storedResponse(nil), s.records.responses...)
	s.records.mu.Unlock()
	for _, r := range stored {
		s.tally.add(kind{name: "responses get"}, s.checkStoredResponse(ctx, r.id, r.body), false)
	}
	verdict = append(verdict, s.checkUsage(ctx, baseline)...)
	verdict = append(verdict, s.checkWorkers(ctx)...)
	s.sample(ctx)
	return verdict
}

// checkWorkers compares, once the traffic is over, the worker processes the server runs with
// what it says is loaded: one worker per loaded model, none for the others. A worker the
// server does not know of is memory no unload or budget accounts for.
func (s *soak) checkWorkers(ctx context.Context) []string {
	for try := 0; ; try++ {
		before, err := modelStates(ctx, s.http, s.url)
		if err != nil {
			return []string{err.Error()}
		}
		running := map[string]int{}
		for _, p := range children(s.srv.pid) {
			model, vocab := workerModel(p)
			switch {
			case model == "" || vocab:
			case model == s.bertPath:
				running[s.embedModel]++
			default:
				running[s.model]++
			}
		}
		after, err := modelStates(ctx, s.http, s.url)
		if err != nil {
			return []string{err.Error()}
		}
		var verdict []string
		settled := true
		for _, m := range []string{s.model, s.embedModel} {
			settled = settled && before[m] == after[m] && (after[m] == "loaded" || after[m] == "unloaded")
			want := 0
			if after[m] == "loaded" {
				want = 1
			}
			if running[m] != want {
				verdict = append(verdict, fmt.Sprintf("%d worker processes run for %s, which GET /v1/models says is %s", running[m], m, after[m]))
			}
		}
		s.mu.Lock()
		s.endWorkers = fmt.Sprintf("%s %s with %d workers, %s %s with %d", s.model, after[s.model], running[s.model], s.embedModel, after[s.embedModel], running[s.embedModel])
		s.mu.Unlock()
		if settled || try == 10 {
			return verdict
		}
		time.Sleep(time.Second) // a load or unload under way: look again
	}
}

// usageCheck is the usage check's numbers for one model.
type usageCheck struct {
	name        string
	recorded    int64
	least, most int
}

// checkUsage waits until GET /v1/usage counts at least every request the server began a
// 200 answer to (and every batch line it answered with a 2xx), per model, and checks it
// counts no more than were sent.
func (s *soak) checkUsage(ctx context.Context, baseline map[string]int64) []string {
	s.tally.mu.Lock()
	s.records.mu.Lock()
	checks := []usageCheck{
		{name: s.model, least: s.tally.answer[onStory] + s.records.linesOK["/v1/chat/completions"],
			most: s.tally.sent[onStory] + s.records.linesCreated["/v1/chat/completions"]},
		{name: s.embedModel, least: s.tally.answer[onBERT] + s.records.linesOK["/v1/embeddings"],
			most: s.tally.sent[onBERT] + s.records.linesCreated["/v1/embeddings"]},
	}
	s.records.mu.Unlock()
	s.tally.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	var verdict []string
	for {
		got, err := s.usageByModel(ctx)
		if err != nil {
			return []string{err.Error()}
		}
		short := false
		for i := range checks {
			checks[i].recorded = got[checks[i].name] - baseline[checks[i].name]
			short = short || checks[i].recorded < int64(checks[i].least)
		}
		if !short || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	s.mu.Lock()
	s.usage = checks
	s.mu.Unlock()
	for _, c := range checks {
		switch {
		case c.recorded < int64(c.least):
			verdict = append(verdict, fmt.Sprintf("GET /v1/usage counts %d requests on %s, but the server answered at least %d: records were lost", c.recorded, c.name, c.least))
		case c.recorded > int64(c.most):
			verdict = append(verdict, fmt.Sprintf("GET /v1/usage counts %d requests on %s, more than the %d sent", c.recorded, c.name, c.most))
		}
	}
	return verdict
}

// orphans are the workers seen during the run that are still running after the server exited.
func (s *soak) orphans() []int {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var left []int
		s.mu.Lock()
		for pid := range s.workerPIDs {
			if p, err := readProc(pid); err == nil && !p.zombie {
				if model, _ := workerModel(p); model != "" {
					left = append(left, pid)
				}
			}
		}
		s.mu.Unlock()
		if len(left) == 0 || time.Now().After(deadline) {
			sort.Ints(left)
			return left
		}
		time.Sleep(200 * time.Millisecond)
	}
}
