package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
)

// sample is one timed generation: when it started, its first and last token.
type sample struct {
	start, first, last time.Time
	// end is when the call returned (set by engineGenerate).
	end          time.Time
	promptTokens int
	tokens       int
	// firstTokens is how many tokens the first text event carried: a fast engine groups
	// several tokens into one event.
	firstTokens int
	cached      int
	text        string
	// spec is the reply's superfluid.spec (nil when speculation did not run).
	spec *specReport
}

// specReport is a reply's superfluid.spec.
type specReport struct {
	Proposed       int     `json:"proposed"`
	Accepted       int     `json:"accepted"`
	AcceptanceRate float64 `json:"acceptance_rate"`
	Note           string  `json:"note"`
}

// decodeRate is the tokens that came after the first event over the time from the first
// event to the last; the first event's tokens, however many, came with the prefill.
func (s sample) decodeRate() float64 {
	n := s.tokens - s.firstTokens
	if n < 1 || !s.last.After(s.first) {
		return 0
	}
	return float64(n) / s.last.Sub(s.first).Seconds()
}

func (s sample) prefillRate() float64 {
	return float64(s.promptTokens) / s.first.Sub(s.start).Seconds()
}

// ttft is the time to the first content.
func (s sample) ttft() time.Duration { return s.first.Sub(s.start) }

// apiClient talks to a running server over HTTP, as a client would.
type apiClient struct {
	url, model string
	// headers go with every stream (a team key's Authorization), before the call's own.
	headers map[string]string
}

func (b *apiClient) sample(prompt string, tokens int) (sample, error) {
	return b.stream(map[string]any{
		"max_tokens": tokens, "ignore_eos": true, "temperature": 0,
		"messages": []map[string]string{{"role": "user", "content": prompt}},
	})
}

// post sends a JSON body and decodes a JSON answer into out (nil: discarded).
func (b *apiClient) post(path string, body, out any) error {
	data, _ := json.Marshal(body)
	res, err := http.Post(b.url+path, "application/json", bytes.NewReader(data))
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(res.Body)
		return fmt.Errorf("%s: status %d: %s", path, res.StatusCode, msg)
	}
	if out == nil {
		_, err = io.Copy(io.Discard, res.Body)
		return err
	}
	return json.NewDecoder(res.Body).Decode(out)
}

// unload asks the server to unload the model now (POST /v1/models/unload).
func (b *apiClient) unload() error {
	var out struct{ State string }
	if err := b.post("/v1/models/unload", map[string]string{"model": b.model}, &out); err != nil {
		return err
	}
	if out.State != "unloaded" {
		return fmt.Errorf("unload %s: the model is %q afterwards", b.model, out.State)
	}
	return nil
}

// stream posts a streaming chat completion (body without model and stream) and times it.
// Every chunk carries the completion tokens so far (continuous_usage_stats), so the tokens of
// the first text chunk are known.
func (b *apiClient) stream(body map[string]any) (sample, error) {
	return b.streamWith(body, nil)
}

// streamWith is stream with extra request headers (x-superfluid-qos).
func (b *apiClient) streamWith(body map[string]any, headers map[string]string) (sample, error) {
	return b.streamContext(context.Background(), body, headers)
}

