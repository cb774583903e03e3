package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// benchWeb measures the browser transport against the OpenAI API on the same server and model:
// the same greedy chat streamed over POST /v1/chat/completions, POST /web/stream (SSE) and a
// WebSocket at /web/ws, interleaved run by run, as time to the first text and decode tokens/s
// (the tokens after the first piece over the time from the first piece to the last; none of
// the three carries the first piece's token count, so all count it as one).
func benchWeb(model string, o Options, w io.Writer) error {
	if o.Serve == nil {
		return errors.New("this suite needs the app (Options.Serve is nil)")
	}
	s, err := o.Serve(ServeOptions{Model: model, Parallel: 1, Threads: o.Threads, Web: true})
	if err != nil {
		return err
	}
	defer s.Stop()
	if s.WebURL == "" {
		return errors.New("the server has no browser transport (ServeOptions.Web)")
	}
	api := &apiClient{url: s.URL, model: s.Model}
	web := &webClient{url: s.WebURL, token: s.WebToken, model: s.Model}
	ctx := context.Background()
	if err := web.dial(ctx); err != nil {
		return err
	}
	defer web.conn.CloseNow()
	tokens := orDefault(o.DecodeTokens, 128)
	fmt.Fprintf(w, "model %s, %d runs each, up to %d tokens per reply (greedy), the three interleaved\n", s.Model, o.Repeat, tokens)
	names := []string{"/v1 chat stream", "/web/stream SSE", "/web/ws"}
	ttft := make([][]float64, 3)
	rate := make([][]float64, 3)
	for run := range o.Repeat {
		for i, name := range names {
			// A fresh leading mark per run and transport keeps the prefix cache out of it.
			prompt := fmt.Sprintf("%d%c. Once upon a time", run, 'a'+i)
			var sm sample
			switch i {
			case 0:
				sm, err = api.stream(map[string]any{"max_tokens": tokens, "temperature": 0,
					"messages": []map[string]string{{"role": "user", "content": prompt}}})
				sm.firstTokens = 1
			case 1:
				sm, err = web.stream(ctx, prompt, tokens)
			case 2:
				sm, err = web.socket(ctx, prompt, tokens)
			}
			if err != nil {
				return fmt.Errorf("%s run %d: %w", name, run, err)
			}
			ttft[i] = append(ttft[i], float64(sm.ttft().Microseconds())/1000)
			rate[i] = append(rate[i], sm.decodeRate())
		}
	}
	fmt.Fprintf(w, "%-16s %12s %12s %12s %12s %20s\n", "", "TTFT med", "TTFT min", "tok/s med", "tok/s min", "vs /v1")
	baseT, _ := medianMin(ttft[0])
	baseR, _ := medianMin(rate[0])
	for i, name := range names {
		tm, ti := medianMin(ttft[i])
		rm, ri := medianMin(rate[i])
		versus := "-"
		if i > 0 && baseT > 0 && baseR > 0 {
			verdict := "target met"
			if tm-baseT > webTargetTTFT || rm/baseR < webTargetRate {
				verdict = "target missed"
			}
			versus = fmt.Sprintf("%+.2fms %.2fx %s", tm-baseT, rm/baseR, verdict)
		}
		fmt.Fprintf(w, "%-16s %10.2fms %10.2fms %12.1f %12.1f %20s\n", name, tm, ti, rm, ri, versus)
	}
	fmt.Fprintf(w, "vs /v1: median TTFT difference and median tokens/s ratio; the target is at most %+.0f ms and at least %.2fx (one run is noisy: repeat it)\n",
		webTargetTTFT, webTargetRate)
	return nil
}

// The target for the browser transport against /v1 streaming on the same model: first
// token at most 1 ms later, tokens/s at least 98 %.
const (
	webTargetTTFT = 1.0 // ms
	webTargetRate = 0.98
)

// webClient is a browser's view of the --web transport: its token, one WebSocket.
type webClient struct {
	url, token, model string
	conn              *websocket.Conn
	next              int
	// frames are the socket's frames as they come; readErr why they ended (set before the
	// channel closes).
	frames  chan []byte
	readErr error
}

