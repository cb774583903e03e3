package llamacpp

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
)

// savedPrefix makes dir hold one saved prefix of prompt and returns its path.
func savedPrefix(t *testing.T, dir, prompt string) string {
	t.Helper()
	e := loadKV(t, dir, 1, 0)
	mustGenerate(t, e, greedy(prompt, 4))
	e.Close()
	files := kvFiles(t, dir, false)
	if len(files) != 1 {
		t.Fatalf("saved %v, want one file", files)
	}
	return filepath.Join(dir, files[0])
}

// rewrite re-encodes the file at path after change edits its entry and payload.
func rewrite(t *testing.T, path string, change func(*kvEntry, []byte) []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ent, start, err := kvHeader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	payload := change(ent, append([]byte(nil), data[start:len(data)-4]...))
	if err := os.WriteFile(path, encodeKV(ent, payload), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestKVBadFiles: a saved prefix that does not check is a miss, never a crash, and the request
// answers as if nothing had been saved.
func TestKVBadFiles(t *testing.T) {
	cases := []struct {
		name     string
		spoil    func(t *testing.T, path string)
		miss     string
		keepFile bool // a newer format's file is skipped, not deleted
	}{
		{"other model", func(t *testing.T, path string) {
			rewrite(t, path, func(e *kvEntry, p []byte) []byte { e.model = "/elsewhere/other.gguf"; return p })
		}, llm.CacheMissCold, true},
		{"other settings", func(t *testing.T, path string) {
			rewrite(t, path, func(e *kvEntry, p []byte) []byte { e.settings += " kv=q8_0"; return p })
		}, llm.CacheMissSettingsChanged, true},
		{"truncated", func(t *testing.T, path string) {
			st, _ := os.Stat(path)
			os.Truncate(path, st.Size()/2)
		}, llm.CacheMissCold, false},
		{"newer version", func(t *testing.T, path string) {
			data, _ := os.ReadFile(path)
			binary.LittleEndian.PutUint32(data[8:], kvVersion+1)
			binary.LittleEndian.PutUint32(data[len(data)-4:], crc32.Checksum(data[:len(data)-4], crc32c))
			os.WriteFile(path, data, 0o644)
		}, llm.CacheMissCold, true},
		{"bit flip", func(t *testing.T, path string) {
			data, _ := os.ReadFile(path)
			data[len(data)/2] ^= 0x10
			os.WriteFile(path, data, 0o644)
		}, llm.CacheMissCold, false},
		{"state llama.cpp refuses", func(t *testing.T, path string) {
			// A valid file whose state names another number of KV streams.
			rewrite(t, path, func(e *kvEntry, p []byte) []byte { binary.LittleEndian.PutUint32(p, 7); return p })
		}, llm.CacheMissCold, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			probe := loadOwn(t, 1)
			prompt := story(t, probe, "Jim", 200)
			path := savedPrefix(t, dir, prompt)
			c.spoil(t, path)
			e := loadKV(t, dir, 1, 0)
			r := mustGenerate(t, e, greedy(prompt+" more", 8))
			if r.started.RestoredTokens != 0 || r.started.CachedTokens != 0 || r.started.CacheMiss != c.miss {
				t.Errorf("restored %d cached %d miss %q; want nothing and %q", r.started.RestoredTokens, r.started.CachedTokens, r.started.CacheMiss, c.miss)
			}
			if want := mustGenerate(t, probe, greedy(prompt+" more", 8)); r.text != want.text {
				t.Errorf("answered %q, want %q", r.text, want.text)
			}
			if _, err := os.Stat(path); (err == nil) != c.keepFile {
				t.Errorf("the file is there: %v, want %v", err == nil, c.keepFile)
			}
		})
	}
}

const killChildEnv = "SUPERFLUID_KVDISK_KILL_CHILD"

// TestKVKilledMidWrite: a writer killed (SIGKILL) while a prefix is half written leaves a temp
// file that is never used and is removed at the next Load.
func TestKVKilledMidWrite(t *testing.T) {
	if dir := os.Getenv(killChildEnv); dir != "" {
		// The child: save a prefix and stop halfway through writing it.
		kvWriteHook = func(tmp string) {
			os.Stdout.WriteString("half written\n")
			time.Sleep(time.Hour)
		}
		e := loadKV(t, dir, 1, 0)
		mustGenerate(t, e, greedy(story(t, e, "Kat", 200), 4))
		e.Close()
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKVKilledMidWrite$")
	cmd.Env = append(os.Environ(), killChildEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	found := false
	for lines.Scan() {
		if strings.Contains(lines.Text(), "half written") {
			found = true
			break
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if !found {
		t.Fatal("the child never reached the middle of its write")
	}
	if temps, saved := kvFiles(t, dir, true), kvFiles(t, dir, false); len(temps) != 1 || len(saved) != 0 {
		t.Fatalf("after the kill the folder holds %v, want one temp file and no saved prefix", temps)
	}
	e := loadKV(t, dir, 1, 0)
	if left := kvFiles(t, dir, true); len(left) != 0 {
		t.Errorf("Load left %v", left)
	}
	probe := loadOwn(t, 1)
	prompt := story(t, probe, "Kat", 200)
	r := mustGenerate(t, e, greedy(prompt, 4))
	if r.started.RestoredTokens != 0 || r.started.CacheMiss != llm.CacheMissCold {
		t.Errorf("restored %d, miss %q after the kill; want 0 and %q", r.started.RestoredTokens, r.started.CacheMiss, llm.CacheMissCold)
	}
	if want := mustGenerate(t, probe, greedy(prompt, 4)); r.text != want.text {
		t.Errorf("answered %q, want %q", r.text, want.text)
	}
}
