package openai_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	openai "github.com/openai/openai-go/v3"

	"github.com/superfluid/superfluid/server/batches"
)

// chatBatchLine is one line of a chat completions batch input.
func chatBatchLine(id, body string) string {
	return fmt.Sprintf(`{"custom_id":%q,"method":"POST","url":"/v1/chat/completions","body":%s}`, id, body)
}

// uploadBatch uploads lines as a batch input file through the SDK.
func (f *filesFixture) uploadBatch(t *testing.T, lines ...string) string {
	t.Helper()
	up, err := f.client.Files.New(context.Background(), openai.FileNewParams{
		File: openai.File(strings.NewReader(strings.Join(lines, "\n")+"\n"), "batch.jsonl", "application/jsonl"), Purpose: openai.FilePurposeBatch})
	if err != nil {
		t.Fatal(err)
	}
	return up.ID
}

// waitBatch polls the batch through the SDK until it has ended.
func (f *filesFixture) waitBatch(t *testing.T, id string) *openai.Batch {
	t.Helper()
	var b *openai.Batch
	waitFor(t, "batch "+id+" to end", func() bool {
		var err error
		if b, err = f.client.Batches.Get(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		return b.Status == openai.BatchStatusCompleted || b.Status == openai.BatchStatusFailed || b.Status == openai.BatchStatusCancelled
	})
	return b
}

// batchLine is a line of an output or error file.
type batchLine struct {
	ID       string `json:"id"`
	CustomID string `json:"custom_id"`
	Response *struct {
		StatusCode int             `json:"status_code"`
		RequestID  string          `json:"request_id"`
		Body       json.RawMessage `json:"body"`
	} `json:"response"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// readLines reads an output or error file through the SDK; every line has all four keys.
func (f *filesFixture) readLines(t *testing.T, fileID string) []batchLine {
	t.Helper()
	if fileID == "" {
		return nil
	}
	resp, err := f.client.Files.Content(context.Background(), fileID)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []batchLine
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &keys); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		for _, k := range []string{"id", "custom_id", "response", "error"} {
			if _, ok := keys[k]; !ok {
				t.Errorf("line lacks %q: %s", k, sc.Text())
			}
		}
		var l batchLine
		json.Unmarshal(sc.Bytes(), &l)
		out = append(out, l)
	}
	return out
}

// TestBatchThroughTheSDK: openai-go creates a chat completions batch, follows it to the end,
// lists it, and reads its output (each body a chat.completion the SDK parses) and error files.
func TestBatchThroughTheSDK(t *testing.T) {
	ctx := context.Background()
	f := setupFiles(t, filesConfig{maxTokens: 3})
	in := f.uploadBatch(t,
		chatBatchLine("one", `{"model":"fake","messages":[{"role":"user","content":"Say hello."}]}`),
		chatBatchLine("two", `{"model":"fake","messages":[{"role":"user","content":"Again."}],"max_tokens":5}`),
		chatBatchLine("bad", `{"model":"fake","messages":[]}`),
		chatBatchLine("streamed", `{"model":"fake","messages":[{"role":"user","content":"x"}],"stream":true}`),
	)
	b, err := f.client.Batches.New(ctx, openai.BatchNewParams{InputFileID: in, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions,
		CompletionWindow: openai.BatchNewParamsCompletionWindow24h, Metadata: map[string]string{"job": "nightly"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.ID, "batch_") || b.Object != "batch" || b.InputFileID != in || b.CompletionWindow != "24h" ||
		b.Endpoint != "/v1/chat/completions" || b.Metadata["job"] != "nightly" || b.CreatedAt == 0 || b.ExpiresAt != b.CreatedAt+24*3600 {
		t.Fatalf("created: %s", b.RawJSON())
	}
	b = f.waitBatch(t, b.ID)
	if b.Status != openai.BatchStatusCompleted || b.RequestCounts.Total != 4 || b.RequestCounts.Completed != 2 || b.RequestCounts.Failed != 2 ||
		b.InProgressAt == 0 || b.FinalizingAt == 0 || b.CompletedAt == 0 || b.Model != "fake" {
		t.Fatalf("ended: %s", b.RawJSON())
	}
	if b.Usage.InputTokens == 0 || b.Usage.OutputTokens != int64(len(defaultReply)+5) || b.Usage.TotalTokens != b.Usage.InputTokens+b.Usage.OutputTokens {
		t.Fatalf("usage: %s", b.Usage.RawJSON())
	}
	var raw map[string]json.RawMessage
	json.Unmarshal([]byte(b.RawJSON()), &raw)
	for _, key := range []string{"errors", "failed_at", "cancelled_at", "cancelling_at", "expired_at"} {
		if string(raw[key]) != "null" {
			t.Errorf("%s = %s, want null", key, raw[key])
		}
	}

	out := f.readLines(t, b.OutputFileID)
	if len(out) != 2 || out[0].CustomID != "one" || out[1].CustomID != "two" {
		t.Fatalf("output: %+v", out)
	}
	for i, l := range out {
		if l.Error != nil || l.Response == nil || l.Response.StatusCode != 200 || !strings.HasPrefix(l.ID, "batch_req_") {
			t.Fatalf("output line %+v", l)
		}
		var c openai.ChatCompletion
		if err := json.Unmarshal(l.Response.Body, &c); err != nil {
			t.Fatal(err)
		}
		// No max_tokens: the batch cap (2048), not --max-tokens 3; max_tokens 5 is kept.
		want := []string{defaultReply, defaultReply[:5]}[i]
		if c.Object != "chat.completion" || len(c.Choices) != 1 || c.Choices[0].Message.Content != want {
			t.Fatalf("line %s body: %s", l.CustomID, l.Response.Body)
		}
	}
	errs := f.readLines(t, b.ErrorFileID)
	if len(errs) != 2 || errs[0].CustomID != "bad" || errs[1].CustomID != "streamed" {
		t.Fatalf("errors: %+v", errs)
	}
	for _, l := range errs {
		if l.Response == nil || l.Response.StatusCode != 400 || l.Error != nil {
			t.Fatalf("error line %+v", l)
		}
		var e struct{ Error struct{ Param string } }
		json.Unmarshal(l.Response.Body, &e)
		if want := map[string]string{"bad": "messages", "streamed": "stream"}[l.CustomID]; e.Error.Param != want {
			t.Errorf("line %s: error %s, want param %s", l.CustomID, l.Response.Body, want)
		}
	}
	files, err := f.client.Files.List(ctx, openai.FileListParams{Purpose: openai.String("batch_output")})
	if err != nil || len(files.Data) != 2 {
		t.Fatalf("batch_output files: %+v, %v", files, err)
	}

	page, err := f.client.Batches.List(ctx, openai.BatchListParams{})
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != b.ID || page.HasMore {
		t.Fatalf("list: %+v, %v", page, err)
	}
	if _, err := f.client.Batches.Cancel(ctx, b.ID); !hasStatus(err, http.StatusConflict) {
		t.Fatalf("cancel of a completed batch: %v, want 409", err)
	}
}

// TestBatchCompletionsLines: a /v1/completions batch runs its lines through the completions
// handler; a line without max_tokens is capped at 2048, not at --max-tokens.
func TestBatchCompletionsLines(t *testing.T) {
	f := setupFiles(t, filesConfig{maxTokens: 3})
	in := f.uploadBatch(t, `{"custom_id":"c1","method":"POST","url":"/v1/completions","body":{"model":"fake","prompt":"Once"}}`)
	b, err := f.client.Batches.New(context.Background(), openai.BatchNewParams{InputFileID: in,
		Endpoint: openai.BatchNewParamsEndpointV1Completions, CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	if err != nil {
		t.Fatal(err)
	}
	b = f.waitBatch(t, b.ID)
	out := f.readLines(t, b.OutputFileID)
	if b.Status != openai.BatchStatusCompleted || len(out) != 1 {
		t.Fatalf("batch %s, output %+v", b.RawJSON(), out)
	}
	var c openai.Completion
	if err := json.Unmarshal(out[0].Response.Body, &c); err != nil || c.Choices[0].Text != defaultReply {
		t.Fatalf("completion %s: %v", out[0].Response.Body, err)
	}
	if reqs := f.eng.Requests(); len(reqs) != 1 || reqs[0].MaxTokens != 2048 {
		t.Fatalf("the line ran with %+v, want max_tokens 2048", reqs)
	}
}

// TestBatchBadInput: what POST /v1/batches refuses, and batches that fail validation.
func TestBatchBadInput(t *testing.T) {
	f := setupFiles(t, filesConfig{})
	good := f.uploadBatch(t, chatBatchLine("a", `{"model":"fake","messages":[{"role":"user","content":"x"}]}`))
	tests := []struct {
		name string
		body string
		want wantError
	}{
		{"no input file", `{"endpoint":"/v1/chat/completions","completion_window":"24h"}`,
			wantError{status: 400, typ: "invalid_request_error", param: "input_file_id"}},
		{"missing file", `{"input_file_id":"file-` + strings.Repeat("1", 24) + `","endpoint":"/v1/chat/completions"}`,
			wantError{status: 404, typ: "invalid_request_error", param: "input_file_id", msg: "No such File object"}},
		{"hostile file id", `{"input_file_id":"../../db.sqlite"}`,
			wantError{status: 404, typ: "invalid_request_error", param: "input_file_id", msg: "No such File object: ../../db.sqlite"}},
		{"endpoint", `{"input_file_id":"` + good + `","endpoint":"/v1/moderations"}`,
			wantError{status: 400, typ: "invalid_request_error", param: "endpoint"}},
		{"window", `{"input_file_id":"` + good + `","completion_window":"1h"}`,
			wantError{status: 400, typ: "invalid_request_error", param: "completion_window"}},
		{"metadata", `{"input_file_id":"` + good + `","metadata":{"n":1}}`,
			wantError{status: 400, typ: "invalid_request_error", param: "metadata"}},
		{"malformed body", `{"input_file_id":`, wantError{status: 400, typ: "invalid_request_error"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := f.do(t, "POST", "/v1/batches", tt.body)
			checkError(t, resp, body, tt.want)
		})
	}
	for _, path := range []string{"/v1/batches/batch_nope", "/v1/batches/..%2F..%2Fx"} {
		resp, body := f.do(t, "GET", path, "")
		checkError(t, resp, body, wantError{status: 404, typ: "invalid_request_error", param: "batch_id", msg: "No such Batch object"})
	}
	resp, body := f.do(t, "POST", "/v1/batches/batch_nope/cancel", "")
	checkError(t, resp, body, wantError{status: 404, typ: "invalid_request_error", param: "batch_id"})

	// Inputs that fail validation: the batch fails before any line runs, saying why.
	failing := []struct {
		name, line, code, param string
	}{
		{"malformed line", `{"custom_id":"x","method":"POST"`, "invalid_json_line", ""},
		{"unsupported url", `{"custom_id":"x","method":"POST","url":"/v1/images/generations","body":{"model":"fake"}}`, "invalid_url", "url"},
		{"unknown model", chatBatchLine("x", `{"model":"nope","messages":[{"role":"user","content":"x"}]}`), "model_not_found", "body.model"},
	}
	for _, tt := range failing {
		t.Run(tt.name, func(t *testing.T) {
			in := f.uploadBatch(t, chatBatchLine("ok", `{"model":"fake","messages":[{"role":"user","content":"x"}]}`), tt.line)
			b, err := f.client.Batches.New(context.Background(), openai.BatchNewParams{InputFileID: in,
				Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions, CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
			if err != nil {
				t.Fatal(err)
			}
			b = f.waitBatch(t, b.ID)
			if b.Status != openai.BatchStatusFailed || b.FailedAt == 0 || len(b.Errors.Data) != 1 || b.Errors.Object != "list" {
				t.Fatalf("batch %s", b.RawJSON())
			}
			e := b.Errors.Data[0]
			if e.Code != tt.code || e.Param != tt.param || e.Line != 2 || e.Message == "" {
				t.Fatalf("error %s, want code %s param %q line 2", e.RawJSON(), tt.code, tt.param)
			}
		})
	}
	if n := len(f.eng.Requests()); n != 0 {
		t.Fatalf("%d lines of failed batches ran", n)
	}
}

// TestBatchQueueFull: past 256 (here 2) waiting batches a new one is refused with 429
// batch_queue_full.
func TestBatchQueueFull(t *testing.T) {
	f := setupFiles(t, filesConfig{stopped: true, batches: batches.BatchConfig{Waiting: 2}})
	in := f.uploadBatch(t, chatBatchLine("a", `{"model":"fake","messages":[{"role":"user","content":"x"}]}`))
	body := `{"input_file_id":"` + in + `","endpoint":"/v1/chat/completions","completion_window":"24h"}`
	for range 2 {
		if resp, b := f.do(t, "POST", "/v1/batches", body); resp.StatusCode != 200 {
			t.Fatalf("a waiting batch: %d %s", resp.StatusCode, b)
		}
	}
	resp, b := f.do(t, "POST", "/v1/batches", body)
	checkError(t, resp, b, wantError{status: 429, typ: "rate_limit_error", code: "batch_queue_full", msg: "waiting"})
	// A waiting batch cancels at once.
	page, _ := f.client.Batches.List(context.Background(), openai.BatchListParams{Limit: openai.Int(1)})
	if len(page.Data) != 1 || !page.HasMore || page.Data[0].Status != openai.BatchStatusValidating {
		t.Fatalf("list: %s", page.RawJSON())
	}
	c, err := f.client.Batches.Cancel(context.Background(), page.Data[0].ID)
	if err != nil || c.Status != openai.BatchStatusCancelled || c.CancelledAt == 0 {
		t.Fatalf("cancel: %v, %v", c, err)
	}
	if resp, b := f.do(t, "POST", "/v1/batches", body); resp.StatusCode != 200 {
		t.Fatalf("after a cancel there is room: %d %s", resp.StatusCode, b)
	}
}

// TestBatchCancelDuringLongLine: a cancel while a slow line runs answers cancelling at once;
// the line finishes, no other starts, and the batch ends cancelled with that line's output.
func TestBatchCancelDuringLongLine(t *testing.T) {
	f := setupFiles(t, filesConfig{delay: 20 * time.Millisecond, batches: batches.BatchConfig{LinesAtOnce: 1}})
	var lines []string
	for _, id := range []string{"a", "b", "c"} {
		lines = append(lines, chatBatchLine(id, `{"model":"fake","messages":[{"role":"user","content":"x"}]}`))
	}
	b, err := f.client.Batches.New(context.Background(), openai.BatchNewParams{InputFileID: f.uploadBatch(t, lines...),
		Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions, CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first line to start", func() bool { return len(f.eng.Requests()) == 1 })
	c, err := f.client.Batches.Cancel(context.Background(), b.ID)
	if err != nil || c.Status != openai.BatchStatusCancelling || c.CancellingAt == 0 {
		t.Fatalf("cancel: %v, %v", c, err)
	}
	b = f.waitBatch(t, b.ID)
	if b.Status != openai.BatchStatusCancelled || b.CancelledAt == 0 || b.RequestCounts.Total != 3 || b.RequestCounts.Completed != 1 {
		t.Fatalf("batch %s", b.RawJSON())
	}
	if out := f.readLines(t, b.OutputFileID); len(out) != 1 || out[0].CustomID != "a" {
		t.Fatalf("output %+v", out)
	}
	if n := len(f.eng.Requests()); n != 1 {
		t.Fatalf("%d lines ran", n)
	}
}

// TestBatchOutputOrder: the output holds each custom_id once, in input order, however the
// lines interleave.
func TestBatchOutputOrder(t *testing.T) {
	f := setupFiles(t, filesConfig{delay: time.Millisecond, batches: batches.BatchConfig{LinesAtOnce: 4}})
	var lines, want []string
	for i := range 12 {
		id := fmt.Sprintf("req-%02d", i)
		want = append(want, id)
		lines = append(lines, chatBatchLine(id, fmt.Sprintf(`{"model":"fake","messages":[{"role":"user","content":"x"}],"max_tokens":%d}`, 12-i)))
	}
	b, err := f.client.Batches.New(context.Background(), openai.BatchNewParams{InputFileID: f.uploadBatch(t, lines...),
		Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions, CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	if err != nil {
		t.Fatal(err)
	}
	b = f.waitBatch(t, b.ID)
	var got []string
	for _, l := range f.readLines(t, b.OutputFileID) {
		got = append(got, l.CustomID)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("output order %v, want %v", got, want)
	}
	resp, err := f.client.Files.Content(context.Background(), b.OutputFileID)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/octet-stream" {
		t.Errorf("content type %q", ct)
	}
	io.Copy(io.Discard, resp.Body)
}
