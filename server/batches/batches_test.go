package batches

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/store"
)

// batchFixture is a service over the fake engine whose chat lines run through the core's
// Chat, with a real store and files folder.
type batchFixture struct {
	svc  *Service
	core *core.Service
	st   *store.Store
	fake *enginetest.Engine
	dir  string
	obs  *lineObserver
	// order records the custom ids of the lines as they start.
	mu    sync.Mutex
	order []string
}

// lineObserver counts the batch lines the core reports.
type lineObserver struct {
	core.NopObserver
	mu       sync.Mutex
	ok, fail int
}

func (o *lineObserver) BatchLine(ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ok {
		o.ok++
	} else {
		o.fail++
	}
}

// testLine is the fake dialect's line body: a model and one user message; max_tokens optional.
type testLine struct {
	Model     string `json:"model"`
	Content   string `json:"content"`
	MaxTokens int    `json:"max_tokens"`
	Status    int    `json:"status"` // answer with this status instead of running
}

func newBatchFixture(t *testing.T, cfg Config, dir string, st *store.Store) *batchFixture {
	t.Helper()
	return newBatchFixtureOver(t, core.Config{}, cfg, dir, st)
}

// newBatchFixtureOver is newBatchFixture over a core with coreCfg (its Observer is the
// fixture's).
func newBatchFixtureOver(t *testing.T, coreCfg core.Config, cfg Config, dir string, st *store.Store) *batchFixture {
	t.Helper()
	if st == nil {
		var err error
		if st, err = store.Open(filepath.Join(t.TempDir(), "db.sqlite")); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
	}
	if dir == "" {
		dir = filepath.Join(t.TempDir(), "files")
	}
	cfg.Files.Dir = dir
	f := &batchFixture{st: st, dir: dir, fake: enginetest.New(4096, "Hello world!"), obs: &lineObserver{}}
	coreCfg.Observer = f.obs
	f.core = core.New(coreCfg, st, fakeModel(t, f.fake))
	f.svc = New(cfg, f.core, st)
	f.svc.ServeBatchLines("/v1/chat/completions", func(ctx context.Context, body json.RawMessage) (LineResponse, error) {
		var l testLine
		if err := json.Unmarshal(body, &l); err != nil {
			return LineResponse{}, err
		}
		f.mu.Lock()
		f.order = append(f.order, l.Content)
		f.mu.Unlock()
		if l.Status != 0 {
			return LineResponse{Status: l.Status, Body: json.RawMessage(`{"error":{"message":"refused"}}`)}, nil
		}
		req := &core.ChatRequest{ID: "chatcmpl-" + l.Content, Endpoint: "/v1/chat/completions", Model: l.Model,
			Messages: []chat.Message{{Role: "user", Content: l.Content}}, Generation: llm.Request{MaxTokens: l.MaxTokens}}
		var text strings.Builder
		res, err := f.core.Chat(ctx, req, func(_ int, ev llm.Event) error {
			text.WriteString(ev.Text)
			return nil
		})
		if err != nil {
			return LineResponse{}, err
		}
		b, _ := json.Marshal(map[string]string{"text": text.String()})
		return LineResponse{Status: http.StatusOK, Body: b, Usage: res.Usage()}, nil
	})
	t.Cleanup(func() { f.svc.StopBackground(context.Background()) })
	return f
}

// fakeModel serves the fake engine e as the model "fake".
func fakeModel(t *testing.T, e llm.Engine) *core.Model {
	t.Helper()
	tmpl, err := chat.Parse("")
	if err != nil {
		t.Fatal(err)
	}
	return &core.Model{ID: "fake", Path: "/models/fake.gguf", Engine: e, Template: tmpl, ContextLength: 256}
}

func (f *batchFixture) start(t *testing.T) {
	t.Helper()
	if err := f.svc.StartBackground(); err != nil {
		t.Fatal(err)
	}
}

