package app

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

func sdk(srv string) *openai.Client {
	c := openai.NewClient(option.WithBaseURL(srv+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	return &c
}

func storyParams(maxTokens int64) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:       "stories260K",
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Once upon a time, there was a little dog")},
		MaxTokens:   openai.Int(maxTokens),
		Temperature: openai.Float(0),
	}
}

// TestChatEndToEnd drives the real server, worker process and llama.cpp with the OpenAI SDK.
func TestChatEndToEnd(t *testing.T) {
	cfg := testConfig(t, testModel)
	_, srv := startServer(t, cfg, true)
	client := sdk(srv.URL)
	ctx := context.Background()
	params := storyParams(24)
	params.Model = modelID(testModel)

	var resp *http.Response
	first, err := client.Chat.Completions.New(ctx, params, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	if len(first.Choices) != 1 || first.Choices[0].Message.Content == "" {
		t.Fatalf("no content: %+v", first.Choices)
	}
	if fr := first.Choices[0].FinishReason; fr != "stop" && fr != "length" {
		t.Fatalf("finish_reason %q", fr)
	}
	if first.Usage.CompletionTokens < 1 || first.Usage.CompletionTokens > 24 || first.Usage.PromptTokens < 5 {
		t.Fatalf("usage %+v", first.Usage)
	}
	if !strings.HasPrefix(first.ID, "chatcmpl-") || first.Object != "chat.completion" {
		t.Fatalf("id %q object %q", first.ID, first.Object)
	}
	if resp.Header.Get("x-superfluid-warm") == "" {
		t.Fatal("no x-superfluid-warm header")
	}

	// The same request again: greedy, so the same text, and the prompt comes from the cache.
	second, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatalf("second chat: %v", err)
	}
	if second.Choices[0].Message.Content != first.Choices[0].Message.Content {
		t.Fatalf("greedy replies differ:\n%q\n%q", first.Choices[0].Message.Content, second.Choices[0].Message.Content)
	}
	cached := second.Usage.PromptTokensDetails.CachedTokens
	if float64(cached) < 0.9*float64(second.Usage.PromptTokens) {
		t.Fatalf("second request cached %d of %d prompt tokens, want ≥ 90%%", cached, second.Usage.PromptTokens)
	}

	// Streaming: the accumulated text equals the non-streaming greedy reply.
	stream := client.Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	var chunks []string
	for stream.Next() {
		chunk := stream.Current()
		acc.AddChunk(chunk)
		chunks = append(chunks, chunk.RawJSON())
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if got := acc.Choices[0].Message.Content; got != first.Choices[0].Message.Content {
		t.Fatalf("streamed %q, want %q", got, first.Choices[0].Message.Content)
	}
	if !strings.Contains(chunks[0], `"role":"assistant"`) {
		t.Fatalf("first chunk %s lacks the assistant role", chunks[0])
	}
	last := chunks[len(chunks)-1]
	var terminal struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage *struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
		Superfluid *struct {
			Warm int `json:"warm"`
		} `json:"superfluid"`
	}
	if err := json.Unmarshal([]byte(last), &terminal); err != nil {
		t.Fatal(err)
	}
	if terminal.Choices[0].FinishReason == "" || terminal.Usage == nil || terminal.Superfluid == nil || terminal.Superfluid.Warm == 0 {
		t.Fatalf("terminal chunk %s", last)
	}
	if terminal.Usage.CompletionTokens != int(first.Usage.CompletionTokens) {
		t.Fatalf("streamed %d tokens, non-streamed %d", terminal.Usage.CompletionTokens, first.Usage.CompletionTokens)
	}
}

func modelID(path string) string {
	base := path[strings.LastIndex(path, "/")+1:]
	return strings.TrimSuffix(base, ".gguf")
}

