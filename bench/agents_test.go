package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestAgentCapture: the embedded Claude Code request is the one the dialect tests replay, and
// the prompt the agents suite sends from it keeps its tools as captured and its system blocks
// with their cache_control, a nonce first.
func TestAgentCapture(t *testing.T) {
	golden, err := os.ReadFile("../server/anthropic/testdata/agents/claude-code-2.1.332-first.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(golden, claudeCodeFirst) {
		t.Fatal("bench/agentdata/claude-code-2.1.332-first.json differs from server/anthropic/testdata/agents/: copy it again")
	}
	p, err := loadAgentPrompt()
	if err != nil {
		t.Fatal(err)
	}
	if p.total != 22 || len(p.tools) != 22 || len(p.system) != 3 {
		t.Fatalf("%d tools (total %d), %d system blocks; want 22 and 3", len(p.tools), p.total, len(p.system))
	}
	data, _ := json.Marshal(p.tools)
	if !strings.Contains(string(data), `"maxLength":524288`) {
		t.Errorf("the tools changed: %.300s", data)
	}
	system, tools := p.with(2, -1, "Session 7.")
	if len(tools) != 2 || len(system) != 3 || !strings.HasPrefix(system[0]["text"].(string), "Session 7. x-anthropic-billing-header") {
		t.Errorf("with 2 tools: %d tools, system %v", len(tools), system)
	}
	if system[1]["cache_control"] == nil {
		t.Errorf("the system blocks lost their cache_control: %v", system[1])
	}
	// Cut to 10 characters of system text: the first block's, and the blocks after it empty
	// (dropped).
	system, _ = p.with(0, 10, "N.")
	if len(system) != 1 || system[0]["text"] != "N. x-anthropi" {
		t.Errorf("cut to 10 characters: %v", system)
	}
	if p.system[0]["text"] == system[0]["text"] {
		t.Error("with changed the capture's own blocks")
	}
}
