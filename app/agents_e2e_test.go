package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/tray/connect"
)

// Pinned in scripts/agents/package.json; the fixtures are named after them.
const (
	claudeCodeVersion = "claude-code-2.1.332"
	codexVersion      = "codex-0.171.0"
)

// TestAgents runs Claude Code and the Codex CLI, unmodified, against a real App on a real
// listener: a free turn each on a real worker whose model ends every reply, then a full tool
// loop each on the scripted model: the first reply thinks, then makes a <tool_call> the agent
// really runs (a shell command writing a file in its working directory); the reply to the tool
// result is a final text. It proves the agents' whole protocol (tool calls out, results and
// thinking back, streaming, stop reasons), not just a first reply. Each skips, saying why, when its agent is not installed.
func TestAgents(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the coding agents (seconds each)")
	}
	dir, why := agentsDir()
	if dir == "" {
		t.Skip(why)
	}
	claude, noClaude := findAgent(dir, "claude")
	codex, noCodex := findAgent(dir, "codex")
	if claude == "" && codex == "" {
		t.Skipf("%s; %s", noClaude, noCodex)
	}
	s := startAgentServer(t)

	t.Run("claude-code/free-turn", func(t *testing.T) {
		skipWithout(t, claude, noClaude)
		from := s.log.len()
		runClaude(t, s, t.TempDir(), claude, eotModel, "Say hi").check(t, s, from)
		mustGenerate(t, s, from, "/v1/messages", eotModel)
	})
	t.Run("claude-code/tool-loop", func(t *testing.T) {
		skipWithout(t, claude, noClaude)
		const file, done = "made-by-claude.txt", "The file made-by-claude.txt is written."
		s.setScript(loopScript("Bash", map[string]any{"command": "echo hello > " + file, "description": "Write the file"}, done))
		dir, from := t.TempDir(), s.log.len()
		run := runClaude(t, s, dir, claude, scriptedModel, "Write hello into "+file+" with the Bash tool.", "--allowedTools", "Bash")
		run.check(t, s, from)
		checkLoop(t, s, from, run, "/v1/messages", filepath.Join(dir, file), done)
		record(t, "../server/anthropic/testdata/agents", claudeCodeVersion+"-loop", generations(s.log.since(from), "/v1/messages"))
	})
	t.Run("codex/free-turn", func(t *testing.T) {
		skipWithout(t, codex, noCodex)
		from := s.log.len()
		runCodex(t, s, t.TempDir(), codex, eotModel, "Say hi").check(t, s, from)
		mustGenerate(t, s, from, "/v1/responses", eotModel)
	})
	t.Run("codex/tool-loop", func(t *testing.T) {
		skipWithout(t, codex, noCodex)
		const file, done = "made-by-codex.txt", "The file made-by-codex.txt is written."
		s.setScript(loopScript("exec_command", map[string]any{"cmd": "echo hello > " + file}, done))
		dir, from := t.TempDir(), s.log.len()
		run := runCodex(t, s, dir, codex, scriptedModel, "Write hello into "+file+" with exec_command.")
		run.check(t, s, from)
		checkLoop(t, s, from, run, "/v1/responses", filepath.Join(dir, file), done)
		record(t, "../server/openai/testdata/agents", codexVersion+"-loop", generations(s.log.since(from), "/v1/responses"))
	})
}

func skipWithout(t *testing.T, bin, why string) {
	if bin == "" {
		t.Skip(why)
	}
}

// runClaude is `claude -p PROMPT --model MODEL [ARGS]` against the server. The loop passes
// --allowedTools Bash, which lets it run Bash without asking (--dangerously-skip-permissions
// refuses root outside a sandbox).
func runClaude(t *testing.T, s *agentServer, dir, bin, model, prompt string, args ...string) agentRun {
	var env []string
	for _, kv := range connect.ClaudeCodeAuth(s.URL, "sk-ant-test") { // what the Connect tab shows
		env = append(env, kv[0]+"="+kv[1])
	}
	return runAgent(t, dir, bin, append([]string{"-p", prompt, "--model", model}, args...), append(env,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
		"CLAUDE_CODE_MAX_RETRIES=0", "API_TIMEOUT_MS=60000")...)
}

