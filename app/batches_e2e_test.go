package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
)

// batchInput is a JSONL chat completions batch of n lines on the model, each asking for
// maxTokens tokens with ignore_eos, so every line does the same work.
func batchInput(model string, n, maxTokens int) []byte {
	var b bytes.Buffer
	for i := range n {
		body := map[string]any{
			"model": model, "max_tokens": maxTokens, "ignore_eos": true, "temperature": 0,
			"messages": []map[string]string{{"role": "user", "content": fmt.Sprintf("Story %d: once upon a time", i)}},
		}
		line, _ := json.Marshal(map[string]any{"custom_id": fmt.Sprintf("line-%02d", i), "method": "POST", "url": "/v1/chat/completions", "body": body})
		b.Write(append(line, '\n'))
	}
	return b.Bytes()
}

// createBatch uploads input and starts a chat completions batch on it.
func createBatch(t *testing.T, client *openai.Client, input []byte) *openai.Batch {
	t.Helper()
	ctx := context.Background()
	file, err := client.Files.New(ctx, openai.FileNewParams{File: openai.File(bytes.NewReader(input), "batch.jsonl", "application/jsonl"),
		Purpose: openai.FilePurposeBatch})
	if err != nil {
		t.Fatal(err)
	}
	b, err := client.Batches.New(ctx, openai.BatchNewParams{InputFileID: file.ID, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions,
		CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// waitBatch polls a batch until done says so (or the deadline passes).
func waitBatch(t *testing.T, client *openai.Client, id string, what string, done func(*openai.Batch) bool) *openai.Batch {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		b, err := client.Batches.Get(context.Background(), id)
		if err == nil && done(b) {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %v %v", what, b, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func batchEnded(b *openai.Batch) bool {
	return b.Status == openai.BatchStatusCompleted || b.Status == openai.BatchStatusFailed || b.Status == openai.BatchStatusCancelled
}

// outputLines reads a batch output file through the SDK.
// customIDs are the custom_id of each output line, in order.
func customIDs(lines []map[string]json.RawMessage) []string {
	var ids []string
	for _, l := range lines {
		var id string
		json.Unmarshal(l["custom_id"], &id)
		ids = append(ids, id)
	}
	return ids
}

func outputLines(t *testing.T, client *openai.Client, fileID string) ([]byte, []map[string]json.RawMessage) {
	t.Helper()
	resp, err := client.Files.Content(context.Background(), fileID)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var lines []map[string]json.RawMessage
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("output line %q: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	return raw, lines
}

// TestBatchEndToEnd: openai-go's Files and Batches APIs against the real server and
// llama.cpp: a batch runs, its output holds a chat.completion per line, and the files and the
// batch are still there after a restart.
func TestBatchEndToEnd(t *testing.T) {
	cfg := testConfig(t, testModel)
	a, srv := startServer(t, cfg, true)
	client := sdk(srv.URL)
	model := modelID(testModel)
	b := createBatch(t, client, batchInput(model, 5, 16))
	b = waitBatch(t, client, b.ID, "the batch to end", batchEnded)
	if b.Status != openai.BatchStatusCompleted || b.RequestCounts.Total != 5 || b.RequestCounts.Completed != 5 || b.RequestCounts.Failed != 0 ||
		b.Usage.OutputTokens != 5*16 || b.Model != model || b.ErrorFileID != "" {
		t.Fatalf("batch: %s", b.RawJSON())
	}
	raw, lines := outputLines(t, client, b.OutputFileID)
	if len(lines) != 5 {
		t.Fatalf("%d output lines", len(lines))
	}
	for i, l := range lines {
		var id string
		json.Unmarshal(l["custom_id"], &id)
		var resp struct {
			StatusCode int                   `json:"status_code"`
			Body       openai.ChatCompletion `json:"body"`
		}
		if err := json.Unmarshal(l["response"], &resp); err != nil {
			t.Fatal(err)
		}
		if id != fmt.Sprintf("line-%02d", i) || resp.StatusCode != 200 || resp.Body.Usage.CompletionTokens != 16 || resp.Body.Choices[0].Message.Content == "" {
			t.Fatalf("line %d: %s %s", i, id, l["response"])
		}
	}

	// A restart: the files and the batch persist.
	srv.Close()
	a.Close()
	_, srv2 := startServer(t, cfg, false)
	client = sdk(srv2.URL)
	again, err := client.Batches.Get(context.Background(), b.ID)
	if err != nil || again.Status != openai.BatchStatusCompleted || again.OutputFileID != b.OutputFileID || again.RequestCounts.Completed != 5 {
		t.Fatalf("the batch after a restart: %v, %v", again, err)
	}
	if raw2, _ := outputLines(t, client, b.OutputFileID); !bytes.Equal(raw, raw2) {
		t.Fatal("the output file changed across the restart")
	}
	if in, err := client.Files.Get(context.Background(), b.InputFileID); err != nil || in.Purpose != "batch" {
		t.Fatalf("the input file after a restart: %v, %v", in, err)
	}
}

// TestBatchSurvivesKill9: a real server process (this binary's CLI) is killed with SIGKILL in
// the middle of a 20-line batch. After a restart on the same data folder the batch resumes and
// completes: 20 results, each custom_id exactly once, the counts right.
func TestBatchSurvivesKill9(t *testing.T) {
	dataDir := t.TempDir()
	model := modelID(testModel)
	cmd := exec.Command(os.Args[0], "serve", "--data-dir", dataDir, "--port", "0", "--ctx", "512", "--parallel", "1", testModel)
	cmd.Env = append(os.Environ(), cliEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	addr := make(chan string, 1)
	var log bytes.Buffer
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		serving := regexp.MustCompile(`on (http://\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if m := serving.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	var url string
	select {
	case url = <-addr:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the server never said where it listens")
	}
	client := sdk(url)
	// One lane, one line at a time, 400 tokens each: long enough to be killed halfway.
	b := createBatch(t, client, batchInput(model, 20, 400))
	mid := waitBatch(t, client, b.ID, "half the lines to finish", func(b *openai.Batch) bool {
		return b.RequestCounts.Completed >= 10 || batchEnded(b)
	})
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-logged // stderr ends with the process (its worker dies with it)
	cmd.Wait()
	if batchEnded(mid) || mid.RequestCounts.Completed >= 20 {
		t.Fatalf("the batch ended before the kill (%s); make its lines longer", mid.RawJSON())
	}
	t.Logf("killed with %d of 20 lines done", mid.RequestCounts.Completed)

	cfg := testConfig(t, testModel)
	cfg.DataDir = dataDir
	cfg.Parallel = 1
	_, srv := startServer(t, cfg, false)
	client = sdk(srv.URL)
	done := waitBatch(t, client, b.ID, "the resumed batch to end", batchEnded)
	if done.Status != openai.BatchStatusCompleted || done.RequestCounts.Total != 20 || done.RequestCounts.Completed != 20 || done.RequestCounts.Failed != 0 ||
		done.Usage.OutputTokens != 20*400 || done.ErrorFileID != "" {
		t.Fatalf("after the restart: %s", done.RawJSON())
	}
	_, lines := outputLines(t, client, done.OutputFileID)
	ids := customIDs(lines)
	want := make([]string, 20)
	for i := range want {
		want[i] = fmt.Sprintf("line-%02d", i)
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("output custom ids %v, want each of the 20 once, in order", ids)
	}
	// Nothing stray in the files folder: the input and the output only.
	entries, _ := os.ReadDir(filepath.Join(dataDir, "files"))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	wantNames := []string{done.InputFileID, done.OutputFileID}
	slices.Sort(wantNames)
	if !slices.Equal(names, wantNames) {
		t.Fatalf("the files folder holds %v, want %v", names, wantNames)
	}
	if strings.Contains(log.String(), "panic") {
		t.Fatalf("the killed server logged a panic:\n%s", log.String())
	}
}
