package connect

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"gopkg.in/yaml.v3"
)

// hostile is a key with every character a careless snippet would break on.
const hostile = "sk-$HOME `id` \"dq\" 'sq' \\back\nline two"

var cases = []struct {
	name string
	p    Params
	// root is the URL clients must use; key what they must send ("" for none).
	root, key string
}{
	{"no key", Params{Address: "127.0.0.1:8453", Model: "stories260K"}, "http://127.0.0.1:8453", ""},
	{"key", Params{Address: "127.0.0.1:9000", Key: "sk-sf-abc123", Model: "hf.co/owner/tiny-GGUF:Q8_0"}, "http://127.0.0.1:9000", "sk-sf-abc123"},
	{"hostile key", Params{Address: "0.0.0.0:8453", Key: hostile, Model: "m'odel \"x\""}, "http://127.0.0.1:8453", hostile},
	{"ipv6", Params{Address: "[::1]:8453", Key: "k", Model: "m"}, "http://[::1]:8453", "k"},
	{"ipv6 wildcard", Params{Address: "[::]:8453", Model: "m"}, "http://[::1]:8453", ""},
	{"from env", Params{Address: "127.0.0.1:8453", Key: Placeholder, Model: "m"}, "http://127.0.0.1:8453", "from-the-environment"},
	{"hostile model", Params{Address: "127.0.0.1:8453", Key: "k", Model: hostileModel}, "http://127.0.0.1:8453", "k"},
	{"hostile both", Params{Address: "127.0.0.1:8453", Key: hostileKey2, Model: hostileModel}, "http://127.0.0.1:8453", hostileKey2},
	{"url model", Params{Address: "127.0.0.1:8453", Key: "$HOME/not-a-var",
		Model: "https://hf.co/owner/repo/resolve/main/x.gguf?download=true&a=1#frag"}, "http://127.0.0.1:8453", "$HOME/not-a-var"},
}

// hostileModel and hostileKey2 hold what breaks a shell ($(), backticks, quotes, \, newlines,
// ;, &, #, !, a leading -), TOML and YAML (#, [, ], =, :, {, }, - and * first, tabs, control
// characters, line separators) and JavaScript or Python (U+2028, ${}, triple quotes).
const (
	hostileModel = "$(touch /tmp/pwned)`id`;&|<>!#'m\"\\\n\t[x]=y: {z} - *a ${b} </script>\u2028\u2029\u0085\x7f\x01 é 🦊"
	hostileKey2  = "-k' \"$(id)\" \\\\ \r\n# [t] = 'x' ''' \"\"\" ${{ a }} %s %n \u00a0\ufeff"
)

func snippet(t *testing.T, p Params, id string) Snippet {
	t.Helper()
	for _, s := range Snippets(p) {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("no %s snippet", id)
	return Snippet{}
}

// runShell runs a shell snippet with bash, the named commands stubbed to print their arguments
// NUL-separated, and returns the environment it exported and each stub call's arguments.
func runShell(t *testing.T, text string, stubs ...string) (map[string]string, [][]string) {
	t.Helper()
	var script strings.Builder
	for _, s := range stubs {
		script.WriteString(s + "() { printf 'CALL\\0'; printf '%s\\0' \"$@\"; printf 'END\\0'; }\n")
	}
	script.WriteString(text + "\nprintf 'ENV\\0'; env -0\n")
	cmd := exec.Command("bash", "--norc", "--noprofile", "-e", "-c", script.String())
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=/nonexistent", KeyVar + "=from-the-environment"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("bash: %v %s\n%s", err, stderr.String(), text)
	}
	fields := strings.Split(string(out), "\x00")
	env := map[string]string{}
	var calls [][]string
	for i := 0; i < len(fields); i++ {
		switch fields[i] {
		case "CALL":
			var args []string
			for i++; fields[i] != "END"; i++ {
				args = append(args, fields[i])
			}
			calls = append(calls, args)
		case "ENV":
			for _, kv := range fields[i+1:] {
				if k, v, ok := strings.Cut(kv, "="); ok {
					env[k] = v
				}
			}
			return env, calls
		}
	}
	t.Fatalf("no environment from bash:\n%s", text)
	return nil, nil
}

func TestClaudeCodeSnippet(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env, calls := runShell(t, snippet(t, c.p, "claude-code").Text, "claude")
			want := c.key
			if want == "" {
				want = "superfluid"
			}
			for k, v := range map[string]string{"ANTHROPIC_BASE_URL": c.root, "ANTHROPIC_API_KEY": want,
				"ANTHROPIC_MODEL": c.p.Model, "ANTHROPIC_DEFAULT_HAIKU_MODEL": c.p.Model, "ANTHROPIC_SMALL_FAST_MODEL": c.p.Model} {
				if env[k] != v {
					t.Errorf("%s = %q, want %q", k, env[k], v)
				}
			}
			if len(calls) != 1 {
				t.Errorf("claude ran %d times, want once", len(calls))
			}
		})
	}
}

