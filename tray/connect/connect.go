// Package connect writes the ready-to-copy setup that points other apps (Claude Code, the Codex
// CLI, the OpenAI and Anthropic SDKs, ollama clients, Continue, Open WebUI, curl) at the
// bundled server. It is plain Go with no toolkit so the snippets are unit-tested by parsing
// them, and the agent tests in app/ use the same values the panel shows.
package connect

import (
	"net"
	"regexp"
	"strconv"
	"strings"
)

// KeyVar is the environment variable the snippets read the key from when the user has not
// pasted one: Placeholder is how the panel's key field shows it.
const (
	KeyVar      = "SUPERFLUID_API_KEY"
	Placeholder = "$" + KeyVar
)

// Params are what every snippet is made of.
type Params struct {
	// Address is the server's host:port as it binds it (0.0.0.0, [::] and "" become loopback).
	Address string
	// Key is the API key: "" when the server needs none, "$NAME" to read it from the
	// environment variable NAME, else the key itself (quoted safely in every snippet).
	Key string
	// Model is the model id the clients ask for.
	Model string
}

// Snippet is one app's setup.
type Snippet struct {
	ID    string // claude-code, codex, codex-env, openai-python, ...
	Title string
	// Lang is what Text is written in: shell, toml, python, javascript or yaml.
	Lang string
	Text string
	// Note says where it goes, in a few words.
	Note string
}

// Host is the host clients reach the server at, with brackets for IPv6; wildcard binds become
// the loopback address of the same family (an app on this machine always reaches them there).
func Host(address string) string {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		host = strings.Trim(address, "[]")
	}
	switch host {
	case "", "0.0.0.0":
		return "127.0.0.1"
	case "::":
		return "[::1]"
	}
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}

// Wildcard reports whether the server listens on every address, so other machines can reach it
// at this machine's own address too.
func Wildcard(address string) bool {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		host = address
	}
	return host == "" || host == "0.0.0.0" || host == "::"
}

// Root is the server's URL without a path (http://host:port): Anthropic's and Ollama's clients
// add their own paths.
func Root(address string) string {
	_, port, err := net.SplitHostPort(address)
	if err != nil || port == "" {
		port = "8453"
	}
	return "http://" + Host(address) + ":" + port
}

// BaseURL is the OpenAI-compatible base URL (Root + /v1).
func BaseURL(address string) string { return Root(address) + "/v1" }

var envName = regexp.MustCompile(`^\$[A-Za-z_][A-Za-z0-9_]*$`)

// keyVar is the environment variable a "$NAME" key names, else "".
func (p Params) keyVar() string {
	if envName.MatchString(p.Key) {
		return p.Key[1:]
	}
	return ""
}

// ClaudeCodeAuth is how Claude Code reaches the server: its Anthropic base URL (no /v1) and the
// key (any key when the server needs none: Claude Code asks to log in without one). The real
// Claude Code test (app/agents_e2e_test.go) runs with exactly these. Values are literal.
func ClaudeCodeAuth(root, key string) [][2]string {
	if key == "" {
		key = "superfluid"
	}
	return [][2]string{{"ANTHROPIC_BASE_URL", root}, {"ANTHROPIC_API_KEY", key}}
}

