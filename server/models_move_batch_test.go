package server_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/batches"
	"github.com/superfluid/superfluid/server/servertest"
)

// TestModelsMoveBatchWaits: a batch whose model is not loaded, started during a move of the
// models folder, waits for the move instead of failing each line with the move's 409; once
// the move ends every line is answered.
func TestModelsMoveBatchWaits(t *testing.T) {
	cat := servertest.NewCatalog(t, models.Config{KeepAlive: time.Hour})
	cat.AddModel(t, "tiny", gguftest.TinyLlamaOptions{})
	b := batches.New(batches.Config{Files: batches.FilesConfig{Dir: t.TempDir()}}, cat.Svc, cat.Store)
	srv := httptest.NewServer(server.New(server.Config{Batches: b}, cat.Svc)) // serves the lines
	t.Cleanup(srv.Close)
	if err := b.StartBackground(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.StopBackground(context.Background()) })
	ctx := context.Background()
	var lines []string
	for _, id := range []string{"a", "b", "c"} {
		lines = append(lines, `{"custom_id":"`+id+`","method":"POST","url":"/v1/chat/completions","body":{"model":"tiny","messages":[{"role":"user","content":"hi"}]}}`)
	}
	in, err := b.CreateFile(ctx, batches.NewFile{Filename: "in.jsonl", Purpose: "batch", Content: strings.NewReader(strings.Join(lines, "\n") + "\n")})
	if err != nil {
		t.Fatal(err)
	}
	end, err := cat.Svc.BeginModelsMove()
	if err != nil {
		t.Fatal(err)
	}
	batch, err := b.CreateBatch(ctx, batches.NewBatch{InputFileID: in.ID, Endpoint: "/v1/chat/completions", CompletionWindow: "24h"})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // long enough for three lines to run (or fail)
	if got, err := b.Batch(ctx, batch.ID); err != nil || got.Completed+got.Failed != 0 {
		t.Fatalf("during the move: %+v, %v", got, err)
	}
	end()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := b.Batch(ctx, batch.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == "completed" {
			if got.Completed != 3 || got.Failed != 0 {
				t.Fatalf("after the move: %+v", got)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the batch did not complete after the move: %+v", got)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
