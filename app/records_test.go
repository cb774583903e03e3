package app

import (
	"bytes"
	"context"
	"fmt"
	"github.com/openai/openai-go/v3/option"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/server/store"
)

// recordIDs lists the request records in the app's database, newest first.
func recordIDs(t *testing.T, cfg Config) []string {
	t.Helper()
	st, err := store.Open(databasePath(cfg.DataDir))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	recs, err := st.RecentRequests(context.Background(), 10_000)
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{}
	for _, r := range recs {
		ids = append(ids, r.ID)
	}
	return ids
}

// TestCloseFlushesRecords: request records still queued when the app closes are written
// before the database closes.
func TestCloseFlushesRecords(t *testing.T) {
	cfg := testConfig(t, "")
	a, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const n = 500
	for i := range n {
		if !a.Store().Record(store.RequestRecord{ID: fmt.Sprint("chatcmpl-", i), Status: 200}) {
			t.Fatalf("record %d dropped", i)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if ids := recordIDs(t, cfg); len(ids) != n {
		t.Fatalf("%d records after Close, want %d", len(ids), n)
	}
}

// TestRecordsDays: --records-days prunes older request records at start; 0 keeps them all;
// a negative count is a usage error.
func TestRecordsDays(t *testing.T) {
	cfg := testConfig(t, "")
	st, err := store.Open(databasePath(cfg.DataDir))
	if err != nil {
		t.Fatal(err)
	}
	day := 24 * time.Hour
	err = st.RecordRequests(context.Background(), []store.RequestRecord{
		{ID: "40 days", CreatedAt: time.Now().Add(-40 * day)},
		{ID: "10 days", CreatedAt: time.Now().Add(-10 * day)},
	})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}

	cfg.RecordsDays = 0
	a, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	if ids := recordIDs(t, cfg); len(ids) != 2 {
		t.Fatalf("records with --records-days 0: %v, want both", ids)
	}

	cfg.RecordsDays = 30
	a, err = Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	// The prune runs in the background; wait (bounded) for the old record to go.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		recs, err := a.Store().RecentRequests(ctx, 10)
		if err != nil {
			t.Fatalf("the 40-day-old record was not pruned: %v", err)
		}
		if len(recs) == 1 {
			if recs[0].ID != "10 days" {
				t.Fatalf("left %+v, want the 10-day-old record", recs[0])
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the 40-day-old record was not pruned: %v", recs)
		case <-time.After(10 * time.Millisecond):
		}
	}

	var stdout, stderr bytes.Buffer
	code := Main([]string{"superfluid", "serve", "--data-dir", t.TempDir(), "--port", "0", "--records-days", "-1"}, &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "--records-days") {
		t.Errorf("--records-days -1: exit %d, stderr %q; want 2 naming the flag", code, stderr.String())
	}
	var help bytes.Buffer
	Main([]string{"superfluid", "serve", "--help"}, &help, &help)
	if !slices.ContainsFunc(strings.Split(help.String(), "\n"), func(l string) bool {
		return strings.Contains(l, "--records-days") && strings.Contains(l, "(default 30)")
	}) {
		t.Errorf("serve --help lacks --records-days with its default 30:\n%s", help.String())
	}
}

// TestCloseRecordsRequestsStillRunning: a generation still running when the app closes (past
// the HTTP drain) ends with an engine failure and its record still lands.
func TestCloseRecordsRequestsStillRunning(t *testing.T) {
	cfg := testConfig(t, testModel)
	cfg.ContextLength = 4096
	a, srv := startServer(t, cfg, true)
	params := storyParamsFor(testModel, 4000)
	stream := sdk(srv.URL).Chat.Completions.NewStreaming(context.Background(), params, option.WithJSONSet("ignore_eos", true))
	if !stream.Next() {
		t.Fatalf("no first chunk: %v", stream.Err())
	}
	id := stream.Current().ID
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	for stream.Next() {
	}
	found := false
	for _, got := range recordIDs(t, cfg) {
		found = found || got == id
	}
	if !found {
		t.Fatalf("the request %s running at Close was not recorded", id)
	}
}
