package soak

import (
	"errors"
	"strings"
	"testing"
)

func TestReadSSE(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []sseEvent
		err      string
	}{
		{"data and done", "data: {\"a\":1}\n\n: keep-alive\n\ndata: [DONE]\n\n", []sseEvent{{"", `{"a":1}`}, {"", "[DONE]"}}, ""},
		{"named events", "event: message_start\ndata: {}\n\nevent: ping\ndata: {\"type\":\"ping\"}\n\n",
			[]sseEvent{{"message_start", "{}"}, {"ping", `{"type":"ping"}`}}, ""},
		{"cut inside an event", "data: {\"a\":1}\n\ndata: {\"b\"", []sseEvent{{"", `{"a":1}`}}, "inside an event"},
		{"not SSE", "{\"error\":\"x\"}\n", nil, "not server-sent events"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []sseEvent
			err := readSSE(strings.NewReader(tc.in), func(ev sseEvent) error {
				got = append(got, ev)
				return nil
			})
			if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("err %v, want %q", err, tc.err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("events %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("event %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestErrorShapes(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    dialect
		body string
		ok   bool
	}{
		{"openai", openAI, `{"error":{"message":"boom","type":"server_error","param":null,"code":null}}`, true},
		{"openai without type", openAI, `{"error":{"message":"boom"}}`, false},
		{"openai as ollama", openAI, `{"error":"boom"}`, false},
		{"anthropic", anthropicDialect, `{"type":"error","error":{"type":"api_error","message":"boom"}}`, true},
		{"anthropic without type", anthropicDialect, `{"error":{"type":"api_error","message":"boom"}}`, false},
		{"ollama", ollamaDialect, `{"error":"boom"}`, true},
		{"ollama empty", ollamaDialect, `{"error":""}`, false},
		{"html", openAI, `<html>502</html>`, false},
		{"two values", ollamaDialect, `{"error":"a"}{"error":"b"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := errorReply(tc.d, 500, []byte(tc.body))
			if (o.malformed == "") != tc.ok || (tc.ok && !strings.Contains(o.failure, "boom")) {
				t.Errorf("%s: %+v", tc.body, o)
			}
		})
	}
}

func TestStreamEnd(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		err                     error
		hungUp, terminated      bool
		failure                 string
		malformed, disconnected bool
		transport               bool
	}{
		{"clean", nil, false, true, "", false, false, false},
		{"no terminal event", nil, false, false, "", true, false, false},
		{"hung up", nil, true, false, "", false, true, false},
		{"bad event", badEvent("x"), false, false, "", true, false, false},
		{"connection broke", errors.New("unexpected EOF"), false, false, "", false, false, true},
		{"error frame", nil, false, true, "error frame: boom", false, false, false},
	} {
		o := streamEnd(tc.err, tc.hungUp, tc.terminated, tc.failure)
		if (o.malformed != "") != tc.malformed || o.disconnected != tc.disconnected || o.transport != tc.transport || !o.answered {
			t.Errorf("%s: %+v", tc.name, o)
		}
	}
}

func TestChaosOverlap(t *testing.T) {
	c := newChaos()
	tok := c.begin()
	c.end(tok)
	w := c.windows[0]
	if !c.overlaps(w.from.Add(-1e9), w.from) || !c.overlaps(w.to, w.to.Add(1e9)) || c.overlaps(w.to.Add(1), w.to.Add(2e9)) {
		t.Errorf("window %+v: overlaps wrong", w)
	}
	c.begin()
	if !c.overlaps(w.to.Add(1e12), w.to.Add(2e12)) {
		t.Error("an open window overlaps everything")
	}
}
