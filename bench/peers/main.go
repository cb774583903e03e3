// Command peers runs one client workload against the pinned Ollama (built by `make peers`) and
// against superfluid, one server at a time on the same GGUF, and prints one table for both:
// single-stream decode, 8 concurrent streams, an edit workload (superfluid with n-gram
// speculation, and without), and the time to the first token of a long prompt sent again after
// a server restart vs cold. Both servers are driven through the same route, Ollama's /api/chat
// (which superfluid serves too), and timed at the client.
//
//	go run ./bench/peers --model /tmp/tinyllama.gguf --superfluid bin/superfluid --ollama "$SUPERFLUID_OLLAMA"
//
// It starts and stops only the processes it starts (each in a process group of its own).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

type config struct {
	model, superfluid, ollama string
	repeat, decode, streams   int
	editTokens, prefixTokens  int
	ctx, threads              int
}

func main() {
	var c config
	flag.StringVar(&c.model, "model", "", "the .gguf both servers serve")
	flag.StringVar(&c.superfluid, "superfluid", "bin/superfluid", "the superfluid binary")
	flag.StringVar(&c.ollama, "ollama", os.Getenv("SUPERFLUID_OLLAMA"), "the Ollama binary (make peers builds it)")
	flag.IntVar(&c.repeat, "repeat", 3, "runs of each measurement (medians)")
	flag.IntVar(&c.decode, "decode", 128, "tokens generated per reply")
	flag.IntVar(&c.streams, "streams", 8, "concurrent streams of the throughput row (and the servers' lanes)")
	flag.IntVar(&c.editTokens, "edit-tokens", 1000, "about how many tokens the edit workload's input has")
	flag.IntVar(&c.prefixTokens, "prefix-tokens", 2000, "about how many tokens the restarted prompt has")
	flag.IntVar(&c.ctx, "ctx", 4096, "context window per lane")
	flag.IntVar(&c.threads, "threads", 0, "CPU threads (0: each server's own choice)")
	only := flag.String("only", "", "run one server only (ollama or superfluid); the table shows 0 for the other")
	flag.Parse()
	if c.model == "" || c.ollama == "" {
		fmt.Fprintln(os.Stderr, "peers: --model and --ollama (or SUPERFLUID_OLLAMA) are required")
		os.Exit(2)
	}
	// The servers run in folders of their own.
	for _, p := range []*string{&c.model, &c.superfluid, &c.ollama} {
		if abs, err := filepath.Abs(*p); err == nil {
			*p = abs
		}
	}
	results := []result{{name: "ollama"}, {name: "superfluid"}}
	// Interrupted, stop the server that runs (its whole process group) before exiting.
	var running server
	var mu sync.Mutex
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-signals
		mu.Lock()
		if running != nil {
			running.stop()
		}
		os.Exit(130)
	}()
	for i, s := range []server{&ollama{c: c}, &superfluid{c: c}} {
		if *only != "" && *only != s.name() {
			continue
		}
		mu.Lock()
		running = s
		mu.Unlock()
		fmt.Fprintf(os.Stderr, "peers: %s ...\n", s.name())
		r, err := measure(s, c)
		s.stop()
		if err != nil {
			fmt.Fprintf(os.Stderr, "peers: %s: %v (its folder %s is kept)\n", s.name(), err, s.folder())
			os.Exit(1)
		}
		os.RemoveAll(s.folder())
		results[i] = r
	}
	printTable(os.Stdout, c, results[0], results[1])
}

// server is one peer: started on a fresh folder, restarted on the same one.
type server interface {
	name() string
	start() error
	stop()
	url() string
	model() string
	// extra is what the edit workload's request adds (superfluid: speculative).
	extra(speculate bool) map[string]any
	// folder is where it keeps its data and log (removed at the end).
	folder() string
}

type result struct {
	name                            string
	single, aggregate, edit, editNo []float64
	cold, restarted                 []float64 // TTFT in ms
	cachedAfter                     []int
}

func measure(s server, c config) (result, error) {
	r := result{name: s.name()}
	if err := s.start(); err != nil {
		return r, err
	}
	// Load the model before anything is timed.
	if _, err := chat(s, "Hello.", 4, nil); err != nil {
		return r, fmt.Errorf("warm-up: %w", err)
	}
	for run := range c.repeat {
		t, err := chat(s, fmt.Sprintf("%d. Tell me a long story about a dog.", run), c.decode, nil)
		if err != nil {
			return r, err
		}
		r.single = append(r.single, t.decodeRate())
	}
	for run := range c.repeat {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var tokens int
		var firstErr error
		start := time.Now()
		for i := range c.streams {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t, err := chat(s, fmt.Sprintf("%d.%d. Tell me a story about a cat.", run, i), c.decode, nil)
				mu.Lock()
				defer mu.Unlock()
				tokens += t.evalCount
				if err != nil && firstErr == nil {
					firstErr = err
				}
			}()
		}
		wg.Wait()
		if firstErr != nil {
			return r, firstErr
		}
		r.aggregate = append(r.aggregate, float64(tokens)/time.Since(start).Seconds())
	}
	edit := "Rewrite the text below exactly as it is, but write \"cat\" for every \"dog\".\n\n" + story(c.editTokens, 0)
	for range c.repeat {
		for _, speculate := range []bool{false, true} {
			t, err := chat(s, edit, c.decode, s.extra(speculate))
			if err != nil {
				return r, err
			}
			if speculate {
				r.edit = append(r.edit, t.decodeRate())
			} else {
				r.editNo = append(r.editNo, t.decodeRate())
			}
		}
	}
	for run := range c.repeat {
		prompt := story(c.prefixTokens, 100+run)
		t, err := chat(s, prompt, 4, nil)
		if err != nil {
			return r, err
		}
		r.cold = append(r.cold, ms(t.ttft))
		s.stop()
		if err := s.start(); err != nil {
			return r, fmt.Errorf("restart: %w", err)
		}
		if _, err := chat(s, "Hello.", 4, nil); err != nil {
			return r, fmt.Errorf("warm-up after restart: %w", err)
		}
		if t, err = chat(s, prompt, 4, nil); err != nil {
			return r, err
		}
		r.restarted = append(r.restarted, ms(t.ttft))
		r.cachedAfter = append(r.cachedAfter, t.promptEvalCount)
	}
	return r, nil
}