func TestCodexSnippet(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var cfg struct {
				Model         string                       `toml:"model"`
				ModelProvider string                       `toml:"model_provider"`
				Providers     map[string]map[string]string `toml:"model_providers"`
			}
			text := snippet(t, c.p, "codex").Text
			if _, err := toml.Decode(text, &cfg); err != nil {
				t.Fatalf("%v\n%s", err, text)
			}
			prov := cfg.Providers[cfg.ModelProvider]
			if cfg.Model != c.p.Model || cfg.ModelProvider != "superfluid" || prov["base_url"] != c.root+"/v1" || prov["wire_api"] != "responses" {
				t.Errorf("config %+v\n%s", cfg, text)
			}
			// The key reaches Codex through the variable env_key names.
			if c.key == "" {
				if _, ok := prov["env_key"]; ok {
					t.Errorf("env_key %q with no key: Codex would refuse to start without it", prov["env_key"])
				}
				return
			}
			env := map[string]string{KeyVar: "from-the-environment"}
			for _, s := range Snippets(c.p) {
				if s.ID == "codex-env" {
					env, _ = runShell(t, s.Text, "codex")
				}
			}
			if got := env[prov["env_key"]]; got != c.key {
				t.Errorf("Codex reads %q from %s, want %q", got, prov["env_key"], c.key)
			}
		})
	}
}

func TestOllamaSnippet(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env, calls := runShell(t, snippet(t, c.p, "ollama").Text, "ollama")
			if env["OLLAMA_HOST"] != c.root {
				t.Errorf("OLLAMA_HOST = %q, want %q", env["OLLAMA_HOST"], c.root)
			}
			if len(calls) != 1 || strings.Join(calls[0], " ") != "run "+c.p.Model {
				t.Errorf("ollama called with %q", calls)
			}
		})
	}
}

// curlRequest is what a curl snippet asks: the URL, the headers and the body.
func curlRequest(t *testing.T, text string) (url string, headers []string, body map[string]any) {
	t.Helper()
	_, calls := runShell(t, text, "curl")
	if len(calls) != 1 {
		t.Fatalf("curl ran %d times", len(calls))
	}
	args := calls[0]
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "-H":
			i++
			headers = append(headers, args[i])
		case "-d":
			i++
			if err := json.Unmarshal([]byte(args[i]), &body); err != nil {
				t.Fatalf("body %q: %v", args[i], err)
			}
		default:
			url = args[i]
		}
	}
	return url, headers, body
}

func TestCurlSnippet(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			url, headers, body := curlRequest(t, snippet(t, c.p, "curl").Text)
			if url != c.root+"/v1/chat/completions" || body["model"] != c.p.Model {
				t.Errorf("url %q model %v", url, body["model"])
			}
			auth := ""
			for _, h := range headers {
				if v, ok := strings.CutPrefix(h, "Authorization: Bearer "); ok {
					auth = v
				}
			}
			if auth != c.key {
				t.Errorf("curl sends key %q, want %q", auth, c.key)
			}
		})
	}
}

func TestOpenWebUISnippet(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, calls := runShell(t, snippet(t, c.p, "open-webui").Text, "docker")
			if len(calls) != 1 || calls[0][0] != "run" {
				t.Fatalf("docker called with %q", calls)
			}
			env := map[string]string{}
			args := calls[0]
			for i := range args {
				if args[i] == "-e" {
					k, v, _ := strings.Cut(args[i+1], "=")
					env[k] = v
				}
			}
			// Inside the container the host's loopback is host.docker.internal.
			root := strings.NewReplacer("127.0.0.1", "host.docker.internal", "[::1]", "host.docker.internal").Replace(c.root)
			want := c.key
			if want == "" {
				want = "superfluid"
			}
			if env["OPENAI_API_BASE_URL"] != root+"/v1" || env["OLLAMA_BASE_URL"] != root || env["OPENAI_API_KEY"] != want {
				t.Errorf("env %q", env)
			}
		})
	}
}

func TestContinueSnippet(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var cfg struct {
				Models []map[string]any `yaml:"models"`
			}
			text := snippet(t, c.p, "continue").Text
			if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
				t.Fatalf("%v\n%s", err, text)
			}
			if len(cfg.Models) != 1 {
				t.Fatalf("%d models\n%s", len(cfg.Models), text)
			}
			m := cfg.Models[0]
			want := c.key
			if c.p.Key == Placeholder {
				want = "${{ secrets." + KeyVar + " }}"
			}
			key, _ := m["apiKey"].(string)
			if m["provider"] != "openai" || m["apiBase"] != c.root+"/v1" || m["model"] != c.p.Model || key != want {
				t.Errorf("model %v\n%s", m, text)
			}
		})
	}
}

