package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"syscall"
	"time"
)

// Which model a kind of request runs on, for the usage check ("" for none: not a generation
// or an embedding, so not recorded).
const (
	onStory = "story"
	onBERT  = "bert"
)

// kind is one kind of request in the mix.
type kind struct {
	name   string
	weight int
	model  string // onStory, onBERT or ""
	// hangs reports whether 10% of these clients disconnect after the first content event.
	hangs bool
	run   func(s *soak, ctx context.Context, r *req) outcome
}

var kinds = []kind{
	{"openai chat", 8, onStory, false, func(s *soak, ctx context.Context, r *req) outcome { return s.chat(ctx, r, false) }},
	{"openai chat stream", 8, onStory, true, func(s *soak, ctx context.Context, r *req) outcome { return s.chatStream(ctx, r, false) }},
	{"openai chat tools", 4, onStory, false, func(s *soak, ctx context.Context, r *req) outcome { return s.chat(ctx, r, true) }},
	{"openai chat tools stream", 3, onStory, false, func(s *soak, ctx context.Context, r *req) outcome { return s.chatStream(ctx, r, true) }},
	{"responses", 5, onStory, false, func(s *soak, ctx context.Context, r *req) outcome { return s.response(ctx, r, false) }},
	{"responses stream", 5, onStory, true, func(s *soak, ctx context.Context, r *req) outcome { return s.responseStream(ctx, r, false) }},
	{"responses tools", 3, onStory, false, func(s *soak, ctx context.Context, r *req) outcome { return s.response(ctx, r, true) }},
	{"responses get", 3, "", false, (*soak).responseGet},
	{"anthropic messages", 6, onStory, false, func(s *soak, ctx context.Context, r *req) outcome { return s.messages(ctx, r, false) }},
	{"anthropic messages stream", 6, onStory, true, func(s *soak, ctx context.Context, r *req) outcome { return s.messagesStream(ctx, r, false) }},
	{"anthropic tools", 3, onStory, false, func(s *soak, ctx context.Context, r *req) outcome { return s.messages(ctx, r, true) }},
	{"anthropic tools stream", 2, onStory, false, func(s *soak, ctx context.Context, r *req) outcome { return s.messagesStream(ctx, r, true) }},
	{"ollama chat", 5, onStory, false, func(s *soak, ctx context.Context, r *req) outcome { return s.ollama(ctx, r, true, false, false) }},
	{"ollama chat stream", 5, onStory, true, func(s *soak, ctx context.Context, r *req) outcome { return s.ollama(ctx, r, true, true, false) }},
	{"ollama generate", 4, onStory, false, func(s *soak, ctx context.Context, r *req) outcome { return s.ollama(ctx, r, false, false, false) }},
	{"ollama generate stream", 4, onStory, true, func(s *soak, ctx context.Context, r *req) outcome { return s.ollama(ctx, r, false, true, false) }},
	{"ollama chat tools", 3, onStory, false, func(s *soak, ctx context.Context, r *req) outcome {
		return s.ollama(ctx, r, true, r.rnd.IntN(2) == 0, true)
	}},
	{"openai embeddings", 5, onBERT, false, (*soak).embeddings},
	{"ollama embed", 3, onBERT, false, (*soak).ollamaEmbed},
	{"file upload", 3, "", false, (*soak).fileUpload},
	{"file list", 2, "", false, (*soak).fileList},
	{"file download", 2, "", false, (*soak).fileDownload},
	{"file delete", 2, "", false, (*soak).fileDelete},
	{"batch create", 1, "", false, (*soak).batchCreate},
}

// killedStream is the kind of the long stream the killer starts before it kills the story
// model's worker: it must end with an error frame and [DONE] (or whole, when it was faster).
var killedStream = kind{name: "stream cut by a kill", model: onStory}

// reloadBurst is the kind of the long streams each reload of the story model starts first,
// twice as many as the lanes, so that the unload meets requests generating and requests
// waiting for a lane.
var reloadBurst = kind{name: "burst before an unload", model: onStory}

// batchCheck is the kind of the batch watcher's reads (not in the mix: it runs on a timer).
var batchCheck = kind{name: "batch check", run: (*soak).batchPoll}

// hangUpShare is the share of streaming clients that disconnect mid-stream.
const hangUpShare = 0.1

// counts are one kind's tally.
type counts struct {
	sent, ok, disconnects, chaosErrors, unexpected, malformed int
	examples                                                  []string // of unexpected errors and malformed replies
}