// story is about n tokens of sentences (about 8 tokens each), distinct per seed.
func story(n, seed int) string {
	sentences := []string{"The little dog ran to the park.", "A girl found a red ball in the sun.", "They played until the sky was dark.",
		"Mom called them home for soup.", "The dog watched the cat from the old tree."}
	var b strings.Builder
	fmt.Fprintf(&b, "Part %d. ", seed)
	for i := range n / 8 {
		b.WriteString(sentences[(i+seed)%len(sentences)] + " ")
	}
	return b.String()
}

// timing is one streamed /api/chat reply timed at the client.
type timing struct {
	ttft, decode    time.Duration // to the first text; from the first text to the last
	evalCount       int
	promptEvalCount int // prompt tokens the server evaluated (not served from its cache)
}

func (t timing) decodeRate() float64 {
	if t.evalCount < 2 || t.decode <= 0 {
		return 0
	}
	return float64(t.evalCount-1) / t.decode.Seconds()
}

func chat(s server, prompt string, tokens int, extra map[string]any) (timing, error) {
	body := map[string]any{
		"model": s.model(), "stream": true,
		"messages": []map[string]string{{"role": "user", "content": prompt}},
		"options":  map[string]any{"num_predict": tokens, "temperature": 0, "seed": 1},
	}
	for k, v := range extra {
		body[k] = v
	}
	data, _ := json.Marshal(body)
	start := time.Now()
	res, err := http.Post(s.url()+"/api/chat", "application/json", bytes.NewReader(data))
	if err != nil {
		return timing{}, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(res.Body)
		return timing{}, fmt.Errorf("/api/chat: status %d: %s", res.StatusCode, msg)
	}
	var t timing
	var first, last time.Time
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		now := time.Now()
		var line struct {
			Message         struct{ Content string }
			Done            bool
			Error           string
			EvalCount       int `json:"eval_count"`
			PromptEvalCount int `json:"prompt_eval_count"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return t, fmt.Errorf("/api/chat line %q: %w", sc.Text(), err)
		}
		if line.Error != "" {
			return t, errors.New(line.Error)
		}
		if line.Message.Content != "" {
			if first.IsZero() {
				first = now
			}
			last = now
		}
		if line.Done {
			if first.IsZero() {
				first, last = now, now
			}
			t.ttft, t.decode, t.evalCount, t.promptEvalCount = first.Sub(start), last.Sub(first), line.EvalCount, line.PromptEvalCount
			return t, nil
		}
	}
	return t, fmt.Errorf("/api/chat: the stream ended without its last line (%v)", sc.Err())
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func printTable(w io.Writer, c config, o, s result) {
	fmt.Fprintf(w, "model %s; %d runs each (medians), %d tokens per reply, %d streams, one server at a time\n", c.model, c.repeat, c.decode, c.streams)
	fmt.Fprintf(w, "%-52s %12s %12s %10s\n", "", "ollama", "superfluid", "sf/ollama")
	row := func(name string, a, b float64) {
		ratio := "-"
		if a > 0 {
			ratio = fmt.Sprintf("%.2fx", b/a)
		}
		fmt.Fprintf(w, "%-52s %12.1f %12.1f %10s\n", name, a, b, ratio)
	}
	row("single-stream decode, tok/s", median(o.single), median(s.single))
	row(fmt.Sprintf("%d streams, aggregate tok/s", c.streams), median(o.aggregate), median(s.aggregate))
	row(fmt.Sprintf("edit workload (~%d-token input) decode, tok/s", c.editTokens), median(o.editNo), median(s.edit))
	fmt.Fprintf(w, "    superfluid with speculative \"ngram\"; without it %.1f tok/s (n-gram/off %.2fx)\n", median(s.editNo), median(s.edit)/max(median(s.editNo), 1e-9))
	row(fmt.Sprintf("TTFT of a ~%d-token prompt, cold, ms", c.prefixTokens), median(o.cold), median(s.cold))
	row("TTFT of the same prompt after a restart, ms", median(o.restarted), median(s.restarted))
	fmt.Fprintf(w, "    after/cold: ollama %.2fx, superfluid %.2fx; prompt tokens evaluated after the restart: ollama %v, superfluid %v\n",
		median(o.restarted)/max(median(o.cold), 1e-9), median(s.restarted)/max(median(s.cold), 1e-9), o.cachedAfter, s.cachedAfter)
}