// stubs are fake SDK modules that print what the snippet passed them as JSON lines: the
// client's options, then the request.
var stubs = map[string]string{
	"openai.py": `import json
class _Create:
    def create(self, **kw):
        print(json.dumps(kw))
        class R: pass
        r = R(); m = R(); m.message = R(); m.message.content = ""; r.choices = [m]
        return r
class _Chat:
    completions = _Create()
class OpenAI:
    def __init__(self, **kw):
        print(json.dumps(kw))
        self.chat = _Chat()
`,
	"anthropic.py": `import json
class _Messages:
    def create(self, **kw):
        print(json.dumps(kw))
        class R: pass
        r = R(); b = R(); b.text = ""; r.content = [b]
        return r
class Anthropic:
    def __init__(self, **kw):
        print(json.dumps(kw))
        self.messages = _Messages()
`,
	"node_modules/openai/index.mjs": `export default class OpenAI {
  constructor(o) { console.log(JSON.stringify(o));
    this.chat = { completions: { create: async (r) => { console.log(JSON.stringify(r)); return { choices: [{ message: { content: "" } }] }; } } }; }
}
`,
	"node_modules/@anthropic-ai/sdk/index.mjs": `export default class Anthropic {
  constructor(o) { console.log(JSON.stringify(o));
    this.messages = { create: async (r) => { console.log(JSON.stringify(r)); return { content: [{ text: "" }] }; } }; }
}
`,
	"node_modules/openai/package.json":            `{"name": "openai", "exports": "./index.mjs"}`,
	"node_modules/@anthropic-ai/sdk/package.json": `{"name": "@anthropic-ai/sdk", "exports": "./index.mjs"}`,
}

// runSDK runs an SDK snippet with python3 or node over the stub modules and returns the options
// the client got and the request it sent.
func runSDK(t *testing.T, s Snippet) (opts, req map[string]any) {
	t.Helper()
	bin, file := "python3", "snippet.py"
	if s.Lang == "javascript" {
		bin, file = "node", "snippet.mjs"
	}
	if _, err := exec.LookPath(bin); err != nil {
		t.Skipf("%s is not installed, so the %s snippet is not run", bin, s.Lang)
	}
	dir := t.TempDir()
	for name, text := range stubs {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte(s.Text), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, file)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "PYTHONPATH=" + dir, KeyVar + "=from-the-environment"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s\n%s", bin, err, out, s.Text)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 { // options, request (the printed reply is empty)
		t.Fatalf("output %q", out)
	}
	for i, v := range []*map[string]any{&opts, &req} {
		if err := json.Unmarshal([]byte(lines[i]), v); err != nil {
			t.Fatalf("%q: %v", lines[i], err)
		}
	}
	return opts, req
}

func TestSDKSnippets(t *testing.T) {
	for _, c := range cases {
		for _, sdk := range []struct {
			id, urlField, keyField, path string
		}{
			{"openai-python", "base_url", "api_key", "/v1"},
			{"openai-js", "baseURL", "apiKey", "/v1"},
			{"anthropic-python", "base_url", "api_key", ""},
			{"anthropic-js", "baseURL", "apiKey", ""},
		} {
			t.Run(c.name+"/"+sdk.id, func(t *testing.T) {
				opts, req := runSDK(t, snippet(t, c.p, sdk.id))
				want := c.key
				if want == "" {
					want = "superfluid"
				}
				if opts[sdk.urlField] != c.root+sdk.path || opts[sdk.keyField] != want || req["model"] != c.p.Model {
					t.Errorf("options %v request %v", opts, req)
				}
			})
		}
	}
}

func TestHost(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:8453": "http://127.0.0.1:8453", "0.0.0.0:80": "http://127.0.0.1:80", ":8453": "http://127.0.0.1:8453",
		"[::]:8453": "http://[::1]:8453", "[fe80::1]:1": "http://[fe80::1]:1", "192.168.1.5:8453": "http://192.168.1.5:8453",
		"localhost:8453": "http://localhost:8453",
	} {
		if got := Root(in); got != want {
			t.Errorf("Root(%q) = %q, want %q", in, got, want)
		}
	}
	if !Wildcard("0.0.0.0:1") || !Wildcard("[::]:1") || Wildcard("127.0.0.1:1") {
		t.Error("Wildcard")
	}
}
