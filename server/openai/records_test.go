package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/chat"
	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/store"
)

// heldSink is the store's record sink with every insert held until open is called: a disk
// that does not answer.
type heldSink struct {
	next     store.RequestSink
	released chan struct{}
	once     sync.Once
}

func (h *heldSink) RecordRequests(ctx context.Context, rs []store.RequestRecord) error {
	<-h.released
	return h.next.RecordRequests(ctx, rs)
}

func (h *heldSink) open() { h.once.Do(func() { close(h.released) }) }

// TestRepliesDoNotWaitForTheRecord: with the request-record insert stuck, a JSON reply, a
// chat stream's [DONE] and a Responses stream's response.completed all arrive; the records
// land once the insert gets through.
func TestRepliesDoNotWaitForTheRecord(t *testing.T) {
	held := &heldSink{released: make(chan struct{})}
	st, err := store.OpenWith(filepath.Join(t.TempDir(), "db.sqlite"), store.Options{
		WrapRecordSink: func(next store.RequestSink) store.RequestSink { held.next = next; return held },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tmpl, err := chat.Parse(chatML)
	if err != nil {
		t.Fatal(err)
	}
	svc := core.New(core.Config{}, st, &core.Model{
		ID: "fake", Path: "/models/fake.gguf", Engine: enginetest.New(4096, defaultReply), Template: tmpl, ContextLength: 4096,
	})
	srv := httptest.NewServer(server.New(server.Config{}, svc))
	t.Cleanup(srv.Close)
	t.Cleanup(held.open) // first: a handler stuck on the insert must not hang srv.Close

	// A reply that waits for the held insert never comes: the client gives up instead of
	// hanging the test. This bounds a failure; nothing here measures time.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	post := func(path, body string) string {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			defer resp.Body.Close()
			var b []byte
			if b, err = io.ReadAll(resp.Body); err == nil {
				if resp.StatusCode != 200 {
					t.Fatalf("%s: status %d: %s", path, resp.StatusCode, b)
				}
				return string(b)
			}
		}
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s: the reply waited for the request record's insert", path)
		}
		t.Fatalf("%s: %v", path, err)
		return ""
	}

	var reply struct{ ID string }
	if err := json.Unmarshal([]byte(post("/v1/chat/completions", chatBody(""))), &reply); err != nil || reply.ID == "" {
		t.Fatalf("JSON reply: %v, %+v", err, reply)
	}

	body := post("/v1/chat/completions", chatBody(`"stream":true`))
	if !strings.HasSuffix(strings.TrimSpace(body), "data: [DONE]") {
		t.Fatalf("the stream does not end with [DONE]:\n%s", body)
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(body, "data: "), "\n")
	var chunk struct{ ID string }
	if err := json.Unmarshal([]byte(first), &chunk); err != nil || chunk.ID == "" {
		t.Fatalf("first chunk %q: %v", first, err)
	}

	body = post("/v1/responses", `{"model":"fake","input":"hi","stream":true}`)
	if !strings.Contains(body, `"type":"response.completed"`) {
		t.Fatalf("the Responses stream has no response.completed:\n%s", body)
	}

	// Every reply is in; no record is, while the insert is held.
	if recs, err := st.RecentRequests(t.Context(), 10); err != nil || len(recs) != 0 {
		t.Fatalf("records while the insert is held: %v, %v", recs, err)
	}
	held.open()
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		id     string
		stream bool
	}{{reply.ID, false}, {chunk.ID, true}} {
		rec, err := st.Request(t.Context(), want.id)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Status != 200 || rec.Stream != want.stream || rec.Endpoint != "/v1/chat/completions" {
			t.Errorf("record %+v", rec)
		}
	}
	recs, err := st.RecentRequests(t.Context(), 10)
	if err != nil || len(recs) != 3 {
		t.Fatalf("records after the insert got through: %d, %v; want 3", len(recs), err)
	}
	if recs[0].Endpoint != "/v1/responses" {
		t.Errorf("newest record %+v, want the Responses request", recs[0])
	}
	if d := st.DroppedRecords(); d != 0 {
		t.Errorf("%d records dropped", d)
	}
}
