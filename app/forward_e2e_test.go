package app

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	ollama "github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"

	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/auth"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/forward"
)

// startServeProcess runs `superfluid serve` (this test binary's CLI) on model in a process of
// its own and returns its base URL once it listens; the process is killed when the test ends.
func startServeProcess(t *testing.T, model string, args ...string) string {
	t.Helper()
	argv := append([]string{"serve", "--data-dir", t.TempDir(), "--port", "0"}, args...)
	cmd := exec.Command(os.Args[0], append(argv, model)...)
	cmd.Env = append(os.Environ(), cliEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		serving := regexp.MustCompile(`on (http://\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := serving.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case u := <-addr:
		return u
	case <-time.After(2 * time.Minute):
		t.Fatal("the second superfluid never said where it listens")
		return ""
	}
}

// TestForwardToSecondSuperfluid: a model made by forward.NewModel, served by the router and
// core on a first server, forwards to a second superfluid: a separate `superfluid serve`
// process on the test model. The official OpenAI, Anthropic and Ollama clients talk to the
// first, streaming and not, a forced tool call included; usage comes back from the upstream.
func TestForwardToSecondSuperfluid(t *testing.T) {
	upstreamURL := startServeProcess(t, testModel, "--ctx", "2048", "--parallel", "2")
	served := modelID(testModel)
	ctx := context.Background()
	m, err := forward.NewModel(ctx, "forwarded", forward.Config{URL: upstreamURL, Model: served, Instance: "sf-front"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("upstream %s serves %s; window %d", upstreamURL, served, m.Engine.Info().ContextLength)
	front := httptest.NewServer(server.New(server.Config{InstanceID: "sf-front"}, core.New(core.Config{}, nil, m)))
	t.Cleanup(front.Close)
	client := sdk(front.URL)

	t.Run("openai", func(t *testing.T) {
		params := openai.ChatCompletionNewParams{Model: "forwarded", MaxTokens: openai.Int(16), Temperature: openai.Float(0),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Once upon a time")}}
		res, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if res.Choices[0].Message.Content == "" || res.Usage.PromptTokens == 0 || res.Usage.CompletionTokens == 0 {
			t.Errorf("reply %q, usage %+v", res.Choices[0].Message.Content, res.Usage)
		}
		stream := client.Chat.Completions.NewStreaming(ctx, params)
		var acc openai.ChatCompletionAccumulator
		chunks := 0
		for stream.Next() {
			acc.AddChunk(stream.Current())
			chunks++
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if acc.Choices[0].Message.Content != res.Choices[0].Message.Content || acc.Usage.CompletionTokens != res.Usage.CompletionTokens || chunks < 2 {
			// (How many text chunks arrive depends on timing: a busy upstream's events may
			// coalesce. That each upstream event is relayed as it arrives is server/forward's
			// TestRelayAsTheyArrive, on an upstream the test paces.)
			t.Errorf("streamed %q in %d chunks (usage %+v), whole %q (usage %+v)", acc.Choices[0].Message.Content, chunks, acc.Usage,
				res.Choices[0].Message.Content, res.Usage)
		}

		tools := openai.ChatCompletionNewParams{Model: "forwarded", MaxTokens: openai.Int(60), Temperature: openai.Float(0), Seed: openai.Int(7),
			Tools: []openai.ChatCompletionToolUnionParam{cityTool}, ParallelToolCalls: openai.Bool(false),
			ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")},
			Messages:   []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the weather in Oslo?")}}
		call, err := client.Chat.Completions.New(ctx, tools)
		if err != nil {
			t.Fatal(err)
		}
		c := call.Choices[0]
		if c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].Function.Name != "get_weather" {
			t.Fatalf("finish %q, calls %+v", c.FinishReason, c.Message.ToolCalls)
		}
		city := cityArgs(t, c.Message.ToolCalls[0].Function.Arguments)
		ts := client.Chat.Completions.NewStreaming(ctx, tools)
		var tacc openai.ChatCompletionAccumulator
		for ts.Next() {
			tacc.AddChunk(ts.Current())
		}
		if err := ts.Err(); err != nil {
			t.Fatal(err)
		}
		if sc := tacc.Choices[0]; sc.FinishReason != "tool_calls" || len(sc.Message.ToolCalls) != 1 || cityArgs(t, sc.Message.ToolCalls[0].Function.Arguments) != city {
			t.Errorf("streamed call %+v, non-streamed city %q", sc.Message.ToolCalls, city)
		}
		if tacc.Usage.PromptTokens == 0 || tacc.Usage.PromptTokens != call.Usage.PromptTokens {
			t.Errorf("streamed usage %+v, whole %+v", tacc.Usage, call.Usage)
		}
	})

	t.Run("anthropic", func(t *testing.T) {
		an := anthropic.NewClient(aoption.WithBaseURL(front.URL), aoption.WithAPIKey("x"), aoption.WithMaxRetries(0))
		params := anthropic.MessageNewParams{Model: "forwarded", MaxTokens: 200,
			Tools:      []anthropic.ToolUnionParam{weatherToolAnthropic},
			ToolChoice: anthropic.ToolChoiceUnionParam{OfTool: &anthropic.ToolChoiceToolParam{Name: "get_weather", DisableParallelToolUse: anthropic.Bool(true)}},
			Messages:   []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("What is the weather in Oslo?"))}}
		msg, err := an.Messages.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if msg.StopReason != anthropic.StopReasonToolUse || msg.Usage.InputTokens == 0 || msg.Usage.OutputTokens == 0 {
			t.Errorf("stop %q, usage %+v, content %+v", msg.StopReason, msg.Usage, msg.Content)
		}
		s := an.Messages.NewStreaming(ctx, params)
		var acc anthropic.Message
		for s.Next() {
			if err := acc.Accumulate(s.Current()); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		// No temperature in Anthropic's params: the two replies are sampled apart.
		if acc.StopReason != anthropic.StopReasonToolUse || acc.Usage.OutputTokens == 0 || acc.Usage.InputTokens+acc.Usage.CacheReadInputTokens == 0 {
			t.Errorf("streamed stop %q, output tokens %d, input %d+%d", acc.StopReason, acc.Usage.OutputTokens, acc.Usage.InputTokens, acc.Usage.CacheReadInputTokens)
		}
		var calls int
		for _, b := range acc.Content {
			if b.Type == "tool_use" && b.Name == "get_weather" && strings.Contains(string(b.Input), "city") {
				calls++
			}
		}
		if calls != 1 {
			t.Errorf("streamed content %+v", acc.Content)
		}
	})

	t.Run("ollama", func(t *testing.T) {
		u, _ := url.Parse(front.URL)
		ol := ollama.NewClient(u, http.DefaultClient)
		for _, stream := range []bool{false, true} {
			var text strings.Builder
			var last ollama.ChatResponse
			err := ol.Chat(ctx, &ollama.ChatRequest{Model: "forwarded", Stream: &stream, Options: map[string]any{"num_predict": 12, "temperature": 0},
				Messages: []ollama.Message{{Role: "user", Content: "Once upon a time"}}}, func(r ollama.ChatResponse) error {
				text.WriteString(r.Message.Content)
				last = r
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if text.Len() == 0 || !last.Done || last.PromptEvalCount == 0 || last.EvalCount == 0 {
				t.Errorf("stream %v: %q, last %+v", stream, text.String(), last.Metrics)
			}
		}
	})
}

// TestOpenAILaneE2E: serve --team with an openai lane (added through the admin API) forwarding
// to a second superfluid process under the served model's name: the lane serves, a streamed
// chat comes back with usage under the lane's model name. A lane pointed at the server itself
// never serves: its error says it is this server (a forwarding loop).
func TestOpenAILaneE2E(t *testing.T) {
	upstreamURL := startServeProcess(t, testModel, "--ctx", "1024", "--parallel", "2")
	cfg := testConfig(t, testModel)
	cfg.Team = true
	a, srv := startServer(t, cfg, false)
	// Team mode takes keys only: one for its first admin.
	key, _, err := a.Keys().Create(context.Background(), auth.NewKey{Name: "admin-key", Person: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path, body string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	lane := func(name string) map[string]any {
		t.Helper()
		_, b := do("GET", "/v1/admin/lanes", "")
		var v struct{ Data []map[string]any }
		_ = json.Unmarshal(b, &v)
		for _, l := range v.Data {
			if l["name"] == name {
				return l
			}
		}
		t.Fatalf("no lane %s in %s", name, b)
		return nil
	}
	add := func(body string) {
		t.Helper()
		if code, b := do("POST", "/v1/admin/lanes", body); code != 201 {
			t.Fatalf("add lane: %d %s", code, b)
		}
	}
	add(`{"name": "up", "engine": "openai", "model": "remote-stories", "url": "` + upstreamURL + `/v1", "served_model": "` + modelID(testModel) + `"}`)
	add(`{"name": "self", "engine": "openai", "model": "myself", "url": "` + srv.URL + `", "served_model": "x"}`)
	deadline := time.Now().Add(time.Minute)
	for lane("up")["state"] != "serving" {
		if time.Now().After(deadline) {
			t.Fatalf("the openai lane did not serve: %v", lane("up"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	client := keyClient(srv.URL, key)
	stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "remote-stories",
		MaxTokens: openai.Int(12), Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Once upon a time")}})
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.Choices[0].Message.Content == "" || acc.Usage.CompletionTokens == 0 || acc.Usage.PromptTokens == 0 || acc.Model != "remote-stories" {
		t.Errorf("streamed %q as %q, usage %+v", acc.Choices[0].Message.Content, acc.Model, acc.Usage)
	}
	for deadline = time.Now().Add(30 * time.Second); !strings.Contains(fmt.Sprint(lane("self")["error"]), "this server itself"); {
		if time.Now().After(deadline) {
			t.Fatalf("the lane pointed at this server: %v", lane("self"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if l := lane("self"); l["state"] == "serving" {
		t.Errorf("a lane forwarding to its own server serves: %v", l)
	}
}