// TestWorkerKilledMidStream: the request in flight fails cleanly, the server stays up and the
// next request runs on a fresh worker.
func TestWorkerKilledMidStream(t *testing.T) {
	cfg := testConfig(t, testModel)
	a, srv := startServer(t, cfg, true)
	client := sdk(srv.URL)
	ctx := context.Background()
	params := storyParams(400)
	params.Model = modelID(testModel)
	pid := a.Worker().PID()

	stream := client.Chat.Completions.NewStreaming(ctx, params, option.WithJSONSet("ignore_eos", true))
	killed := false
	for stream.Next() {
		if !killed && stream.Current().Choices[0].Delta.Content != "" {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	err := stream.Err()
	if !killed || err == nil {
		t.Fatalf("killed=%v, stream error %v; want an error frame", killed, err)
	}
	if !strings.Contains(err.Error(), "worker") {
		t.Fatalf("error %q does not say the worker failed", err)
	}

	reply, err := client.Chat.Completions.New(ctx, storyParamsFor(testModel, 8))
	if err != nil {
		t.Fatalf("request after the kill: %v", err)
	}
	if reply.Choices[0].Message.Content == "" {
		t.Fatal("empty reply after restart")
	}
	if newPID := a.Worker().PID(); newPID == pid || newPID == 0 {
		t.Fatalf("worker pid %d after restart, was %d", newPID, pid)
	}
}

func storyParamsFor(model string, maxTokens int64) openai.ChatCompletionNewParams {
	p := storyParams(maxTokens)
	p.Model = modelID(model)
	return p
}

// TestTruncatedModel: a truncated GGUF is refused before it is registered; one truncated
// behind the catalog's back is refused by the worker, the API says why with a 500, and the
// server keeps answering.
func TestTruncatedModel(t *testing.T) {
	data, err := os.ReadFile(testModel)
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/broken.gguf"
	if err := os.WriteFile(path, data[:len(data)*2/3], 0o644); err != nil {
		t.Fatal(err)
	}
	var ue *UsageError
	if _, err := New(testConfig(t, path)); !errors.As(err, &ue) || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("New with a truncated model: %v; want a usage error saying it is truncated", err)
	}

	a, srv := startServer(t, testConfig(t, ""), false)
	good := t.TempDir() + "/later.gguf"
	if err := os.WriteFile(good, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Manager().Catalog().AddLocal(context.Background(), good, ""); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(good, data[:len(data)*2/3], 0o644); err != nil {
		t.Fatal(err)
	}
	client := sdk(srv.URL)
	_, err = client.Chat.Completions.New(context.Background(), storyParamsFor(good, 4))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("want an API error, got %v", err)
	}
	if apiErr.StatusCode != 500 || !strings.Contains(apiErr.Message, "truncated") {
		t.Fatalf("status %d message %q; want 500 saying the file is truncated", apiErr.StatusCode, apiErr.Message)
	}
	res, err := http.Get(srv.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), "ok") {
		t.Fatalf("health %d %s", res.StatusCode, body)
	}
}