// tally counts the outcomes by kind, and the usage the server should have recorded by model.
type tally struct {
	mu      sync.Mutex
	byKind  map[string]*counts
	sent    map[string]int // recorded kinds sent, by onStory/onBERT
	answer  map[string]int // of those, the ones the server began a 200 answer to
	skipped int            // ticks with too many requests in flight
}

func newTally() *tally {
	return &tally{byKind: map[string]*counts{}, sent: map[string]int{}, answer: map[string]int{}}
}

const keptExamples = 5

// add counts o, an outcome of kind k between t0 and t1; inChaos says whether a worker kill or
// an unload overlapped it.
func (t *tally) add(k kind, o outcome, inChaos bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.byKind[k.name]
	if c == nil {
		c = &counts{}
		t.byKind[k.name] = c
	}
	c.sent++
	if k.model != "" {
		t.sent[k.model]++
		if o.answered {
			t.answer[k.model]++
		}
	}
	example := func(s string) {
		if len(c.examples) < keptExamples {
			c.examples = append(c.examples, s)
		}
	}
	switch {
	case o.malformed != "":
		c.malformed++
		example("malformed: " + o.malformed)
	case o.disconnected:
		c.disconnects++
	case o.failure != "" && inChaos && !o.transport && (o.status >= 500 || o.status == http.StatusOK):
		// A 5xx, or an error frame in a stream that began (status 200), while a worker was
		// killed or a model reloaded: the spec's "engine or worker failure".
		c.chaosErrors++
	case o.failure != "":
		c.unexpected++
		chaos := ""
		if inChaos {
			chaos = " (during a kill or unload)"
		}
		example(o.failure + chaos)
	default:
		c.ok++
	}
}

func (t *tally) totals() (c counts) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range t.byKind {
		c.sent += k.sent
		c.ok += k.ok
		c.disconnects += k.disconnects
		c.chaosErrors += k.chaosErrors
		c.unexpected += k.unexpected
		c.malformed += k.malformed
	}
	return c
}

// print writes the traffic table.
func (t *tally) print(w io.Writer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	names := make([]string, 0, len(t.byKind))
	for n := range t.byKind {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(w, "  %-26s %7s %7s %8s %8s %10s %9s\n", "kind", "sent", "ok", "hung up", "chaos", "unexpected", "malformed")
	var all counts
	for _, n := range names {
		c := t.byKind[n]
		fmt.Fprintf(w, "  %-26s %7d %7d %8d %8d %10d %9d\n", n, c.sent, c.ok, c.disconnects, c.chaosErrors, c.unexpected, c.malformed)
		all.sent, all.ok, all.disconnects, all.chaosErrors, all.unexpected, all.malformed =
			all.sent+c.sent, all.ok+c.ok, all.disconnects+c.disconnects, all.chaosErrors+c.chaosErrors, all.unexpected+c.unexpected, all.malformed+c.malformed
	}
	fmt.Fprintf(w, "  %-26s %7d %7d %8d %8d %10d %9d\n", "total", all.sent, all.ok, all.disconnects, all.chaosErrors, all.unexpected, all.malformed)
	if t.skipped > 0 {
		fmt.Fprintf(w, "  %d ticks skipped: too many requests in flight\n", t.skipped)
	}
	for _, n := range names {
		for _, e := range t.byKind[n].examples {
			fmt.Fprintf(w, "  %s: %s\n", n, e)
		}
	}
}

// chaosWindow is a time when requests may fail for a reason the soak caused: a worker killed
// (until the grace after it) or a model being unloaded and loaded again.
type chaosWindow struct {
	from, to time.Time
}

// chaosGrace is how long after a kill or a reload requests may still fail because of it
// (the server notices a dead worker when it next talks to it).
const chaosGrace = 5 * time.Second

type chaos struct {
	mu      sync.Mutex
	windows []chaosWindow
	open    map[int]time.Time // windows still open, by token

	kills               map[string]int // by model
	reloads             map[string]int
	noTarget, failedOps int
	opErrors            []string
}

func newChaos() *chaos {
	return &chaos{open: map[int]time.Time{}, kills: map[string]int{}, reloads: map[string]int{}}
}

func (c *chaos) begin() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	token := len(c.windows) + len(c.open) + 1
	for c.open[token] != (time.Time{}) {
		token++
	}
	c.open[token] = time.Now()
	return token
}

func (c *chaos) end(token int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.windows = append(c.windows, chaosWindow{c.open[token], time.Now().Add(chaosGrace)})
	delete(c.open, token)
}

