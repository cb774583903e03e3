package store

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// gate is a RequestSink in front of the Store that holds every insert until opened, and
// reports each batch it is given (the batch's size) on entered as it arrives.
type gate struct {
	next    RequestSink
	entered chan int
	open    chan struct{}
	once    sync.Once
}

func newGate() *gate {
	return &gate{entered: make(chan int, 1000), open: make(chan struct{})}
}

func (g *gate) wrap(next RequestSink) RequestSink { g.next = next; return g }

func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

func (g *gate) RecordRequests(ctx context.Context, rs []RequestRecord) error {
	g.entered <- len(rs)
	<-g.open
	return g.next.RecordRequests(ctx, rs)
}

// openGated opens a store whose background writer inserts through a closed gate.
func openGated(t *testing.T, path string, opts Options) (*Store, *gate) {
	t.Helper()
	g := newGate()
	opts.WrapRecordSink = g.wrap
	s, err := OpenWith(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		g.release() // before Close, which waits for the writer
		s.Close()
	})
	return s, g
}

func countRequests(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.r.QueryRow(`SELECT count(*) FROM requests`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRecordDoesNotWaitForTheDatabase: Record returns while the insert is stuck, and every
// record lands once it gets through; Flush waits for them.
func TestRecordDoesNotWaitForTheDatabase(t *testing.T) {
	ctx := context.Background()
	s, g := openGated(t, filepath.Join(t.TempDir(), "db"), Options{})
	if !s.Record(RequestRecord{ID: "first", Model: "m", Status: 200}) {
		t.Fatal("first record dropped")
	}
	<-g.entered // the writer holds it, stuck in the insert
	for i := range 10 {
		if !s.Record(RequestRecord{ID: fmt.Sprint("r", i), Status: 200}) {
			t.Fatalf("record %d dropped", i)
		}
	}
	if n := countRequests(t, s); n != 0 {
		t.Fatalf("%d records stored while the insert is held", n)
	}
	g.release()
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countRequests(t, s); n != 11 {
		t.Fatalf("%d records stored after Flush, want 11", n)
	}
	if rec, err := s.Request(ctx, "first"); err != nil || rec.Model != "m" || rec.CreatedAt.IsZero() {
		t.Fatalf("first = %+v, %v", rec, err)
	}
	if d := s.DroppedRecords(); d != 0 {
		t.Errorf("DroppedRecords = %d", d)
	}
}

// TestRecordBatches: what queues up while an insert runs goes in at most RecordBatch at a time.
func TestRecordBatches(t *testing.T) {
	s, g := openGated(t, filepath.Join(t.TempDir(), "db"), Options{RecordBatch: 4})
	s.Record(RequestRecord{ID: "first"})
	<-g.entered
	for i := range 10 {
		s.Record(RequestRecord{ID: fmt.Sprint("r", i)})
	}
	g.release()
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for len(g.entered) > 0 {
		sizes = append(sizes, <-g.entered)
	}
	if want := []int{4, 4, 2}; !slices.Equal(sizes, want) {
		t.Errorf("batches after the first = %v, want %v", sizes, want)
	}
	if n := countRequests(t, s); n != 11 {
		t.Errorf("%d records stored, want 11", n)
	}
}

// TestRecordFullQueueDrops: with the insert stuck and the queue full, Record returns at once
// and counts the record as dropped.
func TestRecordFullQueueDrops(t *testing.T) {
	s, g := openGated(t, filepath.Join(t.TempDir(), "db"), Options{RecordQueue: 2})
	s.Record(RequestRecord{ID: "taken"})
	<-g.entered
	for _, id := range []string{"q1", "q2"} {
		if !s.Record(RequestRecord{ID: id}) {
			t.Fatalf("%s dropped with room in the queue", id)
		}
	}
	for _, id := range []string{"over1", "over2", "over3"} {
		if s.Record(RequestRecord{ID: id}) {
			t.Fatalf("%s queued past the bound", id)
		}
	}
	if d := s.DroppedRecords(); d != 3 {
		t.Errorf("DroppedRecords = %d, want 3", d)
	}
	g.release()
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := countRequests(t, s); n != 3 {
		t.Errorf("%d records stored, want 3 (taken, q1, q2)", n)
	}
}

// TestCloseFlushesQueued: Close writes every queued record before closing the database; a
// record after Close is dropped, not a panic.
func TestCloseFlushesQueued(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	g := newGate()
	s, err := OpenWith(path, Options{WrapRecordSink: g.wrap})
	if err != nil {
		t.Fatal(err)
	}
	s.Record(RequestRecord{ID: "taken"})
	<-g.entered
	for i := range 50 {
		s.Record(RequestRecord{ID: fmt.Sprint("q", i)})
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	g.release()
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	if s.Record(RequestRecord{ID: "late"}) {
		t.Error("a record after Close was queued")
	}
	if err := s.Flush(context.Background()); err != nil {
		t.Errorf("Flush after Close: %v", err)
	}

	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := countRequests(t, s); n != 51 {
		t.Errorf("%d records after reopening, want 51", n)
	}
}

// TestRecordDuringClose: records sent while Close runs are either stored or counted as
// dropped; none is lost silently and none panics.
func TestRecordDuringClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s, err := OpenWith(path, Options{RecordQueue: 64})
	if err != nil {
		t.Fatal(err)
	}
	var queued atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range 200 {
				if s.Record(RequestRecord{ID: fmt.Sprintf("w%d-%d", w, i)}) {
					queued.Add(1)
				}
			}
		}()
	}
	close(start)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if got := queued.Load() + int64(s.DroppedRecords()); got != 8*200 {
		t.Errorf("queued %d + dropped %d = %d, want %d", queued.Load(), s.DroppedRecords(), got, 8*200)
	}

	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := countRequests(t, s); int64(n) != queued.Load() {
		t.Errorf("%d records stored, %d were queued", n, queued.Load())
	}
}