// TestRequestRecorded: each answered request has a row with its numbers.
func TestRequestRecorded(t *testing.T) {
	a, srv := startServer(t, testConfig(t, testModel), true)
	reply, err := sdk(srv.URL).Chat.Completions.New(context.Background(), storyParamsFor(testModel, 6))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Store().Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec, err := a.Store().Request(context.Background(), reply.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != 200 || rec.Endpoint != "/v1/chat/completions" || rec.Model != modelID(testModel) ||
		rec.PromptTokens != int(reply.Usage.PromptTokens) || rec.CompletionTokens != int(reply.Usage.CompletionTokens) ||
		rec.FinishReason != string(reply.Choices[0].FinishReason) || rec.Total <= 0 || rec.Total > time.Hour {
		t.Fatalf("record %+v does not match reply %+v", rec, reply.Usage)
	}
}

// TestWorkerExitsWithApp: the worker reads its stdin, a pipe the app holds; when that closes
// (the app died, even by SIGKILL) the worker exits on its own.
func TestWorkerExitsWithApp(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "--model", testModel, "--socket", filepath.Join(dir, "w.sock"), "--ctx", "256", "--parallel", "1", "--threads", "1")
	cmd.Env = append(os.Environ(), workerEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	hello, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.Contains(hello, `"info"`) {
		t.Fatalf("hello %q: %v", hello, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stdin.Close() // what the kernel does when the app dies
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("worker exited with %v", err)
		}
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatal("worker kept running after its app went away")
	}
}

// TestHugePromptRefusedUntokenized: a prompt of about 100 MiB is refused with the dialect's
// 400 for a prompt over the window before anything tokenizes it, in every dialect and on the
// routes that only count: the worker's memory (VmRSS, and its peak VmHWM) does not move.
// Tokenizing it would cost the worker over a gigabyte.
func TestHugePromptRefusedUntokenized(t *testing.T) {
	a, srv := startServer(t, testConfig(t, testModel), true)
	model := modelID(testModel)
	pid := a.Worker().PID()
	before := workerMemory(t, pid)
	huge := strings.Repeat("Once upon a time. ", (99<<20)/18) // plain ASCII: no JSON escapes
	large := huge[:4<<20]
	for _, c := range []struct {
		name, path, body, want string
	}{
		{"OpenAI chat", "/v1/chat/completions", `{"model":"` + model + `","max_tokens":1,"messages":[{"role":"user","content":"` + huge + `"}]}`, `"code":"context_length_exceeded"`},
		{"OpenAI completion", "/v1/completions", `{"model":"` + model + `","max_tokens":1,"prompt":"` + large + `"}`, `"code":"context_length_exceeded"`},
		{"OpenAI tokenize", "/v1/tokenize", `{"model":"` + model + `","input":"` + large + `"}`, `"code":"context_length_exceeded"`},
		{"Anthropic messages", "/v1/messages", `{"model":"` + model + `","max_tokens":1,"messages":[{"role":"user","content":"` + large + `"}]}`, `prompt is too long: `},
		{"Anthropic count_tokens", "/v1/messages/count_tokens", `{"model":"` + model + `","messages":[{"role":"user","content":"` + large + `"}]}`, `prompt is too long: `},
		{"Ollama chat", "/api/chat", `{"model":"` + model + `","stream":false,"messages":[{"role":"user","content":"` + large + `"}]}`, `but the context window is 512 tokens`},
		{"Ollama generate", "/api/generate", `{"model":"` + model + `","stream":false,"raw":true,"prompt":"` + large + `"}`, `but the context window is 512 tokens`},
		{"Ollama tokenize", "/api/tokenize", `{"model":"` + model + `","content":"` + large + `"}`, `but the context window is 512 tokens`},
	} {
		status, _, b := post(t, srv.URL+c.path, c.body)
		if status != http.StatusBadRequest || !strings.Contains(string(b), c.want) {
			t.Errorf("%s: %d %.300s; want 400 with %s", c.name, status, b, c.want)
		}
	}
	if now := a.Worker().PID(); now != pid {
		t.Fatalf("the worker was replaced (pid %d, was %d)", now, pid)
	}
	after := workerMemory(t, pid)
	const slack = 32 << 20
	if after.rss > before.rss+slack || after.peak > before.peak+slack {
		t.Fatalf("worker memory grew: VmRSS %d → %d MiB, VmHWM %d → %d MiB; the prompt was tokenized",
			before.rss>>20, after.rss>>20, before.peak>>20, after.peak>>20)
	}
}

type memory struct{ rss, peak int64 }

// workerMemory reads a process's resident memory and its peak from /proc/PID/status.
func workerMemory(t *testing.T, pid int) memory {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc on this system: %v", err)
	}
	var m memory
	for _, line := range strings.Split(string(data), "\n") {
		field, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var kb int64
		fmt.Sscanf(strings.TrimSpace(value), "%d kB", &kb)
		switch field {
		case "VmRSS":
			m.rss = kb << 10
		case "VmHWM":
			m.peak = kb << 10
		}
	}
	if m.rss == 0 || m.peak == 0 {
		t.Fatalf("/proc/%d/status has no VmRSS or VmHWM:\n%s", pid, data)
	}
	return m
}