// streamContext is streamWith that hangs up when ctx ends.
func (b *apiClient) streamContext(ctx context.Context, body map[string]any, headers map[string]string) (sample, error) {
	body["model"], body["stream"] = b.model, true
	body["stream_options"] = map[string]any{"include_usage": true, "continuous_usage_stats": true}
	data, _ := json.Marshal(body)
	s := sample{start: time.Now()}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.url+"/v1/chat/completions", bytes.NewReader(data))
	if err != nil {
		return s, err
	}
	req.Header.Set("Content-Type", "application/json")
	for _, hs := range []map[string]string{b.headers, headers} {
		for k, v := range hs {
			req.Header.Set(k, v)
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return s, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(res.Body)
		return s, fmt.Errorf("status %d: %s", res.StatusCode, msg)
	}
	var text strings.Builder
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var ch struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
			Usage *struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
				Details          struct {
					CachedTokens int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
			Error      *struct{ Message string } `json:"error"`
			Superfluid *struct {
				Spec *specReport `json:"spec"`
			} `json:"superfluid"`
		}
		if err := json.Unmarshal([]byte(line), &ch); err != nil {
			return s, err
		}
		if ch.Superfluid != nil && ch.Superfluid.Spec != nil {
			s.spec = ch.Superfluid.Spec
		}
		if ch.Error != nil {
			return s, fmt.Errorf("stream error: %s", ch.Error.Message)
		}
		now := time.Now()
		if len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != "" {
			if s.first.IsZero() {
				s.first = now
				if ch.Usage != nil {
					s.firstTokens = ch.Usage.CompletionTokens
				}
			}
			s.last = now
			text.WriteString(ch.Choices[0].Delta.Content)
		}
		if ch.Usage != nil {
			s.promptTokens, s.tokens, s.cached = ch.Usage.PromptTokens, ch.Usage.CompletionTokens, ch.Usage.Details.CachedTokens
		}
	}
	s.text = text.String()
	if s.first.IsZero() { // nothing generated: time to the end instead
		s.first, s.last = time.Now(), time.Now()
	}
	return s, sc.Err()
}

// tokenCount asks the server how many tokens text is.
func (b *apiClient) tokenCount(text string) (int, error) {
	var out struct{ Count int }
	err := b.post("/v1/tokenize", map[string]any{"model": b.model, "input": text}, &out)
	return out.Count, err
}

// textOfTokens grows story text, distinct per seed, to about n tokens.
func (b *apiClient) textOfTokens(n, seed int) (string, error) {
	sentences := []string{"The little dog ran to the park.", "A girl found a red ball in the sun.", "They played until the sky was dark.",
		"Mom called them home for soup.", "The cat watched from the old tree."}
	var sb strings.Builder
	fmt.Fprintf(&sb, "Part %d. ", seed)
	for i := seed; ; i++ {
		sb.WriteString(sentences[i%len(sentences)] + " ")
		count, err := b.tokenCount(sb.String())
		if err != nil || count >= n {
			return sb.String(), err
		}
	}
}

// slotsTotals reads the engine's counters from /slots.
func (b *apiClient) slotsTotals() (llm.Totals, error) {
	res, err := http.Get(b.url + "/slots")
	if err != nil {
		return llm.Totals{}, err
	}
	defer res.Body.Close()
	var entries []struct{ Totals llm.Totals }
	if err := json.NewDecoder(res.Body).Decode(&entries); err != nil || len(entries) == 0 {
		return llm.Totals{}, fmt.Errorf("read /slots: %v", err)
	}
	return entries[0].Totals, nil
}

// transcript is one timed transcription.
type transcript struct {
	elapsed                   time.Duration
	text                      string
	inputTokens, outputTokens int
}

// transcribe posts wav to /v1/audio/transcriptions (response_format json) and times the whole
// request.
func (b *apiClient) transcribe(wav []byte) (transcript, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, f := range [][2]string{{"model", b.model}, {"response_format", "json"}} {
		if err := mw.WriteField(f[0], f[1]); err != nil {
			return transcript{}, err
		}
	}
	fw, err := mw.CreateFormFile("file", "clip.wav")
	if err == nil {
		_, err = fw.Write(wav)
	}
	if err == nil {
		err = mw.Close()
	}
	if err != nil {
		return transcript{}, err
	}
	start := time.Now()
	res, err := http.Post(b.url+"/v1/audio/transcriptions", mw.FormDataContentType(), &body)
	if err != nil {
		return transcript{}, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	t := transcript{elapsed: time.Since(start)}
	if err != nil {
		return t, err
	}
	if res.StatusCode != http.StatusOK {
		return t, fmt.Errorf("/v1/audio/transcriptions: status %d: %s", res.StatusCode, data)
	}
	var out struct {
		Text  string `json:"text"`
		Usage struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return t, fmt.Errorf("/v1/audio/transcriptions: %w: %s", err, data)
	}
	t.text, t.inputTokens, t.outputTokens = out.Text, out.Usage.InputTokens, out.Usage.OutputTokens
	return t, nil
}
