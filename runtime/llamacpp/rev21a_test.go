package llamacpp

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/llm"
)

// TestRev21aMissReasonAcrossPartitions: the "evicted" miss reason compares the prompt with
// every dropped prefix (kvDisk.dropped, the store's gone list) whatever its cache partition, so
// in team mode bob learns from his own request's cache_miss (the record, and /slots'
// lanes[].last_miss, which any key that may use the model reads) that someone else sent a
// prompt starting like his: a prompt-membership oracle across people. For bob it is "cold".
func TestRev21aMissReasonAcrossPartitions(t *testing.T) {
	e := loadOwn(t, 1) // the disk cache off: every dropped prefix is remembered
	as := func(prompt, partition string) *llm.Request {
		r := greedy(prompt, 2)
		r.CachePartition = partition
		return r
	}
	secret := story(t, e, "Jim", 120)
	mustGenerate(t, e, as(secret, "alice"))
	mustGenerate(t, e, as(story(t, e, "Sue", 120), "alice")) // alice's next prompt drops the first
	r := mustGenerate(t, e, as(secret+" more", "bob"))
	if r.started.CacheMiss != llm.CacheMissCold {
		t.Errorf("bob's first prompt: miss %q, want %q (the reason tells him alice sent it)", r.started.CacheMiss, llm.CacheMissCold)
	}
	s, err := e.Slots(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Lanes[r.started.Lane].LastMiss; got != llm.CacheMissCold {
		t.Errorf("/slots last_miss after bob's prompt %q, want %q", got, llm.CacheMissCold)
	}
}

// TestRev21aFIFOInKVDir: openKVStore opens every *.kv entry of the shared folder to read its
// header, following symlinks and without checking it is a regular file: a FIFO (or a symlink
// to one) named x.kv blocks os.Open forever, so the worker never says hello. Entries that are
// not regular files should be skipped.
func TestRev21aFIFOInKVDir(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "x.kv")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	loaded := make(chan *Engine, 1)
	go func() {
		e, err := Load(Options{ModelPath: testModelPath, ContextLength: testCtx, Parallel: 1, KVDir: dir})
		if err != nil {
			t.Error(err)
		}
		loaded <- e
	}()
	select {
	case e := <-loaded:
		if e != nil {
			e.Close()
		}
	case <-time.After(5 * time.Second):
		// Unblock the reader so the test process can go on.
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		if e := <-loaded; e != nil {
			e.Close()
		}
		t.Fatal("Load blocked on a FIFO in the KV folder")
	}
}

// TestRev21aNoCachePromptNotSaved: a request that asked for no cache (cache_prompt: false,
// llm.Request.NoCache) still leaves its prompt in its lane, and the disk cache writes that
// lane out (at Close, or when the lane is taken): the prompt of a caller who opted out of
// caching is kept on disk across restarts, and served warm to the next request of the
// partition.
func TestRev21aNoCachePromptNotSaved(t *testing.T) {
	dir := t.TempDir()
	e := loadKV(t, dir, 1, 0)
	req := greedy(story(t, e, "Jim", 120), 2)
	req.NoCache = true
	mustGenerate(t, e, req)
	e.Close()
	if files := kvFiles(t, dir, false); len(files) != 0 {
		t.Errorf("a no-cache request's prompt was saved to disk: %v", files)
	}
}

// TestRev21aKeyNamesTheEngineBuild: the state layout is llama.cpp's, so the settings that key
// a saved prefix must name the build (see TestRev21aStateAborts).
func TestRev21aKeyNamesTheEngineBuild(t *testing.T) {
	st, err := os.Stat(testModelPath)
	if err != nil {
		t.Fatal(err)
	}
	if s := kvSettings(st, llm.ModelInfo{}); !strings.Contains(s, "engine=") || strings.HasSuffix(s, "engine=") {
		t.Errorf("kvSettings %q does not name the llama.cpp build", s)
	} else {
		t.Log(s)
	}
}
