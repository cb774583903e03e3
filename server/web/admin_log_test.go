package web_test

import (
	"bufio"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/server/web"
)

// sseEvent is one server-sent event.
type sseEvent struct {
	name string
	data map[string]any
}

// follow opens the log stream as the browser b and returns its events as they come.
func follow(t *testing.T, b *browser, query string) (<-chan sseEvent, func()) {
	t.Helper()
	req, err := http.NewRequest("GET", b.tt.URL+"/api/admin/runtime/log/stream"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Cookie", web.CookieName+"="+b.cookie)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		res.Body.Close()
		t.Fatalf("stream: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	events := make(chan sseEvent, 64)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(res.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.data)
			case line == "" && ev.name != "":
				events <- ev
				ev = sseEvent{}
			}
		}
	}()
	return events, func() { res.Body.Close() }
}

func next(t *testing.T, events <-chan sseEvent) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok {
			t.Fatal("the stream ended")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10 s")
	}
	return sseEvent{}
}

// TestAdminLogStream: the stream sends the recent lines first (?backlog), then a line logged
// after the subscription, live; a follower that hangs up is let go.
func TestAdminLogStream(t *testing.T) {
	tt := newAdminTeam(t)
	log := slog.New(tt.Log.Handler(nil))
	log.Info("before one")
	log.Info("before two", "lane", "main")
	root := tt.signIn(t, "root", "password0")

	events, stop := follow(t, root, "?backlog=1")
	ev := next(t, events)
	if ev.name != "log" || ev.data["message"] != "before two" || ev.data["level"] != "INFO" || ev.data["attrs"].(map[string]any)["lane"] != "main" {
		t.Fatalf("backlog event = %+v, want the newest line only", ev)
	}
	if _, err := time.Parse(time.RFC3339Nano, ev.data["at"].(string)); err != nil {
		t.Errorf("at %v: %v", ev.data["at"], err)
	}
	for deadline := time.Now().Add(5 * time.Second); tt.Log.Followers() != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the stream never subscribed")
		}
	}
	log.Warn("live line", "model", "alpha")
	ev = next(t, events)
	if ev.name != "log" || ev.data["message"] != "live line" || ev.data["level"] != "WARN" {
		t.Fatalf("live event = %+v", ev)
	}
	stop()
	for deadline := time.Now().Add(5 * time.Second); tt.Log.Followers() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the follower that hung up is still subscribed")
		}
	}

	if r := root.do("GET", "/api/admin/runtime/log/stream?backlog=-1", ""); r.status != 400 || r.param() != "backlog" {
		t.Errorf("backlog=-1: %d %s", r.status, r.body)
	}
}

// TestAdminLogDownload: the ring as a text attachment.
func TestAdminLogDownload(t *testing.T) {
	tt := newAdminTeam(t)
	slog.New(tt.Log.Handler(nil)).Info("model loaded", "model", "alpha")
	root := tt.signIn(t, "root", "password0")
	r := root.do("GET", "/api/admin/runtime/log", "")
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") ||
		!strings.HasPrefix(r.header.Get("Content-Disposition"), "attachment; filename=") || !strings.Contains(string(r.body), "INFO model loaded model=alpha\n") {
		t.Errorf("download: %d %v %q", r.status, r.header, r.body)
	}
	// Without a runtime log (not serve --team): a refusal in the web shape, not an empty 200.
	plain := newTestTeam(t)
	admin := plain.signIn(t, "root", "password0")
	if r := admin.do("GET", "/api/admin/runtime/log", ""); r.status != 404 || r.code() != "not_found" {
		t.Errorf("no runtime log: %d %s", r.status, r.body)
	}
}
