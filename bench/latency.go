package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// latency is one streamed reply timed at the HTTP client, next to the engine's own timings of
// it: where the server's time goes before the first token and after the last, outside what
// the engine measures.
type latency struct {
	// At the client: from sending the request to the first text, from the first text to the
	// last, from the last text to the end of the stream (the final line read), and in all.
	first, decode, tail, total time.Duration
	// The engine's own: the prefill that yields the first token, and the decode of the tokens
	// after it, up to the end of the reply (Ollama's prompt_eval_duration and eval_duration);
	// and the server's, from the request's arrival to its last line (total_duration).
	prefill, engineDecode, serverTotal time.Duration
	tokens                             int
}

// latencySample streams a chat reply of tokens tokens through Ollama's /api/chat, whose last
// line carries the engine's timings, and times it at the client.
func (b *apiClient) latencySample(prompt string, tokens int) (latency, error) {
	body, _ := json.Marshal(map[string]any{
		"model": b.model, "stream": true,
		"messages": []map[string]string{{"role": "user", "content": prompt}},
		"options":  map[string]any{"num_predict": tokens, "temperature": 0, "ignore_eos": true},
	})
	start := time.Now()
	res, err := http.Post(b.url+"/api/chat", "application/json", bytes.NewReader(body))
	if err != nil {
		return latency{}, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(res.Body)
		return latency{}, fmt.Errorf("/api/chat: status %d: %s", res.StatusCode, msg)
	}
	var first, last time.Time
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		now := time.Now()
		var line struct {
			Message struct{ Content string } `json:"message"`
			Done    bool                     `json:"done"`
			Error   string                   `json:"error"`
			// The engine's timings, on the last line, in nanoseconds.
			TotalDuration      time.Duration `json:"total_duration"`
			PromptEvalDuration time.Duration `json:"prompt_eval_duration"`
			EvalCount          int           `json:"eval_count"`
			EvalDuration       time.Duration `json:"eval_duration"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return latency{}, fmt.Errorf("/api/chat line %q: %w", sc.Text(), err)
		}
		if line.Error != "" {
			return latency{}, fmt.Errorf("/api/chat: %s", line.Error)
		}
		if line.Message.Content != "" {
			if first.IsZero() {
				first = now
			}
			last = now
		}
		if !line.Done {
			continue
		}
		if first.IsZero() {
			return latency{}, fmt.Errorf("/api/chat: the reply had no text (%d tokens)", line.EvalCount)
		}
		return latency{
			first: first.Sub(start), decode: last.Sub(first), tail: now.Sub(last), total: now.Sub(start),
			prefill: line.PromptEvalDuration, engineDecode: line.EvalDuration, serverTotal: line.TotalDuration,
			tokens: line.EvalCount,
		}, nil
	}
	if err := sc.Err(); err != nil {
		return latency{}, err
	}
	return latency{}, fmt.Errorf("/api/chat: the stream ended without its last line")
}

// printLatency prints the medians of the samples: each span at the client next to the
// engine's (or the server's) own measure of it, and the median of their difference, which is
// what the transport, the server and the engine's event pacing add.
func printLatency(w io.Writer, samples []latency) {
	if len(samples) == 0 {
		return
	}
	median := func(f func(latency) time.Duration) time.Duration {
		xs := make([]float64, len(samples))
		for i, s := range samples {
			xs[i] = float64(f(s))
		}
		m, _ := medianMin(xs)
		return time.Duration(m)
	}
	fmt.Fprintf(w, "latency at the HTTP client vs the engine's own timings (Ollama /api/chat stream, %d tokens, medians of %d)\n",
		samples[0].tokens, len(samples))
	fmt.Fprintf(w, "%-22s %12s %12s %12s  %s\n", "", "client", "engine", "client-eng", "engine measure")
	for _, r := range []struct {
		name, measure  string
		client, engine func(latency) time.Duration
	}{
		{"first token", "prefill (prompt_eval_duration)",
			func(s latency) time.Duration { return s.first }, func(s latency) time.Duration { return s.prefill }},
		{"first to last token", "decode (eval_duration)",
			func(s latency) time.Duration { return s.decode }, func(s latency) time.Duration { return s.engineDecode }},
		{"last token to end", "none: the engine ends the reply with its last token",
			func(s latency) time.Duration { return s.tail }, func(latency) time.Duration { return 0 }},
		{"whole request", "server (total_duration)",
			func(s latency) time.Duration { return s.total }, func(s latency) time.Duration { return s.serverTotal }},
	} {
		diff := median(func(s latency) time.Duration { return r.client(s) - r.engine(s) })
		fmt.Fprintf(w, "%-22s %12s %12s %12s  %s\n", r.name, micros(median(r.client)), micros(median(r.engine)), micros(diff), r.measure)
	}
}

// micros formats d rounded to a microsecond.
func micros(d time.Duration) string { return d.Round(time.Microsecond).String() }
