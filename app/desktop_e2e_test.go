package app

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/superfluid/superfluid/tray"
)

// TestDesktopController drives the desktop app's controller without a display: a busy port is
// reported, another port works, a playground reply streams from the real worker and shows in
// the activity, and stopping the server unloads the workers.
func TestDesktopController(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	cfg := testConfig(t, "")
	cfg.Port = busy.Addr().(*net.TCPAddr).Port
	a, c := openController(t, cfg)
	events, stop := c.Subscribe()
	defer stop()

	if err := c.StartServer(); err == nil || !strings.Contains(c.Server().Err, "in use") || c.Server().Running {
		t.Fatalf("start on a busy port: %v, status %+v", err, c.Server())
	}
	if err := c.SetAddress("127.0.0.1", 0); err == nil {
		t.Fatal("port 0 accepted")
	}
	free, _ := net.Listen("tcp", "127.0.0.1:0")
	port := free.Addr().(*net.TCPAddr).Port
	free.Close()
	if err := c.SetAddress("127.0.0.1", port); err != nil {
		t.Fatal(err)
	}
	if err := c.StartServer(); err != nil || !c.Server().Running || !strings.HasSuffix(c.APIURL(), ":"+strconv.Itoa(port)+"/v1") {
		t.Fatalf("start: %v %+v %s", err, c.Server(), c.APIURL())
	}
	if err := c.SetAddress("127.0.0.1", port+1); err == nil {
		t.Fatal("the port changed under a running server")
	}

	e, err := a.mgr.Catalog().AddLocal(context.Background(), testModel, "")
	if err != nil {
		t.Fatal(err)
	}
	model := e.ID
	var pieces []string
	stats, err := c.Chat(context.Background(), tray.ChatSettings{Model: model, Temperature: 0, MaxTokens: 12},
		[]tray.Message{{Role: "user", Content: "Once upon a time"}}, func(p tray.Piece) { pieces = append(pieces, p.Text) })
	if err != nil || len(pieces) == 0 || stats.CompletionTokens == 0 || stats.PromptTokens == 0 || stats.FinishReason == "" {
		t.Fatalf("chat: %v, %d pieces, %+v", err, len(pieces), stats)
	}
	var loaded bool
	for _, m := range c.Models() {
		loaded = loaded || (m.ID == model && m.Loaded() && m.Need > 0 && m.Context > 0)
	}
	if !loaded {
		t.Fatalf("models %+v", c.Models())
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		act := c.Activity()
		if len(act.Lanes) > 0 && len(act.Requests) > 0 && act.Requests[0].Endpoint == "playground" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("activity %+v", act)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if c.StartHidden() {
		t.Fatal("hidden at start by default")
	}
	if err := c.SetStartHidden(true); err != nil || !c.StartHidden() {
		t.Fatalf("start hidden: %v", err)
	}
	// The playground's conversation is saved and reopens.
	conv := tray.Conversation{ID: "conv-1", Title: "Once upon a time", Model: model,
		Messages: []tray.Message{{Role: "user", Content: "Once upon a time"}, {Role: "assistant", Content: strings.Join(pieces, "")}}}
	if err := c.SaveConversation(conv); err != nil {
		t.Fatal(err)
	}
	if list := c.Conversations(); len(list) != 1 || list[0].Title != conv.Title || list[0].Updated == "" {
		t.Fatalf("conversations %+v", list)
	}
	if got, err := c.OpenConversation("conv-1"); err != nil || len(got.Messages) != 2 || got.Messages[1].Content != conv.Messages[1].Content {
		t.Fatalf("reopened %+v %v", got, err)
	}
	if _, err := c.OpenConversation("nope"); err == nil {
		t.Fatal("opened a conversation that does not exist")
	}
	// Per-model settings: stored, read back, applied at the next load, validated.
	if err := c.SetSettings(model, tray.ModelSettings{ContextLength: 1024, Lanes: 1, KeepAlive: "10m", Temperature: "0.3", SystemPrompt: "Be brief."}); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Settings(model); err != nil || got.ContextLength != 1024 || got.Lanes != 1 || got.KeepAlive != "10m0s" || got.Temperature != "0.3" || got.Runtime != "" {
		t.Fatalf("settings read back %+v %v", got, err)
	}
	small, _ := c.Memory(model, 1024, 1)
	big, room := c.Memory(model, 4096, 4)
	if small <= 0 || big <= small || room <= 0 {
		t.Fatalf("memory %d < %d, free %d", small, big, room)
	}
	if _, err := c.Chat(context.Background(), tray.ChatSettings{Model: model, Temperature: 0, MaxTokens: 2},
		[]tray.Message{{Role: "user", Content: "Once"}}, func(tray.Piece) {}); err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Models() {
		if m.ID == model && (m.Context != 1024 || m.Runtime != "llamacpp-cpu") {
			t.Fatalf("after new settings the model runs with %+v", m)
		}
	}
	for _, bad := range []tray.ModelSettings{{Temperature: "hot"}, {KeepAlive: "soon"}, {TopK: "-1"}, {Runtime: "vulkan"}} {
		if err := c.SetSettings(model, bad); err == nil {
			t.Errorf("settings %+v accepted", bad)
		}
	}
	if err := c.StopServer(); err != nil || c.Server().Running {
		t.Fatalf("stop: %v %+v", err, c.Server())
	}
	for _, m := range c.Models() {
		if m.Loaded() {
			t.Fatalf("%s is still loaded after the server stopped", m.ID)
		}
	}
	sawServer := false
	for len(events) > 0 {
		if ev := <-events; ev.Kind == tray.EventServer {
			sawServer = true
		}
	}
	if !sawServer {
		t.Fatal("no server event")
	}
}

// TestDesktopControllerFaults: a worker killed during a playground reply fails that reply with
// the reason and the next one works; a model file deleted while listed shows as missing; closing
// while a reply streams ends it promptly.
func TestDesktopControllerFaults(t *testing.T) {
	cfg := testConfig(t, "")
	cfg.ContextLength = 4096
	a, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := newController(a)
	e, err := a.mgr.Catalog().AddLocal(context.Background(), testModel, "")
	if err != nil {
		t.Fatal(err)
	}
	long := tray.ChatSettings{Model: e.ID, Temperature: 0, MaxTokens: 4000}
	msgs := []tray.Message{{Role: "user", Content: "Once upon a time"}}
	if _, err := c.Chat(context.Background(), tray.ChatSettings{Model: e.ID, MaxTokens: 2}, msgs, func(tray.Piece) {}); err != nil {
		t.Fatal(err)
	}
	pid := a.workerPID(t, e.ID)
	killed := false
	_, err = c.Chat(context.Background(), long, msgs, func(tray.Piece) {
		if !killed {
			killed = true
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if err == nil || !strings.Contains(err.Error(), "worker") {
		t.Fatalf("a reply whose worker was killed: %v", err)
	}
	if _, err := c.Chat(context.Background(), tray.ChatSettings{Model: e.ID, MaxTokens: 2}, msgs, func(tray.Piece) {}); err != nil {
		t.Fatalf("the next reply: %v", err)
	}

	// Closing while a reply streams. The reply holds its first piece until the app has closed
	// (or 5 s have passed, should Close wait for it), so it cannot finish inside Close's drain
	// however fast the model is.
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		var once sync.Once
		_, err := c.Chat(context.Background(), long, msgs, func(tray.Piece) {
			once.Do(func() {
				close(started)
				select {
				case <-release:
				case <-time.After(5 * time.Second):
				}
			})
		})
		done <- err
	}()
	<-started
	c.Close()
	a.Close()
	close(release)
	if err := <-done; err == nil {
		t.Fatal("a reply cut by closing the app reported success")
	}

	// A model file deleted behind the catalog's back is listed as missing.
	b, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	gone := filepath.Join(t.TempDir(), "gone.gguf")
	data, _ := os.ReadFile(testModel)
	os.WriteFile(gone, data, 0o644)
	if _, err := b.mgr.Catalog().AddLocal(context.Background(), gone, "gone"); err != nil {
		t.Fatal(err)
	}
	os.Remove(gone)
	c2 := newController(b)
	defer c2.Close()
	for _, m := range c2.Models() {
		if m.ID == "gone" && m.State != "missing" {
			t.Fatalf("a deleted file's model shows %q", m.State)
		}
	}
}