// runCodex is `codex exec PROMPT` with a model provider on the server's Responses API.
func runCodex(t *testing.T, s *agentServer, dir, bin, model, prompt string) agentRun {
	home := t.TempDir()
	// The Connect tab's config.toml, plus no retries (a failure shows at once).
	config := connect.CodexConfig(model, s.URL+"/v1", "SUPERFLUID_KEY") + `request_max_retries = 0
stream_max_retries = 0
`
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return runAgent(t, dir, bin, []string{"exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--color", "never", prompt},
		"CODEX_HOME="+home, "SUPERFLUID_KEY=sk-test")
}

// loopScript answers a prompt without a tool result with a call of tool (in the template's
// <tool_call> syntax, which the server's parser turns into the dialect's tool call), and one
// holding the call's result with done; each reply thinks first (<think>, which the server
// turns into the dialect's thinking or reasoning, and the agent sends back).
func loopScript(tool string, args map[string]any, done string) func(string) string {
	call, err := json.Marshal(map[string]any{"name": tool, "arguments": args})
	if err != nil {
		panic(err)
	}
	return func(prompt string) string {
		if strings.Contains(prompt, "<tool_response>") {
			return "<think>\nThe command ran; the file is there.\n</think>\n\n" + done
		}
		return "<think>\nA shell command writes the file.\n</think>\n\n<tool_call>\n" + string(call) + "\n</tool_call>"
	}
}

// mustGenerate checks the run asked model for a reply at path and every such request got 200.
func mustGenerate(t *testing.T, s *agentServer, from int, path, model string) {
	t.Helper()
	xs := s.log.since(from)
	t.Logf("requests:\n%s", describe(xs))
	gens := generations(xs, path)
	asked := false
	for _, x := range gens {
		var req struct {
			Model string `json:"model"`
		}
		_ = json.Unmarshal(x.Body, &req)
		asked = asked || req.Model == model
		if x.Status != 200 {
			t.Errorf("%s %s got %d\n%s", x.Method, x.Path, x.Status, describe(xs))
		}
	}
	if !asked {
		t.Errorf("no request for %s at %s\n%s", model, path, describe(xs))
	}
}

// checkLoop checks a tool loop: the file the tool call writes exists, the agent printed done,
// and the server answered at least two generations (the call, then the text after its result),
// every one with 200.
func checkLoop(t *testing.T, s *agentServer, from int, run agentRun, path, file, done string) {
	t.Helper()
	xs := s.log.since(from)
	t.Logf("requests:\n%s--- stdout\n%s", describe(xs), clipText(run.stdout, 2000))
	gens := generations(xs, path)
	if len(gens) < 2 {
		t.Errorf("%d generations at %s, want the call and the reply to its result\n%s", len(gens), path, describe(xs))
	}
	for _, x := range gens {
		if x.Status != 200 {
			t.Errorf("%s %s got %d\n%s", x.Method, x.Path, x.Status, describe(xs))
		}
	}
	if b, err := os.ReadFile(file); err != nil || strings.TrimSpace(string(b)) != "hello" {
		t.Errorf("the tool call did not write %s: %q, %v\n--- stdout\n%s\n--- stderr\n%s", file, b, err,
			clipText(run.stdout, 4000), clipText(run.stderr, 4000))
	}
	if !strings.Contains(run.stdout, done) {
		t.Errorf("the agent's output lacks %q\n--- stdout\n%s\n--- stderr\n%s\n--- requests\n%s", done,
			clipText(run.stdout, 4000), clipText(run.stderr, 4000), describe(xs))
	}
}
