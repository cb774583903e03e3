package app

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
)

// post sends a JSON body and returns status, headers and body.
func post(t *testing.T, url, body string) (int, http.Header, []byte) {
	t.Helper()
	res, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, b
}

func chatJSON(model, content string, extra string) string {
	c, _ := json.Marshal(content)
	return fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%s}]%s}`, model, c, extra)
}

type slotsEntry struct {
	Lanes []struct {
		State string `json:"state"`
	} `json:"lanes"`
	Queued   int `json:"queued"`
	Inflight int `json:"inflight"`
	Totals   struct {
		PrefillComputed int `json:"prefill_computed"`
		PromptTokens    int `json:"prompt_tokens"`
		Decoded         int `json:"decoded"`
	} `json:"totals"`
}

func slots(t *testing.T, url string) slotsEntry {
	t.Helper()
	res, err := http.Get(url + "/slots")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var entries []slotsEntry
	if err := json.NewDecoder(res.Body).Decode(&entries); err != nil || len(entries) != 1 {
		t.Fatalf("/slots: %v (%d entries)", err, len(entries))
	}
	return entries[0]
}

// TestQueueOverflow: past lanes + queue the answer is 429 with Retry-After, and the admitted
// streams finish untouched. The model is one the test writes, big enough that a 300-token
// generation takes a moment on any machine, so two requests are seen in flight.
func TestQueueOverflow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slow.gguf")
	if err := gguftest.WriteTinyLlama(path, gguftest.TinyLlamaOptions{Embd: 512, Layers: 4, Heads: 8, KVHeads: 8, FF: 1536, Q8: true}); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, path)
	cfg.Parallel, cfg.Queue = 1, 1
	_, srv := startServer(t, cfg, true)
	const long = 300
	body := chatJSON("slow", "Once upon a time", fmt.Sprintf(`,"max_tokens":%d,"ignore_eos":true,"stream":true`, long))
	var wg sync.WaitGroup
	tokens := make([]int, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			defer res.Body.Close()
			tokens[i] = streamedTokens(t, res.Body)
		}()
	}
	deadline := time.Now().Add(time.Minute)
	for s := slots(t, srv.URL); s.Inflight != 2; s = slots(t, srv.URL) {
		if time.Now().After(deadline) {
			t.Fatalf("never saw two requests in flight: %+v", s)
		}
		time.Sleep(2 * time.Millisecond)
	}
	status, h, b := post(t, srv.URL+"/v1/chat/completions", chatJSON("slow", "hi", `,"max_tokens":2`))
	if status != 429 || h.Get("Retry-After") == "" || !strings.Contains(string(b), `"code":"concurrency_limit_exceeded"`) {
		t.Fatalf("third request: %d Retry-After %q %s", status, h.Get("Retry-After"), b)
	}
	wg.Wait()
	for i, n := range tokens {
		if n != long {
			t.Fatalf("admitted stream %d produced %d tokens, want %d", i, n, long)
		}
	}
}

// streamedTokens reads an SSE chat stream to its end and returns the final completion_tokens.
func streamedTokens(t *testing.T, r io.Reader) int {
	sc := bufio.NewScanner(r)
	n := -1
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var ch struct {
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
			Error any `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &ch); err != nil || ch.Error != nil {
			t.Errorf("frame %s: %v", line, err)
			return -1
		}
		if ch.Usage != nil {
			n = ch.Usage.CompletionTokens
		}
	}
	return n
}

