package models

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models/hf"
	"github.com/superfluid/superfluid/runtime/models/hf/hftest"
	"github.com/superfluid/superfluid/runtime/models/source"
)

func tinyBytes(t *testing.T, seed int64) []byte {
	t.Helper()
	w, err := gguftest.NewTinyLlama(gguftest.TinyLlamaOptions{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := w.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// splitPart is a later part of a split model: split metadata and one tensor.
func splitPart(t *testing.T, no, count int) []byte {
	t.Helper()
	w := gguftest.NewWriter()
	w.AddUint16("split.no", uint16(no))
	w.AddUint16("split.count", uint16(count))
	w.AddTensorF32("extra."+string(rune('a'+no)), []uint64{4}, []float32{1, 2, 3, 4})
	var b bytes.Buffer
	if _, err := w.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestPull(t *testing.T) {
	hub := hftest.New()
	defer hub.Close()
	good := tinyBytes(t, 1)
	hub.AddFile("owner/tiny-GGUF", "tiny-Q8_0.gguf", good)
	hub.AddFile("owner/tiny-GGUF", "tiny-F16.gguf", tinyBytes(t, 2))
	hub.AddFile("owner/split-GGUF", "big-Q4_K_M-00001-of-00003.gguf", good)
	hub.AddFile("owner/split-GGUF", "big-Q4_K_M-00002-of-00003.gguf", splitPart(t, 1, 3))
	hub.AddFile("owner/split-GGUF", "big-Q4_K_M-00003-of-00003.gguf", splitPart(t, 2, 3))
	hub.AddFile("owner/junk-GGUF", "junk-Q4_K_M.gguf", []byte("<html>not a model</html>"))
	hub.AddFile("owner/cut-GGUF", "cut-Q4_K_M.gguf", good[:len(good)/2])
	hub.AddFile("owner/nogguf", "README.md", []byte("# nothing here"))
	client := hf.NewSource(hf.Config{Endpoint: hub.URL(), Backoff: 1})
	f := newFixture(t, 0, Config{}, nil)
	ctx := context.Background()

	var seen []hf.Progress
	e, err := f.mgr.Pull(ctx, client, "hf.co/owner/tiny-GGUF:Q8_0", func(p hf.Progress) { seen = append(seen, p) })
	if err != nil {
		t.Fatal(err)
	}
	if e.ID != "hf.co/owner/tiny-GGUF:Q8_0" || e.Source != "huggingface" || e.Repo != "owner/tiny-GGUF" || e.File != "tiny-Q8_0.gguf" ||
		e.Revision != hftest.Commit || e.SHA256 != hub.SHA256("owner/tiny-GGUF", "tiny-Q8_0.gguf") || !strings.HasPrefix(e.Path, f.cat.Dir()) {
		t.Fatalf("entry %+v", e.Record)
	}
	if len(seen) == 0 || seen[len(seen)-1].Status != hf.StatusDone {
		t.Fatalf("progress %+v", seen)
	}
	// Named the way users type it, it serves.
	if err := generate(f.handle(t, "owner/tiny-GGUF:Q8_0")); err != nil {
		t.Fatal(err)
	}
	// Pulling again is a no-op on the network.
	before := hub.Requests("owner/tiny-GGUF", "tiny-Q8_0.gguf")
	if _, err := f.mgr.Pull(ctx, client, "owner/tiny-GGUF:Q8_0", nil); err != nil || hub.Requests("owner/tiny-GGUF", "tiny-Q8_0.gguf") != before {
		t.Fatalf("second pull: %v, requests %d -> %d", err, before, hub.Requests("owner/tiny-GGUF", "tiny-Q8_0.gguf"))
	}

	split, err := f.mgr.Pull(ctx, client, "owner/split-GGUF", nil)
	if err != nil {
		t.Fatal(err)
	}
	if split.ID != "hf.co/owner/split-GGUF:Q4_K_M" || len(split.Facts.Parts) != 3 || !strings.HasSuffix(split.Path, "-00001-of-00003.gguf") {
		t.Fatalf("split entry %+v parts %v", split.Record, split.Facts.Parts)
	}
	for _, p := range split.Facts.Parts {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("part %s: %v", p, err)
		}
	}

	bad := []struct {
		ref  string
		want error
		msg  string
	}{
		{"owner/junk-GGUF", llm.ErrInvalidInput, "not a usable GGUF"},
		{"owner/cut-GGUF", llm.ErrInvalidInput, "truncated"},
		{"owner/tiny-GGUF:Q2_K", llm.ErrInvalidInput, "Q8_0"},
		{"owner/tiny-GGUF", llm.ErrInvalidInput, "F16"}, // two quants, no Q4_K_M: lists them
		{"owner/nogguf", llm.ErrInvalidInput, "GGUF"},
		{"owner/none", llm.ErrModelNotFound, "owner/none"},
		{"llama3.2", llm.ErrInvalidInput, "Hugging Face"},
		{"owner/x/../../etc.gguf", llm.ErrInvalidInput, ".."},
	}
	for _, tt := range bad {
		_, err := f.mgr.Pull(ctx, client, tt.ref, nil)
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("Pull(%q) = %v; want %v mentioning %q", tt.ref, err, tt.want, tt.msg)
		}
	}
	// Nothing of the refused files is registered or left on disk.
	for _, e := range f.cat.List() {
		if strings.Contains(e.ID, "junk") || strings.Contains(e.ID, "cut") {
			t.Errorf("registered %s", e.ID)
		}
	}
	filepath.Walk(f.cat.Dir(), func(p string, info os.FileInfo, err error) error {
		if err == nil && (strings.Contains(p, "junk") || strings.Contains(p, "cut-")) && !info.IsDir() && filepath.Ext(p) != ".lock" {
			t.Errorf("left on disk: %s", p)
		}
		return nil
	})
}

// TestPullFromAHostileHub: an endpoint that answers a revision or file names reaching outside
// the models folder gets nothing written there: the X-Repo-Commit "../../../.." would have put
// the download in the data folder, replacing a file of the same name.
func TestPullFromAHostileHub(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 0, Config{}, nil)
	data := filepath.Dir(f.cat.Dir())
	victim := filepath.Join(data, "victim-Q4_K_M.gguf")
	if err := os.WriteFile(victim, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := treeOf(t, data)
	good := tinyBytes(t, 1)
	hub := hftest.New()
	defer hub.Close()
	client := hf.NewSource(hf.Config{Endpoint: hub.URL(), Backoff: 1})

	for i, commit := range []string{"../../../..", "../../../../victim", "..", "/tmp", `..\..\..\..`, "x/../../../../.."} {
		repo := fmt.Sprintf("owner/victim%d-GGUF", i)
		hub.AddFile(repo, "victim-Q4_K_M.gguf", good)
		hub.SetCommit(repo, commit)
		if e, err := f.mgr.Pull(ctx, client, repo, nil); err == nil || !errors.Is(err, llm.ErrEngineFailure) {
			t.Errorf("commit %q: Pull = %v, %v; want a refusal", commit, e, err)
		}
	}
	// File names from the listing that would leave the folder are never picked.
	for i, name := range []string{"../victim-Q4_K_M.gguf", "/abs/victim-Q4_K_M.gguf", `..\victim-Q4_K_M.gguf`,
		"a/../../victim-Q4_K_M.gguf", "victim\x00-Q4_K_M.gguf", "./victim-Q4_K_M.gguf"} {
		repo := fmt.Sprintf("owner/names%d-GGUF", i)
		hub.AddFile(repo, name, good)
		if e, err := f.mgr.Pull(ctx, client, repo, nil); err == nil {
			t.Errorf("file %q: Pull = %+v, want a refusal", name, e.Record)
		}
	}
	if got, err := os.ReadFile(victim); err != nil || string(got) != "precious" {
		t.Fatalf("the data folder's file was replaced: %d bytes starting %q, %v", len(got), got[:min(len(got), 8)], err)
	}
	if after := treeOf(t, data); !slices.Equal(before, after) {
		t.Errorf("files outside the models folder changed:\nbefore %q\nafter  %q", before, after)
	}
	if n := len(f.cat.List()); n != 0 {
		t.Errorf("registered %d models", n)
	}
	// A sound answer beside the hostile ones still pulls.
	hub.AddFile("owner/names0-GGUF", "victim-Q4_K_M.gguf", good)
	e, err := f.mgr.Pull(ctx, client, "owner/names0-GGUF", nil)
	if err != nil || !f.cat.owns(e.Path) {
		t.Fatalf("sound pull: %v, %v", e, err)
	}
}

// treeOf lists the files under dir outside its models folder, with their sizes.
func treeOf(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "models" {
			return filepath.SkipDir
		}
		if !d.IsDir() && !strings.HasPrefix(d.Name(), "db") {
			info, err := d.Info()
			if err != nil {
				return err
			}
			out = append(out, fmt.Sprintf("%s %d", p, info.Size()))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// folderSource is a source whose Resolve names the folder it is given: the manager, not the
// source, has the last word on where a download goes.
type folderSource struct {
	folder     string
	downloaded []string // the dirs Download was called with
}

func (s *folderSource) Name() string { return "folders" }

func (s *folderSource) Parse(ref string) (source.Reference, error) {
	return source.Reference{Source: s.Name(), Repo: ref}, nil
}

func (s *folderSource) Resolve(_ context.Context, ref source.Reference) (*source.Resolved, error) {
	return &source.Resolved{Ref: ref, ID: "folders/" + ref.Repo, Revision: "r", Folder: s.folder,
		Files: []source.File{{Path: "m.gguf", Size: 1}}}, nil
}

func (s *folderSource) Download(_ context.Context, _ *source.Resolved, dir string, _ func(source.Progress)) ([]string, error) {
	s.downloaded = append(s.downloaded, dir)
	return nil, errors.New("folderSource downloads nothing")
}

// TestPullRefusesAFolderOutside: a source answering a folder that is not inside the models
// folder (a parent, an absolute path, the models folder itself) gets an engine failure and no
// download; the Hub's own checks (TestPullFromAHostileHub) stop its hostile answers before
// this one sees them, so this is the manager's guard for every source.
func TestPullRefusesAFolderOutside(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 0, Config{}, nil)
	for _, folder := range []string{"..", "../victim", "hf/../../victim", "/tmp/victim", filepath.Dir(f.cat.Dir()), "", "."} {
		src := &folderSource{folder: folder}
		if e, err := f.mgr.Pull(ctx, src, "x", nil); !errors.Is(err, llm.ErrEngineFailure) || !errors.Is(err, source.ErrUnsafe) {
			t.Errorf("folder %q: Pull = %v, %v; want an engine failure wrapping source.ErrUnsafe", folder, e, err)
		}
		if len(src.downloaded) != 0 {
			t.Errorf("folder %q: downloaded into %q", folder, src.downloaded)
		}
	}
	src := &folderSource{folder: "folders/x"}
	if _, err := f.mgr.Pull(ctx, src, "x", nil); len(src.downloaded) != 1 || src.downloaded[0] != filepath.Join(f.cat.Dir(), "folders", "x") {
		t.Errorf("a folder inside: Pull = %v, downloaded into %q", err, src.downloaded)
	}
}