func (c *webClient) chatParams(prompt string, tokens int) map[string]any {
	return map[string]any{"model": c.model, "temperature": 0, "max_tokens": tokens,
		"messages": []map[string]string{{"role": "user", "content": prompt}}}
}

func (c *webClient) dial(ctx context.Context) error {
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(c.url, "http")+"/web/ws",
		&websocket.DialOptions{Subprotocols: []string{"superfluid.v1", "token." + c.token}})
	if err != nil {
		return fmt.Errorf("dial /web/ws: %w", err)
	}
	c.conn = conn
	// Read all the time, as a browser does: the server's pings need their pongs between chats
	// too (it closes a socket that stops answering).
	c.frames = make(chan []byte, 1024)
	go func() {
		defer close(c.frames)
		for {
			_, b, err := conn.Read(context.Background())
			if err != nil {
				c.readErr = err
				return
			}
			c.frames <- b
		}
	}()
	return nil
}

// webEvent is a chat event of either web transport.
type webEvent struct {
	ID     json.RawMessage `json:"id"`
	Event  string          `json:"event"`
	Text   string          `json:"text"`
	Tokens int             `json:"tokens"`
	Prompt int             `json:"prompt_tokens"`
	Cached int             `json:"cached_tokens"`
	Error  *struct {
		Code, Message string
	} `json:"error"`
}

// add times one event into s; it reports whether the reply ended.
func (s *sample) add(ev webEvent) (bool, error) {
	now := time.Now()
	switch ev.Event {
	case "piece":
		if ev.Text != "" {
			if s.first.IsZero() {
				s.first, s.firstTokens = now, 1
			}
			s.last = now
			s.text += ev.Text
		}
		return false, nil
	case "done":
		s.tokens, s.promptTokens, s.cached = ev.Tokens, ev.Prompt, ev.Cached
		if s.first.IsZero() {
			s.first, s.last = now, now
		}
		return true, nil
	}
	if ev.Error != nil {
		return true, fmt.Errorf("%s: %s", ev.Error.Code, ev.Error.Message)
	}
	return true, fmt.Errorf("unexpected event %q", ev.Event)
}

// stream is one chat over POST /web/stream.
func (c *webClient) stream(ctx context.Context, prompt string, tokens int) (sample, error) {
	body, _ := json.Marshal(map[string]any{"method": "chat", "params": c.chatParams(prompt, tokens)})
	s := sample{start: time.Now()}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url+"/web/stream", bytes.NewReader(body))
	if err != nil {
		return s, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return s, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(res.Body)
		return s, fmt.Errorf("status %d: %s", res.StatusCode, msg)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			event = v
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		ev := webEvent{Event: event}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return s, err
		}
		if event == "error" { // the SSE error event's data is the error itself
			var e struct{ Code, Message string }
			json.Unmarshal([]byte(data), &e)
			return s, fmt.Errorf("%s: %s", e.Code, e.Message)
		}
		if end, err := s.add(ev); end || err != nil {
			return s, err
		}
	}
	if err := sc.Err(); err != nil {
		return s, err
	}
	return s, errors.New("the stream ended without a done event")
}

// socket is one chat over the WebSocket.
func (c *webClient) socket(ctx context.Context, prompt string, tokens int) (sample, error) {
	c.next++
	id := fmt.Sprintf(`"bench-%d"`, c.next)
	frame, _ := json.Marshal(map[string]any{"id": json.RawMessage(id), "method": "chat", "params": c.chatParams(prompt, tokens)})
	s := sample{start: time.Now()}
	if err := c.conn.Write(ctx, websocket.MessageText, frame); err != nil {
		return s, err
	}
	for {
		var b []byte
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case f, ok := <-c.frames:
			if !ok {
				return s, fmt.Errorf("the socket closed: %w", c.readErr)
			}
			b = f
		}
		var ev webEvent
		if err := json.Unmarshal(b, &ev); err != nil {
			return s, err
		}
		if string(ev.ID) != id {
			continue
		}
		if end, err := s.add(ev); end || err != nil {
			return s, err
		}
	}
}
