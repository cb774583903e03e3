package app

import (
	"context"
	"encoding/json"
	"net/url"
	"os/exec"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	ollama "github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/superfluid/superfluid/tray/connect"
)

// connectKey is an API key with the characters a snippet must quote ($, quotes, backquotes,
// a backslash; a key is printable ASCII without spaces, the unit tests of tray/connect cover
// spaces and newlines too).
const connectKey = `sk-$HOME"dq"'sq'` + "`id`\\x;&"

// connectSnippet is the Connect tab's snippet id for p.
func connectSnippet(t *testing.T, p connect.Params, id string) string {
	t.Helper()
	for _, s := range connect.Snippets(p) {
		if s.ID == id {
			return s.Text
		}
	}
	t.Fatalf("no %s snippet", id)
	return ""
}

// snippetEnv is what a shell snippet exports, run by bash with cmd (the app it starts) stubbed.
func snippetEnv(t *testing.T, text, cmd string) map[string]string {
	t.Helper()
	out, err := exec.Command("bash", "--norc", "-e", "-c", cmd+"() { :; }\n"+text+"env -0").Output()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, text)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(string(out), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

// TestConnectSnippetsReachTheServer generates the Connect tab's snippets for a real server
// that requires a key, then: runs the curl snippet with bash; points the OpenAI SDK at the
// base URL and key of the Codex snippets and the Anthropic SDK at those of the Claude Code
// one; and runs the ollama client from OLLAMA_HOST against a second server that needs no key
// (Ollama's clients send none). Each must get a reply from the model the snippet names.
func TestConnectSnippetsReachTheServer(t *testing.T) {
	cfg := testConfig(t, testModel)
	cfg.APIKey = connectKey
	_, srv := startServer(t, cfg, true)
	u, _ := url.Parse(srv.URL)
	p := connect.Params{Address: u.Host, Key: connectKey, Model: modelID(testModel)}
	ctx := context.Background()

	t.Run("curl", func(t *testing.T) {
		if _, err := exec.LookPath("curl"); err != nil {
			t.Skip("curl is not installed")
		}
		text := strings.Replace(connectSnippet(t, p, "curl"), "curl ", "curl -sS --fail-with-body ", 1)
		out, err := exec.Command("bash", "--norc", "-e", "-c", text).CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s\n%s", err, text, out)
		}
		var reply openai.ChatCompletion
		if err := json.Unmarshal(out, &reply); err != nil || len(reply.Choices) != 1 || reply.Model != p.Model {
			t.Fatalf("reply %s: %v", out, err)
		}
	})

	t.Run("openai from the codex snippets", func(t *testing.T) {
		var cfg struct {
			Providers map[string]map[string]string `toml:"model_providers"`
			Model     string                       `toml:"model"`
		}
		if _, err := toml.Decode(connectSnippet(t, p, "codex"), &cfg); err != nil {
			t.Fatal(err)
		}
		prov := cfg.Providers["superfluid"]
		key := snippetEnv(t, connectSnippet(t, p, "codex-env"), "codex")[prov["env_key"]]
		c := openai.NewClient(option.WithBaseURL(prov["base_url"]), option.WithAPIKey(key), option.WithMaxRetries(0))
		// Codex speaks the Responses API (wire_api = "responses").
		resp, err := c.Responses.New(ctx, responsesParams(cfg.Model))
		if err != nil || resp.OutputText() == "" {
			t.Fatalf("responses with %q at %s: %v", key, prov["base_url"], err)
		}
		// A wrong key is refused: the key really is checked.
		bad := openai.NewClient(option.WithBaseURL(prov["base_url"]), option.WithAPIKey("sk-wrong"), option.WithMaxRetries(0))
		if _, err := bad.Models.List(ctx); status(err) != 401 {
			t.Fatalf("a wrong key got %v", err)
		}
	})

	t.Run("anthropic from the claude code snippet", func(t *testing.T) {
		env := snippetEnv(t, connectSnippet(t, p, "claude-code"), "claude")
		c := anthropic.NewClient(aoption.WithBaseURL(env["ANTHROPIC_BASE_URL"]), aoption.WithAPIKey(env["ANTHROPIC_API_KEY"]), aoption.WithMaxRetries(0))
		msg, err := c.Messages.New(ctx, anthropic.MessageNewParams{Model: anthropic.Model(env["ANTHROPIC_MODEL"]), MaxTokens: 16,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Once upon a time"))}})
		if err != nil || len(msg.Content) == 0 {
			t.Fatalf("messages: %v", err)
		}
	})

	t.Run("ollama from OLLAMA_HOST", func(t *testing.T) {
		_, open := startServer(t, testConfig(t, testModel), false)
		u, _ := url.Parse(open.URL)
		q := connect.Params{Address: u.Host, Model: modelID(testModel)}
		host := snippetEnv(t, connectSnippet(t, q, "ollama"), "ollama")["OLLAMA_HOST"]
		t.Setenv("OLLAMA_HOST", host)
		c, err := ollama.ClientFromEnvironment()
		if err != nil {
			t.Fatal(err)
		}
		stream := false
		got := ""
		err = c.Generate(ctx, &ollama.GenerateRequest{Model: q.Model, Prompt: "Once upon a time", Stream: &stream,
			Options: map[string]any{"num_predict": 8}}, func(r ollama.GenerateResponse) error {
			got += r.Response
			return nil
		})
		if err != nil || got == "" {
			t.Fatalf("generate at %s: %q, %v", host, got, err)
		}
	})
}

func responsesParams(model string) responses.ResponseNewParams {
	return responses.ResponseNewParams{Model: model, MaxOutputTokens: openai.Int(16),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Once upon a time")}}
}