// TestManyClientsHalfDisconnect: 64 streaming clients, half of which hang up mid-stream on a
// request that would run thousands of tokens. The hang-ups stop their generations: the engine
// decodes far fewer tokens than they asked for, and each is recorded as a client disconnect.
// Every lane ends idle, with no goroutines left behind.
func TestManyClientsHalfDisconnect(t *testing.T) {
	cfg := testConfig(t, testModel)
	cfg.Parallel, cfg.Queue, cfg.ContextLength = 4, 64, 4096
	a, srv := startServer(t, cfg, true)
	model := modelID(testModel)
	const clients, finished, abandoned = 64, 120, 4000 // tokens asked by the clients that stay and those that hang up
	baseline := runtime.NumGoroutine()
	before := slots(t, srv.URL).Totals.Decoded
	ids := make([]string, clients) // the request id of each client that hangs up
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			tokens := finished
			if i%2 == 1 {
				tokens = abandoned
			}
			body := chatJSON(model, fmt.Sprintf("%d Once upon a time", i), fmt.Sprintf(`,"max_tokens":%d,"ignore_eos":true,"stream":true`, tokens))
			req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/chat/completions", strings.NewReader(body))
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer res.Body.Close()
			if res.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(res.Body)
				t.Errorf("client %d: status %d %s", i, res.StatusCode, b)
				return
			}
			if i%2 == 1 {
				sc := bufio.NewScanner(res.Body)
				for frames := 0; frames < 3 && sc.Scan(); {
					line, ok := strings.CutPrefix(sc.Text(), "data: ")
					if !ok {
						continue
					}
					if frames == 0 {
						var ch struct{ ID string }
						json.Unmarshal([]byte(line), &ch)
						ids[i] = ch.ID
					}
					frames++
				}
				cancel() // hang up mid-stream
				return
			}
			if n := streamedTokens(t, res.Body); n != finished {
				t.Errorf("client %d got %d tokens", i, n)
			}
		}()
	}
	wg.Wait()
	http.DefaultClient.CloseIdleConnections()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := slots(t, srv.URL)
		idle := s.Queued == 0
		for _, l := range s.Lanes {
			idle = idle && l.State == "idle"
		}
		grown := runtime.NumGoroutine() - baseline
		if idle && grown <= 5 { // a leak per request would be dozens; idle HTTP plumbing is a few
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lanes %+v queued %d, goroutines +%d after all clients left", s.Lanes, s.Queued, grown)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Run to their end, the abandoned requests alone would decode clients/2 × 4,000 tokens. Each
	// stops a few tokens after its hang-up; allow half of what they asked, far more than that.
	decoded := slots(t, srv.URL).Totals.Decoded - before
	if limit := clients/2*finished + clients/2*abandoned/2; decoded > limit {
		t.Fatalf("the engine decoded %d tokens, more than %d: the hang-ups did not stop their generations", decoded, limit)
	}
	if err := a.Store().Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if i%2 == 0 {
			continue
		}
		rec, err := a.Store().Request(context.Background(), id)
		if err != nil {
			t.Fatalf("client %d (request %q): %v", i, id, err)
		}
		if !rec.ClientDisconnected || rec.Status != 499 || rec.CompletionTokens >= abandoned {
			t.Errorf("client %d hung up; its record: disconnected %v, status %d, %d completion tokens", i, rec.ClientDisconnected, rec.Status, rec.CompletionTokens)
		}
	}
	t.Logf("decoded %d tokens for %d finished requests of %d tokens and %d abandoned ones of %d", decoded, clients/2, finished, clients/2, abandoned)
}

