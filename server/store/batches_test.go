package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"
)

func sampleBatch(id string, created time.Time) Batch {
	return Batch{ID: id, Endpoint: "/v1/chat/completions", InputFileID: "file-in", CompletionWindow: "24h",
		Status: BatchValidating, CreatedAt: created, ExpiresAt: created.Add(24 * time.Hour)}
}

func TestBatchRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	created := time.Date(2026, 2, 3, 4, 5, 6, 700, time.UTC)
	full := sampleBatch("batch_full", created)
	full.Metadata = json.RawMessage(`{"team":"a"}`)
	full.Errors = []BatchError{{Code: "invalid_json_line", Message: "bad", Line: 3}, {Code: "empty_file", Message: "empty"}}
	full.OutputExpires = time.Hour
	full.Total, full.Completed, full.Failed = 5, 3, 1
	full.InputTokens, full.CachedTokens, full.OutputTokens = 10, 4, 20
	full.InProgressAt, full.FinalizingAt, full.CompletedAt = created.Add(1), created.Add(2), created.Add(3)
	full.FailedAt, full.CancellingAt, full.CancelledAt = created.Add(4), created.Add(5), created.Add(6)
	tests := []struct {
		name string
		in   Batch
	}{
		{"minimal", sampleBatch("batch_min", created)},
		{"every field", full},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.CreateBatch(ctx, tt.in, 0); err != nil {
				t.Fatalf("CreateBatch: %v", err)
			}
			got, err := s.Batch(ctx, tt.in.ID)
			if err != nil {
				t.Fatalf("Batch: %v", err)
			}
			if !reflect.DeepEqual(got, tt.in) {
				t.Errorf("round trip:\n got %+v\nwant %+v", got, tt.in)
			}
		})
	}
	if _, err := s.Batch(ctx, "batch_missing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Batch of a missing id: %v, want ErrNotFound", err)
	}
}