// input uploads a JSONL file of the given lines for purpose batch.
func (f *batchFixture) input(t *testing.T, lines ...string) string {
	t.Helper()
	file, err := f.svc.CreateFile(context.Background(), NewFile{Filename: "in.jsonl", Purpose: "batch",
		Content: strings.NewReader(strings.Join(lines, "\n") + "\n")})
	if err != nil {
		t.Fatal(err)
	}
	return file.ID
}

// chatLine is one input line for the fixture's chat endpoint.
func chatLine(id string, extra string) string {
	body := `{"model":"fake","content":"` + id + `"` + extra + `}`
	return `{"custom_id":"` + id + `","method":"POST","url":"/v1/chat/completions","body":` + body + `}`
}

// wait polls the batch until cond holds.
func (f *batchFixture) wait(t *testing.T, id, what string, cond func(Batch) bool) Batch {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := f.svc.Batch(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if cond(b) {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; batch %+v", what, b)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func ended(b Batch) bool {
	return b.Status == BatchCompleted || b.Status == BatchFailed || b.Status == BatchCancelled
}

// outputLines reads a batch's output or error file as JSON lines.
func (f *batchFixture) outputLines(t *testing.T, id string) []batchOutput {
	t.Helper()
	if id == "" {
		return nil
	}
	_, r, err := f.svc.OpenFile(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []batchOutput
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var o batchOutput
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			t.Fatalf("output line %q: %v", sc.Text(), err)
		}
		out = append(out, o)
	}
	return out
}

func customIDs(lines []batchOutput) []string {
	var ids []string
	for _, l := range lines {
		ids = append(ids, l.CustomID)
	}
	return ids
}

// TestBatchRunsToCompletion: every line runs through Chat once, its reply goes to the output
// file (a refused line to the error file), and the counts, usage and files add up. Lines that
// name no cap get 2048 tokens, not the operator's --max-tokens.
func TestBatchRunsToCompletion(t *testing.T) {
	ctx := context.Background()
	f := newBatchFixtureOver(t, core.Config{MaxTokens: 7}, Config{}, "", nil)
	f.start(t)
	in := f.input(t, chatLine("a", ""), "", chatLine("b", `,"max_tokens":5`), chatLine("c", `,"status":400`), chatLine("d", ""))
	b, err := f.svc.CreateBatch(ctx, NewBatch{InputFileID: in, Endpoint: "/v1/chat/completions", CompletionWindow: "24h",
		Metadata: json.RawMessage(`{"k":"v"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if !batchID.MatchString(b.ID) || b.Status != BatchValidating && b.Status != BatchInProgress || string(b.Metadata) != `{"k":"v"}` {
		t.Fatalf("created %+v", b)
	}
	b = f.wait(t, b.ID, "the batch to end", ended)
	if b.Status != BatchCompleted || b.Total != 4 || b.Completed != 3 || b.Failed != 1 || b.Model != "fake" ||
		b.InProgressAt.IsZero() || b.FinalizingAt.IsZero() || b.CompletedAt.IsZero() {
		t.Fatalf("batch %+v", b)
	}
	out := f.outputLines(t, b.OutputFileID)
	if got := customIDs(out); !slices.Equal(got, []string{"a", "b", "d"}) {
		t.Fatalf("output custom ids %v", got)
	}
	for _, o := range out {
		if o.Response == nil || o.Response.StatusCode != 200 || o.Error != nil || !strings.HasPrefix(o.ID, "batch_req_") || !strings.HasPrefix(o.Response.RequestID, "req_") {
			t.Fatalf("output line %+v", o)
		}
	}
	var reply struct{ Text string }
	json.Unmarshal(out[1].Response.Body, &reply)
	if reply.Text != "Hello" {
		t.Fatalf("line b (max_tokens 5) replied %q", reply.Text)
	}
	errs := f.outputLines(t, b.ErrorFileID)
	if len(errs) != 1 || errs[0].CustomID != "c" || errs[0].Response == nil || errs[0].Response.StatusCode != 400 {
		t.Fatalf("error lines %+v", errs)
	}
	var caps []int
	var prompt, completion int64
	for _, r := range f.fake.Requests() {
		caps = append(caps, r.MaxTokens)
		if r.Sampling.Temperature != nil {
			t.Errorf("a batch line ran with a temperature set: %v", *r.Sampling.Temperature)
		}
		if r.Priority != llm.PriorityBackground {
			t.Errorf("a batch line ran at priority %d, want background", r.Priority)
		}
	}
	slices.Sort(caps)
	if !slices.Equal(caps, []int{5, 2048, 2048}) {
		t.Fatalf("the lines ran with caps %v, want 5, 2048, 2048 (not --max-tokens 7)", caps)
	}
	// Recorded like any request.
	if err := f.st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if rec, err := f.st.Request(ctx, "chatcmpl-a"); err != nil || rec.Endpoint != "/v1/chat/completions" || rec.Status != 200 {
		t.Fatalf("line a's request record: %+v, %v", rec, err)
	}
	prompt, completion = b.InputTokens, b.OutputTokens
	if prompt == 0 || completion != int64(len("Hello world!")*2+5) {
		t.Fatalf("usage: input %d, output %d", prompt, completion)
	}
	if f.obs.ok != 3 || f.obs.fail != 1 {
		t.Fatalf("observer saw %d ok, %d failed lines; want 3, 1", f.obs.ok, f.obs.fail)
	}
	// The line results are gone from the database once the files hold them.
	if done, _ := f.st.BatchLinesDone(ctx, b.ID); len(done) != 0 {
		t.Fatalf("line results kept: %v", done)
	}
	if f, err := f.svc.File(ctx, b.OutputFileID); err != nil || f.Purpose != "batch_output" {
		t.Fatalf("output file %+v, %v", f, err)
	}
}

// TestCreateBatchRefusals: what CreateBatch refuses before queueing anything.
func TestCreateBatchRefusals(t *testing.T) {
	ctx := context.Background()
	f := newBatchFixture(t, Config{}, "", nil)
	good := f.input(t, chatLine("a", ""))
	notes, err := f.svc.CreateFile(ctx, NewFile{Filename: "n", Purpose: "user_data", Content: strings.NewReader("x")})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		nb   NewBatch
		want error
	}{
		{"unknown file", NewBatch{InputFileID: "file-" + strings.Repeat("a", 24), Endpoint: "/v1/chat/completions"}, ErrFileNotFound},
		{"hostile file id", NewBatch{InputFileID: "../db.sqlite", Endpoint: "/v1/chat/completions"}, ErrFileNotFound},
		{"not a batch file", NewBatch{InputFileID: notes.ID, Endpoint: "/v1/chat/completions"}, llm.ErrInvalidInput},
		{"endpoint", NewBatch{InputFileID: good, Endpoint: "/v1/moderations"}, llm.ErrInvalidInput},
	}
	for _, tt := range tests {
		if _, err := f.svc.CreateBatch(ctx, tt.nb); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
	if bs, _, _ := f.svc.Batches(ctx, "", 10); len(bs) != 0 {
		t.Fatalf("refused batches were stored: %+v", bs)
	}
	for _, id := range []string{"batch_nope", "../x", "batch_" + strings.Repeat("0", 24)} {
		if _, err := f.svc.Batch(ctx, id); !errors.Is(err, ErrBatchNotFound) {
			t.Errorf("Batch(%q) = %v", id, err)
		}
		if _, err := f.svc.CancelBatch(ctx, id); !errors.Is(err, ErrBatchNotFound) {
			t.Errorf("CancelBatch(%q) = %v", id, err)
		}
	}
}

// TestBatchQueue: Running batches run at once and the rest wait in the order they came; past
// Waiting waiting batches a new one is refused.
func TestBatchQueue(t *testing.T) {
	ctx := context.Background()
	f := newBatchFixture(t, Config{Batches: BatchConfig{Running: 1, Waiting: 3, LinesAtOnce: 1}}, "", nil)
	var ids []string
	for i := range 3 {
		in := f.input(t, chatLine(fmt.Sprintf("%d-a", i), ""), chatLine(fmt.Sprintf("%d-b", i), ""))
		b, err := f.svc.CreateBatch(ctx, NewBatch{InputFileID: in, Endpoint: "/v1/chat/completions"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, b.ID)
	}
	in := f.input(t, chatLine("x", ""))
	if _, err := f.svc.CreateBatch(ctx, NewBatch{InputFileID: in, Endpoint: "/v1/chat/completions"}); !errors.Is(err, ErrBatchQueueFull) {
		t.Fatalf("a fourth waiting batch: %v, want ErrBatchQueueFull", err)
	}
	f.start(t)
	for _, id := range ids {
		if b := f.wait(t, id, "the batch to end", ended); b.Status != BatchCompleted {
			t.Fatalf("batch %+v", b)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if want := []string{"0-a", "0-b", "1-a", "1-b", "2-a", "2-b"}; !slices.Equal(f.order, want) {
		t.Fatalf("lines ran in the order %v, want %v", f.order, want)
	}
	list, more, err := f.svc.Batches(ctx, "", 2)
	if err != nil || len(list) != 2 || !more || list[0].ID != ids[2] {
		t.Fatalf("Batches page: %+v, %v, %v", list, more, err)
	}
}

// TestCancelDuringLongLine: a cancel while a line runs lets that line finish and starts no
// more; the batch ends cancelled with the finished line in its output.
func TestCancelDuringLongLine(t *testing.T) {
	ctx := context.Background()
	f := newBatchFixture(t, Config{Batches: BatchConfig{LinesAtOnce: 1}}, "", nil)
	f.fake.TokenDelay = 20 * time.Millisecond
	f.start(t)
	in := f.input(t, chatLine("a", ""), chatLine("b", ""), chatLine("c", ""))
	b, err := f.svc.CreateBatch(ctx, NewBatch{InputFileID: in, Endpoint: "/v1/chat/completions"})
	if err != nil {
		t.Fatal(err)
	}
	f.wait(t, b.ID, "the first line to start", func(Batch) bool { return len(f.fake.Requests()) == 1 })
	c, err := f.svc.CancelBatch(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != BatchCancelling || c.CancellingAt.IsZero() {
		t.Fatalf("after cancel: %+v", c)
	}
	if again, err := f.svc.CancelBatch(ctx, b.ID); err != nil && !errors.Is(err, ErrBatchFinished) || err == nil && again.Status != BatchCancelling && again.Status != BatchCancelled {
		t.Fatalf("a second cancel: %+v, %v", again, err)
	}
	b = f.wait(t, b.ID, "the batch to end", ended)
	if b.Status != BatchCancelled || b.CancelledAt.IsZero() || b.Total != 3 || b.Completed != 1 || b.Failed != 0 {
		t.Fatalf("batch %+v", b)
	}
	if got := customIDs(f.outputLines(t, b.OutputFileID)); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("output %v, want the line that was running", got)
	}
	if n := len(f.fake.Requests()); n != 1 {
		t.Fatalf("%d lines ran after the cancel", n)
	}
	if _, err := f.svc.CancelBatch(ctx, b.ID); !errors.Is(err, ErrBatchFinished) {
		t.Fatalf("cancelling a cancelled batch: %v", err)
	}
}

// TestCancelWaitingBatch: a batch that has not started is cancelled at once.
func TestCancelWaitingBatch(t *testing.T) {
	ctx := context.Background()
	f := newBatchFixture(t, Config{}, "", nil)
	in := f.input(t, chatLine("a", ""))
	b, err := f.svc.CreateBatch(ctx, NewBatch{InputFileID: in, Endpoint: "/v1/chat/completions"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.svc.CancelBatch(ctx, b.ID)
	if err != nil || c.Status != BatchCancelled || c.CancelledAt.IsZero() {
		t.Fatalf("cancel: %+v, %v", c, err)
	}
	f.start(t)
	if len(f.fake.Requests()) != 0 {
		t.Fatal("a cancelled batch ran")
	}
}

// TestBatchResumesAfterStop: a batch stopped halfway (the server shut down) resumes when a new
// service starts on the same store and folder; every line ends up in the output exactly once
// and the counts are right.
func TestBatchResumesAfterStop(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "db.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dir := filepath.Join(t.TempDir(), "files")
	cfg := Config{Batches: BatchConfig{LinesAtOnce: 2}}
	first := newBatchFixture(t, cfg, dir, st)
	first.fake.TokenDelay = 2 * time.Millisecond
	first.start(t)
	var lines []string
	for i := range 10 {
		lines = append(lines, chatLine(fmt.Sprintf("line-%02d", i), ""))
	}
	b, err := first.svc.CreateBatch(ctx, NewBatch{InputFileID: first.input(t, lines...), Endpoint: "/v1/chat/completions"})
	if err != nil {
		t.Fatal(err)
	}
	first.wait(t, b.ID, "some lines to finish", func(b Batch) bool { return b.Completed >= 3 })
	if err := first.svc.StopBackground(ctx); err != nil {
		t.Fatal(err)
	}
	halfway, _ := first.svc.Batch(ctx, b.ID)
	if halfway.Status != BatchInProgress || halfway.Completed == 10 {
		t.Fatalf("after the stop: %+v", halfway)
	}

	second := newBatchFixture(t, cfg, dir, st)
	second.start(t)
	b = second.wait(t, b.ID, "the batch to end", ended)
	if b.Status != BatchCompleted || b.Total != 10 || b.Completed != 10 || b.Failed != 0 {
		t.Fatalf("batch %+v", b)
	}
	got := customIDs(second.outputLines(t, b.OutputFileID))
	if len(got) != 10 {
		t.Fatalf("output %v", got)
	}
	for i, id := range got {
		if want := fmt.Sprintf("line-%02d", i); id != want {
			t.Fatalf("output line %d is %s, want %s (output %v)", i, id, want, got)
		}
	}
	// The second service ran only the lines the first had not finished.
	if n := len(second.fake.Requests()); n != 10-halfway.Completed {
		t.Fatalf("the resume ran %d lines, want %d", n, 10-halfway.Completed)
	}
}

// TestLinesOfAnUnservedURL: lines for a url no dialect registered (ServeBatchLines; here the
// fixture serves only chat completions, so /v1/embeddings) fail one by one with
// unsupported_endpoint naming the url, and the batch completes. Embedding lines as the OpenAI
// dialect serves them: server/openai TestBatchEmbeddings.
func TestLinesOfAnUnservedURL(t *testing.T) {
	ctx := context.Background()
	f := newBatchFixture(t, Config{}, "", nil)
	f.start(t)
	line := `{"custom_id":"e%d","method":"POST","url":"/v1/embeddings","body":{"model":"fake","input":"hi"}}`
	in := f.input(t, fmt.Sprintf(line, 1), fmt.Sprintf(line, 2))
	b, err := f.svc.CreateBatch(ctx, NewBatch{InputFileID: in, Endpoint: "/v1/embeddings"})
	if err != nil {
		t.Fatal(err)
	}
	b = f.wait(t, b.ID, "the batch to end", ended)
	if b.Status != BatchCompleted || b.Failed != 2 || b.Completed != 0 || b.OutputFileID != "" {
		t.Fatalf("batch %+v", b)
	}
	errs := f.outputLines(t, b.ErrorFileID)
	if len(errs) != 2 {
		t.Fatalf("error lines %+v", errs)
	}
	for _, e := range errs {
		if e.Response != nil || e.Error == nil || e.Error.Code != "unsupported_endpoint" || e.Error.Message != "/v1/embeddings is not served" {
			t.Fatalf("error line %+v (error %+v)", e, e.Error)
		}
	}
}