// TestContextEdges: a prompt that fills the window exactly is answered with zero tokens and
// "length"; one token more is context_length_exceeded.
func TestContextEdges(t *testing.T) {
	cfg := testConfig(t, testModel)
	_, srv := startServer(t, cfg, true)
	model := modelID(testModel)
	text := "Once"
	count := func(s string) int {
		status, _, b := post(t, srv.URL+"/v1/tokenize", fmt.Sprintf(`{"model":%q,"input":%q,"add_special":true}`, model, s))
		var out struct{ Count int }
		if err := json.Unmarshal(b, &out); status != http.StatusOK || err != nil {
			t.Fatalf("tokenize: %d %s", status, b) // a failing count would otherwise grow the text forever
		}
		return out.Count
	}
	for count(text) < cfg.ContextLength {
		next := text + " a"
		if count(next) > cfg.ContextLength {
			next = text + "."
		}
		if count(next) > cfg.ContextLength {
			t.Fatalf("cannot build a prompt of exactly %d tokens", cfg.ContextLength)
		}
		text = next
	}
	status, _, b := post(t, srv.URL+"/v1/chat/completions", chatJSON(model, text, ""))
	var reply struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	json.Unmarshal(b, &reply)
	if status != 200 || reply.Choices[0].FinishReason != "length" || reply.Usage.CompletionTokens != 0 || reply.Usage.PromptTokens != cfg.ContextLength {
		t.Fatalf("exactly full: %d %s", status, b)
	}
	status, _, b = post(t, srv.URL+"/v1/chat/completions", chatJSON(model, text+" and more", ""))
	if status != 400 || !strings.Contains(string(b), "context_length_exceeded") {
		t.Fatalf("over by some: %d %s", status, b)
	}
}

// TestMoreChoicesThanLanes: n above the lane count runs in turns with correct indices.
func TestMoreChoicesThanLanes(t *testing.T) {
	cfg := testConfig(t, testModel)
	cfg.Parallel = 2
	_, srv := startServer(t, cfg, true)
	reply, err := sdk(srv.URL).Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: modelID(testModel), Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Once upon a time")},
		MaxTokens: openai.Int(12), N: openai.Int(5), Seed: openai.Int(3),
	}, option.WithJSONSet("ignore_eos", true))
	if err != nil {
		t.Fatal(err)
	}
	if len(reply.Choices) != 5 || reply.Usage.CompletionTokens != 60 {
		t.Fatalf("%d choices, %d completion tokens", len(reply.Choices), reply.Usage.CompletionTokens)
	}
	for i, c := range reply.Choices {
		if int(c.Index) != i || c.FinishReason != "length" || c.Message.Content == "" {
			t.Fatalf("choice %d: %+v", i, c)
		}
	}
}

// TestWarmAcrossEndpoints: a chat whose prompt renders to plain text, then the same text as a
// raw completion, share the prefix cache; the header and the request record agree.
func TestWarmAcrossEndpoints(t *testing.T) {
	a, srv := startServer(t, testConfig(t, testModel), true)
	model := modelID(testModel)
	story := "Once upon a time, there was a little girl who loved to play in the garden with her dog"
	if status, _, b := post(t, srv.URL+"/v1/chat/completions", chatJSON(model, story, `,"max_tokens":4`)); status != 200 {
		t.Fatalf("chat: %d %s", status, b)
	}
	status, h, b := post(t, srv.URL+"/v1/completions", fmt.Sprintf(`{"model":%q,"prompt":%q,"max_tokens":4,"temperature":0.3}`, model, story))
	if status != 200 {
		t.Fatalf("completion: %d %s", status, b)
	}
	var reply struct {
		ID    string `json:"id"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
			Details      struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	json.Unmarshal(b, &reply)
	cached := reply.Usage.Details.CachedTokens
	if cached != reply.Usage.PromptTokens-1 || h.Get("x-superfluid-warm") != strconv.Itoa(cached) {
		t.Fatalf("cached %d of %d, header %q", cached, reply.Usage.PromptTokens, h.Get("x-superfluid-warm"))
	}
	if err := a.Store().Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec, err := a.Store().Request(context.Background(), reply.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.CachedTokens != cached || rec.Endpoint != "/v1/completions" || rec.Lane < 0 || rec.Lane >= cfgLanes(a) || rec.Prefill <= 0 {
		t.Fatalf("record %+v", rec)
	}
	status, _, b = post(t, srv.URL+"/v1/completions", fmt.Sprintf(`{"model":%q,"prompt":"def f(","suffix":")"}`, model))
	if status != 400 || !strings.Contains(string(b), `"code":"fim_unsupported"`) {
		t.Fatalf("FIM on a model without FIM tokens: %d %s", status, b)
	}
}

func cfgLanes(a *App) int { return a.cfg.Parallel }
