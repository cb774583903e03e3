package llamacpp

import (
	"encoding/binary"
	"os"
	"os/exec"
	"strings"
	"testing"
)

const rev21aAbortEnv = "REV21A_ABORT_CHILD"

// TestRev21aStateAborts: llama_state_seq_set_data trusts the cell metadata of the state it is
// given: a saved prefix whose checksum is right but whose first cell's position is -2 makes
// llama.cpp abort the process (llama-kv-cells.h: Assertion `(pos[i] < 0 && pos[i] == -1) ||
// pos[i] >= 0'), which no recover catches. The file stays in the folder, so every later
// request starting with that prefix kills the worker again. Such a state is what a hostile
// file holds, and what a state written by another llama.cpp build can read as: kvSettings
// does not name the llama.cpp build (nor kvVersion change with it), so an upgrade that changes
// the state layout feeds the old files to the new reader. The state's metadata must be
// checked before it is handed over (cell count = the header's tokens, positions 0..n-1 once
// each, one seq id per cell), and the key must name the engine build.
func TestRev21aStateAborts(t *testing.T) {
	if dir := os.Getenv(rev21aAbortEnv); dir != "" {
		probe := loadOwn(t, 1)
		prompt := story(t, probe, "Jim", 200)
		path := savedPrefix(t, dir, prompt)
		rewrite(t, path, func(e *kvEntry, p []byte) []byte {
			// n_stream (u32), cell_count (u32), then per cell pos (i32), n_seq_id (u32), seq_id.
			binary.LittleEndian.PutUint32(p[8:], 0xfffffffe) // the first cell at position -2
			return p
		})
		e := loadKV(t, dir, 1, 0)
		mustGenerate(t, e, greedy(prompt+" more", 4))
		os.Stdout.WriteString("child survived\n")
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRev21aStateAborts$", "-test.v")
	cmd.Env = append(os.Environ(), rev21aAbortEnv+"="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "child survived") {
		lines := strings.Split(string(out), "\n")
		var tail []string
		for _, l := range lines {
			if strings.Contains(l, "Assertion") || strings.Contains(l, "SIGABRT") || strings.Contains(l, "rev21a") {
				tail = append(tail, l)
			}
		}
		t.Fatalf("restoring a state whose first cell is at position -2 killed the worker (%v):\n%s", err, strings.Join(tail, "\n"))
	}
}
