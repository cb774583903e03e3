package servertest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// AgentRequest reads a captured agent request (testdata/agents/NAME.json and its
// NAME.headers.json): the body with its model renamed to model, and the headers as name, value
// pairs (for Do). The body is otherwise byte for byte what the agent sent.
func AgentRequest(t testing.TB, file, model string) (string, []string) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var req map[string]json.RawMessage
	if err := json.Unmarshal(raw, &req); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	old, ok := req["model"]
	if !ok {
		t.Fatalf("%s names no model", file)
	}
	name, _ := json.Marshal(model)
	body := strings.Replace(string(raw), `"model": `+string(old), `"model": `+string(name), 1)
	if body == string(raw) {
		body = strings.Replace(string(raw), `"model":`+string(old), `"model":`+string(name), 1)
	}
	if body == string(raw) && string(old) != string(name) {
		t.Fatalf("%s: could not rename its model %s", file, old)
	}
	hraw, err := os.ReadFile(strings.TrimSuffix(file, ".json") + ".headers.json")
	if err != nil {
		t.Fatal(err)
	}
	var hm map[string]string
	if err := json.Unmarshal(hraw, &hm); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var headers []string
	for k, v := range hm {
		headers = append(headers, k, v)
	}
	return body, headers
}

// LoopDone is what app.TestAgents' scripted model answers a tool result with; the replays of
// its recorded loops answer the same.
const LoopDone = "The file is written."

// loopTemplate is the scripted model's template in app.TestAgents: Qwen 3's, whose tool calls
// are <tool_call> blocks and whose reasoning is <think> (relative to a server/X package).
const loopTemplate = "../../runtime/chat/testdata/templates/qwen3.jinja"

// LoopReply is the loop's template and what its model answered: thinking, then the tool call
// (call, the JSON inside <tool_call>) or, once the prompt holds the tool result, the final text.
func LoopReply(t testing.TB, call string, result bool) (template, reply string) {
	t.Helper()
	b, err := os.ReadFile(loopTemplate)
	if err != nil {
		t.Fatal(err)
	}
	reply = "<think>\nA shell command writes the file.\n</think>\n\n<tool_call>\n" + call + "\n</tool_call>"
	if result {
		reply = "<think>\nThe command ran.\n</think>\n\n" + LoopDone
	}
	return string(b), reply
}

// LoopRequests are the recorded request bodies matching glob (their .headers.json files left
// out): at least the loop's first and the one carrying the tool result.
func LoopRequests(t testing.TB, glob string) []string {
	t.Helper()
	files, err := filepath.Glob(glob)
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, f := range files {
		if !strings.HasSuffix(f, ".headers.json") {
			bodies = append(bodies, f)
		}
	}
	if len(bodies) < 2 {
		t.Fatalf("want the loop's requests (the first and the one with the tool result) for %s, found %q", glob, files)
	}
	return bodies
}