func TestBatchQueueAndList(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 3 {
		if err := s.CreateBatch(ctx, sampleBatch(fmt.Sprintf("batch_%d", i), base.Add(time.Duration(i)*time.Second)), 3); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	if err := s.CreateBatch(ctx, sampleBatch("batch_3", base.Add(3*time.Second)), 3); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("a fourth waiting batch: %v, want ErrQueueFull", err)
	}
	// One leaves the queue: there is room again.
	if err := s.StartBatch(ctx, "batch_0", 2, "m", base.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateBatch(ctx, sampleBatch("batch_3", base.Add(3*time.Second)), 3); err != nil {
		t.Fatalf("after one started: %v", err)
	}
	ids := func(bs []Batch) []string {
		out := []string{}
		for _, b := range bs {
			out = append(out, b.ID)
		}
		return out
	}
	for _, tt := range []struct {
		after string
		limit int
		want  []string
	}{
		{"", 10, []string{"batch_3", "batch_2", "batch_1", "batch_0"}},
		{"", 2, []string{"batch_3", "batch_2"}},
		{"batch_2", 10, []string{"batch_1", "batch_0"}},
		{"batch_nope", 1, []string{"batch_3"}},
	} {
		got, err := s.Batches(ctx, tt.after, tt.limit)
		if err != nil || !reflect.DeepEqual(ids(got), tt.want) {
			t.Errorf("Batches(%q, %d) = %v, %v; want %v", tt.after, tt.limit, ids(got), err, tt.want)
		}
	}
	if _, _, err := s.CancelBatch(ctx, "batch_1", true, base.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	got, err := s.UnfinishedBatches(ctx)
	if want := []string{"batch_0", "batch_2", "batch_3"}; err != nil || !reflect.DeepEqual(ids(got), want) {
		t.Errorf("UnfinishedBatches = %v, %v; want %v", ids(got), err, want)
	}
}

func TestBatchLifecycle(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := s.CreateBatch(ctx, sampleBatch("batch_a", at), 0); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveBatchLine(ctx, "batch_a", 0, false, []byte(`{}`), LineUsage{}); !errors.Is(err, ErrBatchNotRunning) {
		t.Fatalf("a line of a validating batch: %v, want ErrBatchNotRunning", err)
	}
	if err := s.StartBatch(ctx, "batch_a", 3, "fake", at.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.StartBatch(ctx, "batch_a", 3, "fake", at.Add(time.Second)); !errors.Is(err, ErrBatchNotRunning) {
		t.Fatalf("starting twice: %v, want ErrBatchNotRunning", err)
	}
	lines := []struct {
		line   int
		failed bool
		result string
		usage  LineUsage
	}{
		{2, false, `{"custom_id":"c"}`, LineUsage{InputTokens: 5, CachedTokens: 1, OutputTokens: 7}},
		{0, false, `{"custom_id":"a"}`, LineUsage{InputTokens: 3, OutputTokens: 2}},
		{1, true, `{"custom_id":"b"}`, LineUsage{}},
	}
	for _, l := range lines {
		if err := s.SaveBatchLine(ctx, "batch_a", l.line, l.failed, []byte(l.result), l.usage); err != nil {
			t.Fatalf("line %d: %v", l.line, err)
		}
	}
	// A line saved twice is refused and not counted twice.
	if err := s.SaveBatchLine(ctx, "batch_a", 0, false, []byte(`{"custom_id":"a"}`), LineUsage{InputTokens: 100}); err == nil {
		t.Fatal("a line was saved twice")
	}
	if err := s.SaveBatchLine(ctx, "batch_a", 3, false, []byte(`{not json`), LineUsage{}); err == nil {
		t.Fatal("a result that is not JSON was saved")
	}
	b, err := s.Batch(ctx, "batch_a")
	if err != nil {
		t.Fatal(err)
	}
	if b.Status != BatchInProgress || b.Total != 3 || b.Completed != 2 || b.Failed != 1 || b.Model != "fake" ||
		b.InputTokens != 8 || b.CachedTokens != 1 || b.OutputTokens != 9 {
		t.Fatalf("after the lines: %+v", b)
	}
	if done, err := s.BatchLinesDone(ctx, "batch_a"); err != nil || !reflect.DeepEqual(done, []int{0, 1, 2}) {
		t.Fatalf("BatchLinesDone = %v, %v", done, err)
	}
	collect := func(failed bool) []string {
		var out []string
		if err := s.EachBatchLine(ctx, "batch_a", failed, func(r []byte) error {
			out = append(out, string(r))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got, want := collect(false), []string{`{"custom_id":"a"}`, `{"custom_id":"c"}`}; !reflect.DeepEqual(got, want) {
		t.Errorf("output lines %v, want %v", got, want)
	}
	if got, want := collect(true), []string{`{"custom_id":"b"}`}; !reflect.DeepEqual(got, want) {
		t.Errorf("error lines %v, want %v", got, want)
	}

	out := sampleFile("file-out", at.Add(time.Minute), 20)
	out.Purpose = "batch_output"
	end := BatchEnd{Status: BatchCompleted, Output: &out, FinalizingAt: at.Add(time.Minute), At: at.Add(2 * time.Minute)}
	if err := s.FinishBatch(ctx, "batch_a", end); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishBatch(ctx, "batch_a", end); !errors.Is(err, ErrBatchNotRunning) {
		t.Fatalf("finishing twice: %v, want ErrBatchNotRunning", err)
	}
	b, _ = s.Batch(ctx, "batch_a")
	if b.Status != BatchCompleted || b.OutputFileID != "file-out" || b.ErrorFileID != "" || !b.CompletedAt.Equal(end.At) || !b.FinalizingAt.Equal(end.FinalizingAt) {
		t.Fatalf("after finishing: %+v", b)
	}
	if f, err := s.File(ctx, "file-out"); err != nil || f.Purpose != "batch_output" {
		t.Fatalf("output file row: %+v, %v", f, err)
	}
	if done, _ := s.BatchLinesDone(ctx, "batch_a"); len(done) != 0 {
		t.Fatalf("line results kept after finishing: %v", done)
	}
	if _, changed, err := s.CancelBatch(ctx, "batch_a", true, at); changed || err != nil {
		t.Fatalf("cancelling a completed batch: changed %v, %v", changed, err)
	}
}

func TestCancelBatch(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		start   bool // in progress before the cancel
		now     bool
		want    string
		changed bool
	}{
		{"waiting, at once", false, true, BatchCancelled, true},
		{"waiting, its runner finishes", false, false, BatchCancelling, true},
		{"running", true, true, BatchCancelling, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTest(t)
			if err := s.CreateBatch(ctx, sampleBatch("batch_c", at), 0); err != nil {
				t.Fatal(err)
			}
			if tt.start {
				if err := s.StartBatch(ctx, "batch_c", 1, "m", at); err != nil {
					t.Fatal(err)
				}
			}
			b, changed, err := s.CancelBatch(ctx, "batch_c", tt.now, at.Add(time.Second))
			if err != nil || changed != tt.changed || b.Status != tt.want || !b.CancellingAt.Equal(at.Add(time.Second)) {
				t.Fatalf("CancelBatch = %+v, %v, %v; want status %s", b, changed, err, tt.want)
			}
			// A second cancel changes nothing.
			if b2, changed, err := s.CancelBatch(ctx, "batch_c", tt.now, at.Add(time.Hour)); err != nil || changed || b2.Status != tt.want {
				t.Fatalf("second CancelBatch = %+v, %v, %v", b2, changed, err)
			}
			if tt.want == BatchCancelling {
				if err := s.FinishBatch(ctx, "batch_c", BatchEnd{Status: BatchCancelled, FinalizingAt: at, At: at.Add(time.Minute)}); err != nil {
					t.Fatal(err)
				}
				if b, _ := s.Batch(ctx, "batch_c"); b.Status != BatchCancelled || !b.CancelledAt.Equal(at.Add(time.Minute)) {
					t.Fatalf("after finishing: %+v", b)
				}
			}
		})
	}
	s := openTest(t)
	if _, _, err := s.CancelBatch(ctx, "batch_none", true, at); !errors.Is(err, ErrNotFound) {
		t.Errorf("cancel of a missing batch: %v", err)
	}
}

func TestFailBatch(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := s.CreateBatch(ctx, sampleBatch("batch_f", at), 0); err != nil {
		t.Fatal(err)
	}
	reasons := []BatchError{{Code: "invalid_json_line", Message: "line 2 is not JSON", Line: 2}}
	if err := s.FailBatch(ctx, "batch_f", reasons, at.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	b, _ := s.Batch(ctx, "batch_f")
	if b.Status != BatchFailed || !reflect.DeepEqual(b.Errors, reasons) || !b.FailedAt.Equal(at.Add(time.Second)) {
		t.Fatalf("failed batch: %+v", b)
	}
	if err := s.FailBatch(ctx, "batch_f", nil, at); !errors.Is(err, ErrBatchNotRunning) {
		t.Fatalf("failing twice: %v", err)
	}
}
