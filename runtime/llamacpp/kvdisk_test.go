package llamacpp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
)

// loadKV loads a private engine whose prefix cache on disk is dir (capped at limit; 0 means
// the default).
func loadKV(t *testing.T, dir string, parallel int, limit int64) *Engine {
	t.Helper()
	e, err := Load(Options{ModelPath: testModelPath, ContextLength: testCtx, Parallel: parallel, KVDir: dir, KVDiskMax: limit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// story is a text of at least n tokens starting with seed; different seeds share nothing
// past their first token (BOS).
func story(t *testing.T, e *Engine, seed string, n int) string {
	t.Helper()
	words := []string{" the", " cat", " sat", " on", " a", " mat", " and", " ran", " to", " the", " big", " park", "."}
	text := seed
	for i := 0; len(tokenize(t, e, text)) < n; i++ {
		text += words[i%len(words)]
	}
	return text
}

// kvFiles lists dir's saved prefixes (and, with temps, its temp files).
func kvFiles(t *testing.T, dir string, temps bool) []string {
	t.Helper()
	items, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, it := range items {
		if strings.HasSuffix(it.Name(), kvExt) || (temps && strings.HasSuffix(it.Name(), kvTmpExt)) {
			names = append(names, it.Name())
		}
	}
	return names
}

// waitSaved waits until e has written n prefixes.
func waitSaved(t *testing.T, e *Engine, n int) llm.Totals {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tot := totals(t, e)
		if tot.KVSaved >= n {
			return tot
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d prefixes saved, want %d", tot.KVSaved, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// reference is what an engine that never closed answers to prompt and then to prompt+more.
func reference(t *testing.T, prompt, more string, maxTokens int) result {
	t.Helper()
	ref := loadOwn(t, 1)
	mustGenerate(t, ref, greedy(prompt, maxTokens))
	return mustGenerate(t, ref, greedy(prompt+more, maxTokens))
}

// TestKVSavedOnCloseAndRestored: a prefix saved as the engine closes serves the same prompt
// after a reload, as cached and restored tokens, with the output of an engine that never closed.
func TestKVSavedOnCloseAndRestored(t *testing.T) {
	dir := t.TempDir()
	e1 := loadKV(t, dir, 2, 0)
	prompt := story(t, e1, "Lily", 300)
	const more = " Then the cat said"
	first := mustGenerate(t, e1, greedy(prompt, 16))
	if first.started.CacheMiss != llm.CacheMissCold {
		t.Errorf("first request: miss %q, want %q", first.started.CacheMiss, llm.CacheMissCold)
	}
	e1.Close()
	if files := kvFiles(t, dir, false); len(files) != 1 {
		t.Fatalf("after Close the folder holds %v, want one saved prefix", files)
	}
	e2 := loadKV(t, dir, 2, 0)
	r := mustGenerate(t, e2, greedy(prompt+more, 16))
	want := reference(t, prompt, more, 16)
	// The saved prefix is the prompt and the reply; the new prompt goes on from the prompt.
	n := first.started.PromptTokens
	if r.started.RestoredTokens != n || r.started.CachedTokens != n || r.started.CacheMiss != llm.CacheMissDiverged(n) {
		t.Errorf("after reload: cached %d, restored %d, miss %q; want %d, %d and %q", r.started.CachedTokens, r.started.RestoredTokens, r.started.CacheMiss, n, n, llm.CacheMissDiverged(n))
	}
	if r.done.RestoredTokens != r.started.RestoredTokens || r.done.CacheMiss != r.started.CacheMiss {
		t.Errorf("Done says restored %d miss %q, Started %d %q", r.done.RestoredTokens, r.done.CacheMiss, r.started.RestoredTokens, r.started.CacheMiss)
	}
	if r.text != want.text {
		t.Errorf("restored engine says %q, the one that never closed %q", r.text, want.text)
	}
	tot := totals(t, e2)
	if tot.KVRestored != 1 || tot.KVRestoredTokens != r.started.RestoredTokens || tot.KVDiskBytes <= 0 {
		t.Errorf("totals %+v: want 1 restore of %d tokens and the folder's size", tot, r.started.RestoredTokens)
	}
}

// TestKVEvictionSavesAndRestores: a lane taken for another prompt saves its prefix, which a
// later request restores; with the disk off the same request says its prefix was evicted.
func TestKVEvictionSavesAndRestores(t *testing.T) {
	needStories(t)
	dir := t.TempDir()
	e := loadKV(t, dir, 1, 0)
	a, b := story(t, e, "Tom", 200), story(t, e, "Sue", 200)
	mustGenerate(t, e, greedy(a, 8))
	mustGenerate(t, e, greedy(b, 8)) // takes the only lane: a is saved
	waitSaved(t, e, 1)
	// The conversation goes on: the next prompt holds the reply, so all of it is restored.
	first := mustGenerate(t, loadOwn(t, 1), greedy(a, 8))
	more := first.text + " more"
	r := mustGenerate(t, e, greedy(a+more, 8))
	if want := first.started.PromptTokens + first.done.Usage.CompletionTokens - 1; r.started.RestoredTokens < want || r.started.CacheMiss != "" {
		t.Errorf("after eviction: restored %d, miss %q; want ≥ %d and none", r.started.RestoredTokens, r.started.CacheMiss, want)
	}
	if want := reference(t, a, more, 8); r.text != want.text {
		t.Errorf("restored %q, never evicted %q", r.text, want.text)
	}
	s, err := e.Slots(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.Totals.KVSaved < 1 || s.Lanes[0].LastMiss != "" {
		t.Errorf("slots %+v: want a save and no miss on the lane", s)
	}

	off := loadOwn(t, 1)
	mustGenerate(t, off, greedy(a, 8))
	mustGenerate(t, off, greedy(b, 8))
	r = mustGenerate(t, off, greedy(a+" more", 8))
	if r.started.CacheMiss != llm.CacheMissEvicted || r.started.RestoredTokens != 0 {
		t.Errorf("disk off: miss %q restored %d, want %q", r.started.CacheMiss, r.started.RestoredTokens, llm.CacheMissEvicted)
	}
	if s, _ := off.Slots(context.Background()); s.Lanes[0].LastMiss != llm.CacheMissEvicted {
		t.Errorf("disk off: lane's last miss %q, want %q", s.Lanes[0].LastMiss, llm.CacheMissEvicted)
	}
}

// TestKVSharedSystemPrompt: two conversations with one system prompt share its saved prefix.
func TestKVSharedSystemPrompt(t *testing.T) {
	needStories(t)
	dir := t.TempDir()
	e := loadKV(t, dir, 1, 0)
	system := story(t, e, "Ann", 150)
	n := len(tokenize(t, e, system))
	mustGenerate(t, e, greedy(system+" Question one:", 8))
	mustGenerate(t, e, greedy(story(t, e, "Bob", 150), 8))
	waitSaved(t, e, 1)
	r := mustGenerate(t, e, greedy(system+" Question two:", 8))
	if r.started.RestoredTokens < n || r.started.RestoredTokens > n+8 { // " Question" is shared too
		t.Errorf("restored %d tokens, want the system prompt's %d", r.started.RestoredTokens, n)
	}
	if !strings.HasPrefix(r.started.CacheMiss, "diverged at token ") {
		t.Errorf("miss %q, want it to say where the conversations diverge", r.started.CacheMiss)
	}
	ref := loadOwn(t, 1)
	if want := mustGenerate(t, ref, greedy(system+" Question two:", 8)); r.text != want.text {
		t.Errorf("restored %q, computed %q", r.text, want.text)
	}
}

// TestKVReadOnlyDir: when the folder cannot be written, serving goes on and one warning says so.
func TestKVReadOnlyDir(t *testing.T) {
	var warnings strings.Builder
	kvWarnings = &warnings
	defer func() { kvWarnings = os.Stderr }()
	dir := filepath.Join(t.TempDir(), "kv")
	e := loadKV(t, dir, 1, 0)
	// The folder turns into a file: every write fails, for root too.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, seed := range []string{"Tom", "Sue", "Max", "Amy"} {
		mustGenerate(t, e, greedy(story(t, e, seed, 100), 4))
	}
	e.Close()
	if n := strings.Count(warnings.String(), "cannot save prefixes"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, warnings.String())
	}
}

// TestKVCapKeepsFolderSmall: past the cap the least recently used prefixes go first.
func TestKVCapKeepsFolderSmall(t *testing.T) {
	dir := t.TempDir()
	probe := loadKV(t, dir, 1, 0)
	mustGenerate(t, probe, greedy(story(t, probe, "Zed", 100), 2))
	probe.Close()
	files := kvFiles(t, dir, false)
	if len(files) != 1 {
		t.Fatalf("probe saved %v", files)
	}
	st, err := os.Stat(filepath.Join(dir, files[0]))
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, files[0]))
	limit := st.Size() * 5 / 2 // room for two
	e := loadKV(t, dir, 1, limit)
	seeds := []string{"Tom", "Sue", "Max", "Amy", "Kim"}
	for i, seed := range seeds {
		mustGenerate(t, e, greedy(story(t, e, seed, 100), 2))
		if i > 0 {
			waitSaved(t, e, i) // every request evicts the one before it
		}
		time.Sleep(20 * time.Millisecond) // distinct mtimes
	}
	var total int64
	for _, f := range kvFiles(t, dir, false) {
		if st, err := os.Stat(filepath.Join(dir, f)); err == nil {
			total += st.Size()
		}
	}
	if total > limit || len(kvFiles(t, dir, false)) != 2 {
		t.Errorf("folder holds %d bytes in %v, want two files under %d", total, kvFiles(t, dir, false), limit)
	}
	if tot := totals(t, e); tot.KVDiskBytes != total {
		t.Errorf("KVDiskBytes %d, the folder %d", tot.KVDiskBytes, total)
	}
	// The newest two (Max, Amy) stayed; Tom's went first.
	r := mustGenerate(t, e, greedy(story(t, e, "Tom", 100)+" more", 2))
	if r.started.RestoredTokens != 0 || r.started.CacheMiss != llm.CacheMissEvicted {
		t.Errorf("Tom after the cap: restored %d miss %q, want 0 and %q", r.started.RestoredTokens, r.started.CacheMiss, llm.CacheMissEvicted)
	}
	r = mustGenerate(t, e, greedy(story(t, e, "Amy", 100)+" more", 2))
	if r.started.RestoredTokens == 0 {
		t.Errorf("Amy after the cap: nothing restored (miss %q)", r.started.CacheMiss)
	}
}
