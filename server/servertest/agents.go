package servertest

import (
	"encoding/json"
	"os"
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