// TestRecordRequestsKeepsTheGoodOnes: one bad record in a batch costs only itself.
func TestRecordRequestsKeepsTheGoodOnes(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	if err := s.RecordRequest(ctx, RequestRecord{ID: "old"}); err != nil {
		t.Fatal(err)
	}
	err := s.RecordRequests(ctx, []RequestRecord{{ID: "a"}, {ID: "old"}, {ID: ""}, {ID: "b"}})
	if err == nil {
		t.Fatal("a batch with a repeated and an empty id succeeded")
	}
	if n := countRequests(t, s); n != 3 {
		t.Errorf("%d records, want 3 (old, a, b)", n)
	}
}

// TestPruneRequests deletes exactly the records older than the cutoff, over several batches.
func TestPruneRequests(t *testing.T) {
	ctx := context.Background()
	cutoff := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name         string
		old, recent  int
		batch        int
		wantDeleted  int64
		wantRecordID string // one that must remain
	}{
		{"none old", 0, 3, 2, 0, "new-0"},
		{"fewer than a batch", 1, 2, 5, 1, "new-1"},
		{"an exact multiple of the batch", 6, 2, 3, 6, "new-0"},
		{"several batches and a rest", 7, 1, 3, 7, "new-0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTest(t)
			var rs []RequestRecord
			for i := range tt.old {
				// From a year before the cutoff to a nanosecond before it.
				at := cutoff.Add(-time.Nanosecond - time.Duration(i)*24*time.Hour*50)
				rs = append(rs, RequestRecord{ID: fmt.Sprint("old-", i), CreatedAt: at})
			}
			for i := range tt.recent {
				rs = append(rs, RequestRecord{ID: fmt.Sprint("new-", i), CreatedAt: cutoff.Add(time.Duration(i) * time.Hour)})
			}
			if err := s.RecordRequests(ctx, rs); err != nil {
				t.Fatal(err)
			}
			n, err := s.pruneRequests(ctx, cutoff, tt.batch)
			if err != nil || n != tt.wantDeleted {
				t.Fatalf("pruneRequests = %d, %v; want %d", n, err, tt.wantDeleted)
			}
			if got := countRequests(t, s); got != tt.recent {
				t.Errorf("%d records left, want %d", got, tt.recent)
			}
			if _, err := s.Request(ctx, tt.wantRecordID); err != nil {
				t.Errorf("%s: %v", tt.wantRecordID, err)
			}
		})
	}
}

// TestOpenPrunes: with KeepRecords, Open prunes in the background right away.
func TestOpenPrunes(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	day := 24 * time.Hour
	err = s.RecordRequests(ctx, []RequestRecord{
		{ID: "400 days", CreatedAt: now.Add(-400 * day)},
		{ID: "31 days", CreatedAt: now.Add(-31 * day)},
		{ID: "29 days", CreatedAt: now.Add(-29 * day)},
		{ID: "today", CreatedAt: now},
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	passes := make(chan int64, 10)
	s, err = OpenWith(path, Options{KeepRecords: 30 * day, pruned: func(n int64, err error) {
		if err != nil {
			t.Errorf("prune: %v", err)
		}
		passes <- n
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := <-passes; n != 2 {
		t.Errorf("the first prune deleted %d, want 2", n)
	}
	recent, err := s.RecentRequests(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range recent {
		ids = append(ids, r.ID)
	}
	if want := []string{"today", "29 days"}; !slices.Equal(ids, want) {
		t.Errorf("left %v, want %v", ids, want)
	}

	if _, err := OpenWith(path, Options{KeepRecords: -time.Hour}); err == nil {
		t.Error("a negative KeepRecords was accepted")
	}
}
