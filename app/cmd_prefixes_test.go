package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/server/store"
)

// TestPrefixesCommand: superfluid prefixes add (a text, or a file read exactly), list and rm on
// a data directory, each write audited as the CLI's; bad input exits with 2.
func TestPrefixesCommand(t *testing.T) {
	data := t.TempDir()
	file := filepath.Join(data, "system.txt")
	if err := os.WriteFile(file, []byte("You are the team's assistant.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := cli("prefixes", "add", "--file", file, "--name", "team", "--data-dir", data)
	fromFile := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(fromFile, "sp-") || !strings.Contains(errOut, "30 bytes for every model") {
		t.Fatalf("add --file: %d %q %q", code, out, errOut)
	}
	code, out, _ = cli("prefixes", "add", "Answer briefly.", "--model", "qwen", "--data-dir", data)
	inline := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(inline, "sp-") {
		t.Fatalf("add TEXT: %d %q", code, out)
	}
	code, out, _ = cli("prefixes", "list", "--data-dir", data)
	if code != 0 || !strings.Contains(out, fromFile) || !strings.Contains(out, inline) || !strings.Contains(out, `"Answer briefly."`) || !strings.Contains(out, "qwen") {
		t.Fatalf("list: %d %s", code, out)
	}
	for _, args := range [][]string{
		{"prefixes", "add", "  "},
		{"prefixes", "add"},
		{"prefixes", "add", "text", "--file", file},
		{"prefixes", "add", "--file", filepath.Join(data, "missing.txt")},
		{"prefixes", "rm", "sp-nope"},
		{"prefixes", "rm"},
		{"prefixes", "frobnicate"},
	} {
		if code, _, errOut := cli(append(args, "--data-dir", data)...); code != 2 {
			t.Errorf("%v: exit %d (%s), want 2", args, code, errOut)
		}
	}
	if code, out, errOut := cli("prefixes", "rm", inline, "--data-dir", data); code != 0 || !strings.Contains(out, inline) {
		t.Fatalf("rm: %d %q %q", code, out, errOut)
	}
	if code, out, _ := cli("prefixes", "list", "--data-dir", data); code != 0 || strings.Contains(out, inline) || !strings.Contains(out, fromFile) {
		t.Fatalf("list after rm: %d %s", code, out)
	}
	st, err := store.Open(databasePath(data))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	entries, err := st.Audit(context.Background(), store.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range entries {
		actions = append(actions, e.Action+" "+e.Target+" "+string(e.Detail))
	}
	if len(actions) != 3 || !strings.HasPrefix(actions[0], "shared_prefix.remove "+inline) || !strings.Contains(actions[0], `"via":"cli"`) {
		t.Errorf("audit log: %q", actions)
	}
}
