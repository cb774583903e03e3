package app

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/assets"
	"github.com/superfluid/superfluid/server/store"
)

// TestRevokedKeysQueuedBatchFails: a batch queued with a key that is revoked before the batch
// runner gets to it fails, with an error naming the reason, instead of running its lines with
// no restrictions in the revoked key's name.
func TestRevokedKeysQueuedBatchFails(t *testing.T) {
	cfg := testConfig(t, "")
	ctx := context.Background()
	code, key, errOut := cli("keys", "create", "alice", "--models", assets.BundledModelID, "--data-dir", cfg.DataDir)
	key = strings.TrimSpace(key)
	if code != 0 {
		t.Fatalf("keys create: %d %s", code, errOut)
	}
	// The server without its background work: the batch waits, queued, for the runner.
	a, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	b := createBatch(t, keyClient(srv.URL, key), batchInput(assets.BundledModelID, 3, 4))
	if code, _, errOut := cli("keys", "revoke", "alice", "--data-dir", cfg.DataDir); code != 0 {
		t.Fatalf("keys revoke: %d %s", code, errOut)
	}
	if err := a.startBackground(); err != nil {
		t.Fatal(err)
	}
	var got store.Batch
	deadline := time.Now().Add(time.Minute)
	for {
		if got, err = a.Store().Batch(ctx, b.ID); err != nil {
			t.Fatal(err)
		}
		if got.Status != store.BatchValidating && got.Status != store.BatchInProgress {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the batch is still %s", got.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got.Status != store.BatchFailed || len(got.Errors) != 1 || got.Errors[0].Code != "invalid_api_key" ||
		!strings.Contains(got.Errors[0].Message, "revoked") || got.Completed+got.Failed != 0 {
		t.Fatalf("the revoked key's batch: status %s, errors %+v, %d lines done; want failed naming the revoked key, no line run",
			got.Status, got.Errors, got.Completed+got.Failed)
	}
	done, err := a.Store().BatchLinesDone(ctx, b.ID)
	if err != nil || len(done) != 0 {
		t.Fatalf("lines run for the revoked key: %v %v", done, err)
	}
	if e, err := a.Manager().Catalog().Lookup(assets.BundledModelID); err != nil || !a.Manager().Status(e).LastUsed.IsZero() {
		t.Fatalf("the revoked key's batch used the model: %v", err)
	}
}
