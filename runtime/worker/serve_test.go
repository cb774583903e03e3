package worker

import (
	"bufio"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/enginetest"
	"github.com/superfluid/superfluid/runtime/llm"
)

// serveInProcess serves a fake on a unix socket in this process and returns its path.
func serveInProcess(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sf-serve-") // t.TempDir can exceed the 108-byte socket path limit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- Serve(l, enginetest.New(64, "ok")) }()
	t.Cleanup(func() {
		l.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve after closing the listener = %v, want nil", err)
		}
	})
	return socket
}

// rawCall sends one line and returns the decoded replies up to End.
func rawCall(t *testing.T, socket, line string) []reply {
	t.Helper()
	conn, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(line + "\n")); err != nil {
		t.Fatal(err)
	}
	var replies []reply
	dec := json.NewDecoder(bufio.NewReader(conn))
	for {
		var r reply
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("after %d replies: %v", len(replies), err)
		}
		replies = append(replies, r)
		if r.End {
			return replies
		}
	}
}

func TestServeProtocol(t *testing.T) {
	socket := serveInProcess(t)
	tests := []struct {
		name    string
		line    string
		replies int
		kind    string // error kind of the last reply; "" for success
	}{
		{"generate", `{"op":"generate","generate":{"prompt":"hi","max_tokens":1}}`, 4, ""},
		{"tokenize", `{"op":"tokenize","text":"hi","add_special":true}`, 1, ""},
		{"ping", `{"op":"ping"}`, 1, ""},
		{"generate without request", `{"op":"generate"}`, 1, kindInvalidInput},
		{"unknown op", `{"op":"nonsense"}`, 1, kindInvalidInput},
		{"embed on a generation model", `{"op":"embed","embed":{"inputs":[{"text":"hi"}]}}`, 1, kindUnsupported},
		{"embed without request", `{"op":"embed"}`, 1, kindUnsupported},
		{"context length", `{"op":"generate","generate":{"prompt":"` + strings.Repeat("x", 100) + `"}}`, 1, kindContextLength},
		{"garbled call", `{"op":`, 1, kindEngine},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			replies := rawCall(t, socket, tt.line)
			if len(replies) != tt.replies {
				t.Errorf("got %d replies %+v, want %d", len(replies), replies, tt.replies)
			}
			last := replies[len(replies)-1]
			switch {
			case tt.kind == "" && last.Error != nil:
				t.Errorf("error %+v, want success", *last.Error)
			case tt.kind != "" && (last.Error == nil || last.Error.Kind != tt.kind):
				t.Errorf("last reply %+v, want an error of kind %q", last, tt.kind)
			}
		})
	}
}

func TestWireErrors(t *testing.T) {
	cl := &llm.ContextLengthError{PromptTokens: 9, ContextLength: 8}
	w := toWire(cl)
	back := w.err()
	if back.Error() != cl.Error() {
		t.Errorf("context length error came back as %q, want %q", back, cl)
	}
}

// brokenEngine is a fake that can break for good, as a Failer.
type brokenEngine struct {
	*enginetest.Engine
	failed chan struct{}
}

var errBroken = errors.New("llama_decode failed with code -3")

func (e *brokenEngine) Failed() <-chan struct{} { return e.failed }
func (e *brokenEngine) Failure() error          { return errBroken }

// TestServeStopsWhenTheEngineFails: once a Failer fails, Serve stops taking calls and returns
// its failure (the worker then exits non-zero), instead of serving a broken engine.
func TestServeStopsWhenTheEngineFails(t *testing.T) {
	dir, err := os.MkdirTemp("", "sf-serve-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	engine := &brokenEngine{Engine: enginetest.New(64, "ok"), failed: make(chan struct{})}
	served := make(chan error, 1)
	go func() { served <- Serve(l, engine) }()
	if replies := rawCall(t, socket, `{"op":"ping"}`); len(replies) != 1 || replies[0].Error != nil {
		t.Fatalf("ping before the failure: %+v", replies)
	}
	close(engine.failed)
	if err := <-served; !errors.Is(err, errBroken) {
		t.Fatalf("Serve after the engine failed = %v, want its failure", err)
	}
	if conn, err := net.Dial("unix", socket); err == nil {
		conn.Close()
		t.Error("the socket still takes calls after the engine failed")
	}
}