// overlaps reports whether [t0, t1] meets a chaos window, open or closed.
func (c *chaos) overlaps(t0, t1 time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.open) > 0 {
		return true
	}
	for i := len(c.windows) - 1; i >= 0; i-- {
		w := c.windows[i]
		if !w.to.Before(t0) && !w.from.After(t1) {
			return true
		}
	}
	return false
}

func (c *chaos) opFailed(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failedOps++
	if len(c.opErrors) < keptExamples {
		c.opErrors = append(c.opErrors, fmt.Sprintf(format, args...))
	}
}

// kill sends SIGKILL to a worker of the server: the story model's two times in three, the
// BERT's otherwise (when it has one running).
func (s *soak) kill(rnd *rand.Rand) {
	name := onStory
	if rnd.IntN(3) == 0 || len(s.workersOf(onStory)) == 0 {
		name = onBERT
	}
	token := s.chaos.begin()
	defer s.chaos.end(token)
	if name == onStory {
		// A long stream first, killed once it streams: the kill then cuts a reply for sure.
		first := make(chan struct{})
		r := &req{rnd: rand.New(rand.NewPCG(rnd.Uint64(), 0)), long: true, firstContent: func() { close(first) }}
		s.background.Add(1)
		go func() {
			defer s.background.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			s.tally.add(killedStream, s.chatStream(ctx, r, false), true)
		}()
		select {
		case <-first:
		case <-time.After(time.Minute):
		}
	}
	// The victim is looked up last: a reload may have replaced the worker meanwhile.
	victims := s.workersOf(name)
	var err error = syscall.ESRCH
	if len(victims) > 0 {
		err = syscall.Kill(victims[0], syscall.SIGKILL)
	}
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		s.chaos.opFailed("kill worker %d: %v", victims[0], err)
		return
	}
	s.chaos.mu.Lock()
	defer s.chaos.mu.Unlock()
	if err != nil {
		s.chaos.noTarget++ // none running, or it exited between the look and the kill
		return
	}
	s.chaos.kills[name]++
}

// workersOf are the pids of the server's generation workers of a model (onStory or onBERT).
func (s *soak) workersOf(name string) []int {
	var pids []int
	for _, p := range children(s.srv.pid) {
		model, vocab := workerModel(p)
		if model == "" || vocab {
			continue
		}
		if (model == s.bertPath) == (name == onBERT) {
			pids = append(pids, p.pid)
		}
	}
	return pids
}

// reload unloads a model (POST /v1/models/unload) and loads it again (POST /v1/models/load);
// requests that arrive between the two load it on demand.
func (s *soak) reload(ctx context.Context, name string) {
	model := s.model
	if name == onBERT {
		model = s.embedModel
	}
	token := s.chaos.begin()
	defer s.chaos.end(token)
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if name == onStory {
		first := make(chan struct{})
		var once sync.Once
		for i := range 2 * s.o.Parallel {
			r := &req{rnd: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i))), long: true,
				firstContent: func() { once.Do(func() { close(first) }) }}
			s.background.Add(1)
			go func() {
				defer s.background.Done()
				// Its own context: the stream outlives the reload.
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				defer cancel()
				s.tally.add(reloadBurst, s.chatStream(ctx, r, false), true)
			}()
		}
		select {
		case <-first:
		case <-ctx.Done():
		}
	}
	for _, step := range []struct{ path, state string }{{"/v1/models/unload", "unloaded"}, {"/v1/models/load", "loaded"}} {
		c, err := do(ctx, s.http, http.MethodPost, s.url+step.path, map[string]any{"model": model}, false)
		if err != nil {
			s.chaos.opFailed("%s %s: %v", step.path, model, err)
			return
		}
		var st struct {
			State *string `json:"state"`
		}
		if c.res.StatusCode != http.StatusOK || strictJSON(c.body, &st) != nil || st.State == nil {
			s.chaos.opFailed("%s %s: status %d: %s", step.path, model, c.res.StatusCode, clip(c.body))
			return
		}
		// A request between unload and load may already have loaded the model again.
		if *st.State != step.state && !(step.state == "unloaded" && (*st.State == "loaded" || *st.State == "loading")) {
			s.chaos.opFailed("%s %s: state %q afterwards", step.path, model, *st.State)
			return
		}
		if step.state == "unloaded" {
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
				return
			}
		}
	}
	s.chaos.mu.Lock()
	s.chaos.reloads[name]++
	s.chaos.mu.Unlock()
}
