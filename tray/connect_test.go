package tray

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"github.com/superfluid/superfluid/tray/connect"
)

// connectIDs are the snippets the Connect tab must show for a key pasted literally.
var connectIDs = []string{"claude-code", "codex", "codex-env", "openai-python", "openai-js",
	"anthropic-python", "anthropic-js", "ollama", "continue", "open-webui", "curl"}

// TestConnectTab: every app's setup is shown for the server's address and the loaded model
// (listed first), Copy puts a snippet on the clipboard, and typing a key or picking another
// model rewrites every snippet.
func TestConnectTab(t *testing.T) {
	app, f := newTestApp(t)
	f.mu.Lock()
	f.models[1].State = "loaded"
	f.mu.Unlock()
	v := app.connect
	ui(app, func() { app.Show("connect") })
	if app.tabs.Selected() != app.connectTab {
		t.Fatal("Show(connect) did not select the Connect tab")
	}
	if got := v.model.Options; len(got) != 2 || got[0] != "hf.co/owner/tiny-GGUF:Q8_0" || v.model.Selected != got[0] {
		t.Fatalf("models %q, selected %q: want the loaded one first and picked", got, v.model.Selected)
	}
	if v.key.Text != "" || !strings.Contains(v.status.Text, "http://127.0.0.1:8453") {
		t.Fatalf("key %q status %q", v.key.Text, v.status.Text)
	}
	claude := v.cards["claude-code"]
	if claude == nil || !strings.Contains(claude.text.Text(), "ANTHROPIC_BASE_URL=http://127.0.0.1:8453\n") ||
		!strings.Contains(claude.text.Text(), "ANTHROPIC_MODEL=hf.co/owner/tiny-GGUF:Q8_0\n") {
		t.Fatalf("claude code card: %+v", claude)
	}
	if _, ok := v.cards["codex-env"]; ok {
		t.Error("a Codex key snippet with no key")
	}

	ui(app, func() { test.Type(v.key, "sk-sf-$x y") })
	if text := v.cards["claude-code"].text.Text(); !strings.Contains(text, `ANTHROPIC_API_KEY='sk-sf-$x y'`) {
		t.Fatalf("typing a key did not rewrite the snippets: %q", text)
	}
	ui(app, func() { v.model.SetSelected("stories260K") })
	for _, id := range connectIDs {
		c := v.cards[id]
		if c == nil {
			t.Fatalf("no %s card", id)
		}
		want := findSnippet(t, connect.Params{Address: "127.0.0.1:8453", Key: "sk-sf-$x y", Model: "stories260K"}, id)
		if c.text.Text() != want.Text || c.title.Text != want.Title || !shown(v, c) {
			t.Errorf("%s shows %q, want %q", id, c.text.Text(), want.Text)
		}
		ui(app, func() { test.Tap(c.copy) })
		if got := app.fyne.Clipboard().Content(); got != want.Text {
			t.Errorf("%s: Copy put %q on the clipboard", id, got)
		}
	}
	if !strings.Contains(v.cards["codex-env"].text.Text(), `export SUPERFLUID_API_KEY='sk-sf-$x y'`) {
		t.Errorf("the key is not quoted: %q", v.cards["codex-env"].text.Text())
	}
}

// TestConnectTabStates: the tab says when the server is stopped, prefills the key from the
// environment when keys are required, and brackets an IPv6 address.
func TestConnectTabStates(t *testing.T) {
	app, f := newTestApp(t)
	v := app.connect
	ui(app, func() { app.Show("connect") })
	ui(app, func() { _ = f.StopServer(); v.refresh() })
	if !strings.Contains(v.status.Text, "The server is stopped") {
		t.Errorf("stopped server: %q", v.status.Text)
	}
	f.mu.Lock()
	f.status = ServerStatus{Running: true, Address: "[::]:8453"}
	f.keys = []APIKey{{ID: "k1", Name: "laptop", Source: "store"}}
	f.mu.Unlock()
	ui(app, func() { v.refresh() })
	if v.key.Text != connect.Placeholder || !strings.Contains(v.status.Text, "Keys are required") ||
		!strings.Contains(v.status.Text, "every address") {
		t.Errorf("key %q status %q", v.key.Text, v.status.Text)
	}
	if text := v.cards["curl"].text.Text(); !strings.Contains(text, "http://[::1]:8453/v1/chat/completions") ||
		!strings.Contains(text, `"Authorization: Bearer $SUPERFLUID_API_KEY"`) {
		t.Errorf("curl over IPv6 with the key from the environment: %q", text)
	}
	f.mu.Lock()
	f.keys = nil
	f.mu.Unlock()
	ui(app, func() { v.refresh() })
	if v.key.Text != "" {
		t.Errorf("keys no longer required, key still %q", v.key.Text)
	}
}

// shown reports whether the card is in the tab's list.
func shown(v *connectView, c *connectCard) bool {
	for _, o := range v.list.Objects {
		if o == c.box {
			return true
		}
	}
	return false
}

func findSnippet(t *testing.T, p connect.Params, id string) connect.Snippet {
	t.Helper()
	for _, s := range connect.Snippets(p) {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("no %s snippet", id)
	return connect.Snippet{}
}