// ClaudeCodeEnv is ClaudeCodeAuth plus the model for every tier (background tasks use the
// small one) and no calls home.
func ClaudeCodeEnv(root, key, model string) [][2]string {
	return append(ClaudeCodeAuth(root, key), [][2]string{
		{"ANTHROPIC_MODEL", model},
		{"ANTHROPIC_DEFAULT_SONNET_MODEL", model},
		{"ANTHROPIC_DEFAULT_OPUS_MODEL", model},
		{"ANTHROPIC_DEFAULT_HAIKU_MODEL", model},
		{"ANTHROPIC_SMALL_FAST_MODEL", model},
		{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"},
	}...)
}

// CodexProvider is the Codex CLI's model provider for the server: the Responses API under
// baseURL, the key from the environment variable keyVar ("" when the server needs none).
func CodexProvider(baseURL, keyVar string) map[string]string {
	p := map[string]string{"name": "superfluid", "base_url": baseURL, "wire_api": "responses"}
	if keyVar != "" {
		p["env_key"] = keyVar
	}
	return p
}

// codexKeys is the order CodexProvider's fields are written in.
var codexKeys = []string{"name", "base_url", "wire_api", "env_key"}

// shellQuote quotes s for a POSIX shell: single quotes keep $, `, \, " and newlines literal.
func shellQuote(s string) string {
	if s != "" && regexp.MustCompile(`^[A-Za-z0-9_./:@%+=,-]+$`).MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellValue is a value in a shell snippet: a "$NAME" key expands, anything else is literal.
func (p Params) shellValue(v string) string {
	if v == p.Key && p.keyVar() != "" {
		return `"` + p.Key + `"`
	}
	return shellQuote(v)
}

// quote is a string literal valid in Python, JavaScript, TOML and YAML alike: JSON's escapes
// (\" \\ \n \uXXXX) mean the same in all four.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r >= 0x7f && r <= 0x9f || r == 0x2028 || r == 0x2029 || r == 0xfeff || r >= 0xfffe && r <= 0xffff:
			// Control characters, and what YAML reads as a line break (U+0085) or refuses (C1
			// controls, a BOM, U+FFFE/U+FFFF) and JavaScript once read as one (U+2028/9).
			b.WriteString(`\u`)
			h := strconv.FormatInt(int64(r), 16)
			b.WriteString(strings.Repeat("0", 4-len(h)) + h)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Snippets is every app's setup for p, in the order the panel shows them.
func Snippets(p Params) []Snippet {
	root, base := Root(p.Address), BaseURL(p.Address)
	model := p.Model
	if model == "" {
		model = "MODEL"
	}
	p.Model = model
	out := []Snippet{
		p.claudeCode(root),
		p.codex(base),
	}
	if env := p.codexEnv(); env != nil {
		out = append(out, *env)
	}
	return append(out,
		p.openAIPython(base), p.openAIJS(base),
		p.anthropicPython(root), p.anthropicJS(root),
		p.ollama(root), p.continueYAML(base), p.openWebUI(root), p.curl(base))
}

func (p Params) exports(env [][2]string) string {
	var b strings.Builder
	for _, kv := range env {
		b.WriteString("export " + kv[0] + "=" + p.shellValue(kv[1]) + "\n")
	}
	return b.String()
}

func (p Params) claudeCode(root string) Snippet {
	return Snippet{ID: "claude-code", Title: "Claude Code", Lang: "shell",
		Text: p.exports(ClaudeCodeEnv(root, p.Key, p.Model)) + "claude\n",
		Note: "Paste in a terminal; Claude Code talks to superfluid's Anthropic API."}
}

// codexVar is the variable Codex reads the key from: the "$NAME" one, else KeyVar.
func (p Params) codexVar() string {
	if v := p.keyVar(); v != "" {
		return v
	}
	if p.Key == "" {
		return ""
	}
	return KeyVar
}

// CodexConfig is the Codex CLI's config.toml making the server its default provider with
// model; the provider table comes last, so a caller may append more of its fields. The real
// Codex test (app/agents_e2e_test.go) runs with it.
func CodexConfig(model, baseURL, keyVar string) string {
	var b strings.Builder
	b.WriteString("model = " + quote(model) + "\nmodel_provider = \"superfluid\"\n\n[model_providers.superfluid]\n")
	prov := CodexProvider(baseURL, keyVar)
	for _, k := range codexKeys {
		if v, ok := prov[k]; ok {
			b.WriteString(k + " = " + quote(v) + "\n")
		}
	}
	return b.String()
}

func (p Params) codex(base string) Snippet {
	return Snippet{ID: "codex", Title: "Codex CLI — ~/.codex/config.toml", Lang: "toml", Text: CodexConfig(p.Model, base, p.codexVar()),
		Note: "Add to ~/.codex/config.toml (the top two lines make superfluid Codex's default)."}
}

// codexEnv exports the key Codex reads, when it is pasted literally.
func (p Params) codexEnv() *Snippet {
	if p.Key == "" || p.keyVar() != "" {
		return nil
	}
	return &Snippet{ID: "codex-env", Title: "Codex CLI — the key", Lang: "shell",
		Text: "export " + KeyVar + "=" + shellQuote(p.Key) + "\ncodex\n",
		Note: "Codex reads the key from " + KeyVar + " (env_key above)."}
}

// pyKey and jsKey are the key as a Python or JavaScript expression.
func (p Params) pyKey(none string) string {
	switch {
	case p.keyVar() != "":
		return `os.environ[` + quote(p.keyVar()) + `]`
	case p.Key == "":
		return quote(none)
	}
	return quote(p.Key)
}

func (p Params) pyImport() string {
	if p.keyVar() != "" {
		return "import os\n"
	}
	return ""
}

func (p Params) jsKey(none string) string {
	switch {
	case p.keyVar() != "":
		return `process.env.` + p.keyVar()
	case p.Key == "":
		return quote(none)
	}
	return quote(p.Key)
}

func (p Params) openAIPython(base string) Snippet {
	return Snippet{ID: "openai-python", Title: "OpenAI SDK — Python", Lang: "python", Note: "pip install openai",
		Text: p.pyImport() + "from openai import OpenAI\n\n" +
			"client = OpenAI(base_url=" + quote(base) + ", api_key=" + p.pyKey("superfluid") + ")\n" +
			"reply = client.chat.completions.create(\n    model=" + quote(p.Model) + ",\n" +
			"    messages=[{\"role\": \"user\", \"content\": \"Hello!\"}],\n)\n" +
			"print(reply.choices[0].message.content)\n"}
}

func (p Params) openAIJS(base string) Snippet {
	return Snippet{ID: "openai-js", Title: "OpenAI SDK — JavaScript", Lang: "javascript", Note: "npm install openai (an ES module)",
		Text: "import OpenAI from \"openai\";\n\n" +
			"const client = new OpenAI({ baseURL: " + quote(base) + ", apiKey: " + p.jsKey("superfluid") + " });\n" +
			"const reply = await client.chat.completions.create({\n  model: " + quote(p.Model) + ",\n" +
			"  messages: [{ role: \"user\", content: \"Hello!\" }],\n});\n" +
			"console.log(reply.choices[0].message.content);\n"}
}

func (p Params) anthropicPython(root string) Snippet {
	return Snippet{ID: "anthropic-python", Title: "Anthropic SDK — Python", Lang: "python", Note: "pip install anthropic",
		Text: p.pyImport() + "import anthropic\n\n" +
			"client = anthropic.Anthropic(base_url=" + quote(root) + ", api_key=" + p.pyKey("superfluid") + ")\n" +
			"reply = client.messages.create(\n    model=" + quote(p.Model) + ",\n    max_tokens=1024,\n" +
			"    messages=[{\"role\": \"user\", \"content\": \"Hello!\"}],\n)\n" +
			"print(reply.content[0].text)\n"}
}

func (p Params) anthropicJS(root string) Snippet {
	return Snippet{ID: "anthropic-js", Title: "Anthropic SDK — JavaScript", Lang: "javascript", Note: "npm install @anthropic-ai/sdk (an ES module)",
		Text: "import Anthropic from \"@anthropic-ai/sdk\";\n\n" +
			"const client = new Anthropic({ baseURL: " + quote(root) + ", apiKey: " + p.jsKey("superfluid") + " });\n" +
			"const reply = await client.messages.create({\n  model: " + quote(p.Model) + ",\n  max_tokens: 1024,\n" +
			"  messages: [{ role: \"user\", content: \"Hello!\" }],\n});\n" +
			"console.log(reply.content[0].text);\n"}
}

func (p Params) ollama(root string) Snippet {
	return Snippet{ID: "ollama", Title: "ollama CLI and Ollama clients", Lang: "shell",
		Note: "Ollama's clients send no API key: they work while the server needs none (no keys on the Keys tab).",
		Text: "export OLLAMA_HOST=" + shellQuote(root) + "\nollama run " + shellQuote(p.Model) + "\n"}
}

func (p Params) continueYAML(base string) Snippet {
	var b strings.Builder
	b.WriteString("name: superfluid\nversion: 0.0.1\nschema: v1\nmodels:\n")
	b.WriteString("  - name: " + quote(p.Model+" (superfluid)") + "\n    provider: openai\n")
	b.WriteString("    model: " + quote(p.Model) + "\n    apiBase: " + quote(base) + "\n")
	switch {
	case p.keyVar() != "":
		b.WriteString("    apiKey: " + quote("${{ secrets."+p.keyVar()+" }}") + "\n")
	case p.Key != "":
		b.WriteString("    apiKey: " + quote(p.Key) + "\n")
	}
	b.WriteString("    roles:\n      - chat\n      - edit\n      - apply\n")
	return Snippet{ID: "continue", Title: "Continue — config.yaml", Lang: "yaml", Text: b.String(),
		Note: "Add the model to ~/.continue/config.yaml (or use it as the whole file)."}
}

// dockerHost is root as a container reaches the host: loopback inside a container is the
// container itself.
func dockerHost(root string) string {
	for _, lo := range []string{"//127.0.0.1:", "//[::1]:", "//localhost:"} {
		if strings.Contains(root, lo) {
			return strings.Replace(root, lo, "//host.docker.internal:", 1)
		}
	}
	return root
}

func (p Params) openWebUI(root string) Snippet {
	host := dockerHost(root)
	key := p.Key
	if key == "" {
		key = "superfluid"
	}
	lines := []string{
		"docker run -d -p 3000:8080",
		"  --add-host=host.docker.internal:host-gateway",
		"  -e OPENAI_API_BASE_URL=" + shellQuote(host+"/v1"),
		"  -e OPENAI_API_KEY=" + p.shellValue(key),
		"  -e OLLAMA_BASE_URL=" + shellQuote(host),
		"  -v open-webui:/app/backend/data --name open-webui",
		"  ghcr.io/open-webui/open-webui:main",
	}
	note := "Then open http://localhost:3000."
	if !strings.Contains(host, "host.docker.internal") {
		note += " The server must listen on an address the container reaches."
	} else if !Wildcard(p.Address) {
		note += " The container reaches the host, not its loopback: bind the server to 0.0.0.0 (Server tab)."
	}
	return Snippet{ID: "open-webui", Title: "Open WebUI (docker)", Lang: "shell", Note: note,
		Text: strings.Join(lines, " \\\n") + "\n"}
}

func (p Params) curl(base string) Snippet {
	body := `{"model": ` + quote(p.Model) + `, "messages": [{"role": "user", "content": "Hello!"}]}`
	lines := []string{"curl " + shellQuote(base+"/chat/completions"), "  -H 'Content-Type: application/json'"}
	if p.Key != "" {
		lines = append(lines, "  -H "+p.authHeader())
	}
	lines = append(lines, "  -d "+shellQuote(body))
	return Snippet{ID: "curl", Title: "curl", Lang: "shell", Note: "A chat completion from a terminal.",
		Text: strings.Join(lines, " \\\n") + "\n"}
}

// authHeader is curl's -H argument for the key, expanding a "$NAME" key.
func (p Params) authHeader() string {
	if p.keyVar() != "" {
		return `"Authorization: Bearer ` + p.Key + `"`
	}
	return shellQuote("Authorization: Bearer " + p.Key)
}
