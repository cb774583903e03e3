package models

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/gguf/gguftest"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models/hf"
	"github.com/superfluid/superfluid/runtime/models/source"
)

func openTestCatalog(t *testing.T) (*Catalog, RecordStore, string) {
	t.Helper()
	dir := t.TempDir()
	st := newMemRecords()
	cat, err := OpenCatalog(context.Background(), st, filepath.Join(dir, "models"))
	if err != nil {
		t.Fatal(err)
	}
	cat.NameBy(hf.NewSource(hf.Config{})) // as the app does: Hugging Face's spellings
	return cat, st, dir
}

func writeTiny(t *testing.T, path string, seed int64) {
	t.Helper()
	if err := gguftest.WriteTinyLlama(path, gguftest.TinyLlamaOptions{Seed: seed, Q8: true, Embd: 64, FF: 128}); err != nil {
		t.Fatal(err)
	}
}

func TestCatalogRegistersWhatTheReaderAccepts(t *testing.T) {
	ctx := context.Background()
	cat, _, dir := openTestCatalog(t)
	good := filepath.Join(dir, "good.gguf")
	writeTiny(t, good, 1)
	e, err := cat.AddLocal(ctx, good, "")
	if err != nil {
		t.Fatal(err)
	}
	if e.ID != "good" || e.Source != SourceLocal || e.Architecture != "llama" || e.Quantization != "Q8_0" ||
		e.ParameterCount == 0 || e.ContextLength != 2048 || len(e.Capabilities) == 0 || e.Size == 0 || e.AddedAt.IsZero() {
		t.Fatalf("entry %+v", e.Record)
	}
	if again, err := cat.AddLocal(ctx, good, ""); err != nil || again.ID != "good" {
		t.Fatalf("adding the same path again: %v %v", again, err)
	}
	// The same bytes under another path are the same model.
	twin := filepath.Join(t.TempDir(), "good.gguf")
	data, _ := os.ReadFile(good)
	os.WriteFile(twin, data, 0o644)
	if e2, err := cat.AddLocal(ctx, twin, ""); err != nil || e2.Path != good {
		t.Fatalf("an identical file: %v %v", e2, err)
	}
	// Different bytes under a taken name: refused, naming the way out.
	other := filepath.Join(t.TempDir(), "good.gguf")
	writeTiny(t, other, 2)
	if _, err := cat.AddLocal(ctx, other, ""); !errors.Is(err, llm.ErrInvalidInput) || !strings.Contains(err.Error(), "--name") {
		t.Fatalf("a clashing name: %v", err)
	}
	if e3, err := cat.AddLocal(ctx, other, "good-2"); err != nil || e3.ID != "good-2" {
		t.Fatalf("with a name: %v %v", e3, err)
	}

	notGGUF := filepath.Join(dir, "notes.gguf")
	os.WriteFile(notGGUF, []byte("these are my notes, not a model"), 0o644)
	truncated := filepath.Join(dir, "cut.gguf")
	os.WriteFile(truncated, data[:len(data)/2], 0o644)
	for _, path := range []string{notGGUF, truncated} {
		if _, err := cat.AddLocal(ctx, path, ""); !errors.Is(err, ErrNotModel) {
			t.Errorf("AddLocal(%s): %v, want ErrNotModel", filepath.Base(path), err)
		}
	}
	if _, err := cat.AddLocal(ctx, dir, ""); !errors.Is(err, llm.ErrInvalidInput) {
		t.Errorf("a directory: %v", err)
	}
	for _, id := range []string{"", "../x", "/abs", "a\x00b", strings.Repeat("x", 10<<10), "sp ace"} {
		if _, err := cat.AddLocal(ctx, good, id); err == nil && id != "" {
			t.Errorf("id %.20q accepted", id)
		}
	}
	ids := []string{}
	for _, e := range cat.List() {
		ids = append(ids, e.ID)
	}
	if strings.Join(ids, ",") != "good,good-2" {
		t.Fatalf("catalog holds %v", ids)
	}
}

func TestIDFromFile(t *testing.T) {
	for in, want := range map[string]string{
		"Qwen3-8B-Q4_K_M.gguf": "Qwen3-8B-Q4_K_M", "big-00001-of-00003.gguf": "big", "my model (1).gguf": "my-model--1-",
		"a:b.gguf": "a-b",
	} {
		if got := idFromFile(in); got != want {
			t.Errorf("idFromFile(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCatalogKnowsNoSourceSpelling: the other names a model goes by come from the sources
// (NameBy), not from the catalog: without a namer only ids (and ":latest") match, and a
// namer of another source's spelling is served alike.
func TestCatalogKnowsNoSourceSpelling(t *testing.T) {
	ctx := context.Background()
	cat, err := OpenCatalog(ctx, newMemRecords(), filepath.Join(t.TempDir(), "models"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "x.gguf")
	writeTiny(t, path, 1)
	if _, err := cat.Register(ctx, Record{ID: "hf.co/Owner/Repo:Q4_K_M", Path: path, Source: SourceHuggingFace, Repo: "Owner/Repo"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.Register(ctx, Record{ID: "bucket/m", Path: path, Source: "bucket", Repo: "m"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Owner/Repo:Q4_K_M", "Owner/Repo", "m"} {
		if e, err := cat.Lookup(name); !errors.Is(err, llm.ErrModelNotFound) {
			t.Errorf("no namer: Lookup(%q) = %v, %v; want not found", name, e, err)
		}
	}
	if e, err := cat.Lookup("hf.co/Owner/Repo:Q4_K_M:latest"); err != nil || e.ID != "hf.co/Owner/Repo:Q4_K_M" {
		t.Errorf("an id with :latest: %v, %v", e, err)
	}
	cat.NameBy(bucketNamer{})
	if e, err := cat.Lookup("s3:m"); err != nil || e.ID != "bucket/m" {
		t.Errorf("the namer's spelling: %v, %v", e, err)
	}
	if e, err := cat.Lookup("repo m"); err != nil || e.ID != "bucket/m" {
		t.Errorf("the namer's bare repository: %v, %v", e, err)
	}
	if _, err := cat.Lookup("Owner/Repo:Q4_K_M"); !errors.Is(err, llm.ErrModelNotFound) {
		t.Errorf("Hugging Face's spelling with another source's namer: %v", err)
	}
}

// bucketNamer spells "bucket/NAME" as "s3:NAME" and reads "repo NAME" as a bare repository.
type bucketNamer struct{}

func (bucketNamer) Spellings(name string) []string {
	if rest, ok := strings.CutPrefix(name, "s3:"); ok {
		return []string{"bucket/" + rest}
	}
	return nil
}

func (bucketNamer) Repository(name string) (source.Reference, bool) {
	rest, ok := strings.CutPrefix(name, "repo ")
	return source.Reference{Source: "bucket", Repo: rest}, ok
}

func TestCatalogLookupNames(t *testing.T) {
	ctx := context.Background()
	cat, _, dir := openTestCatalog(t)
	path := filepath.Join(dir, "x.gguf")
	writeTiny(t, path, 1)
	if _, err := cat.Register(ctx, Record{ID: "hf.co/Owner/Repo:Q4_K_M", Path: path, Source: SourceHuggingFace}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"hf.co/Owner/Repo:Q4_K_M", "Owner/Repo:Q4_K_M", "owner/repo:q4_k_m", "hf.co/owner/repo:Q4_K_M"} {
		if e, err := cat.Lookup(name); err != nil || e.ID != "hf.co/Owner/Repo:Q4_K_M" {
			t.Errorf("Lookup(%q) = %v, %v", name, e, err)
		}
	}
	if _, err := cat.Lookup("Owner/Repo:Q8_0"); !errors.Is(err, llm.ErrModelNotFound) {
		t.Errorf("another quant: %v", err)
	}
	for _, name := range []string{"../../etc/passwd", "/etc/passwd", "a\x00", strings.Repeat("y", 10<<10)} {
		if _, err := cat.Lookup(name); !errors.Is(err, llm.ErrInvalidInput) {
			t.Errorf("Lookup(%.20q): %v, want invalid input", name, err)
		}
	}
}

func TestCatalogCopyAndRemove(t *testing.T) {
	ctx := context.Background()
	cat, _, dir := openTestCatalog(t)
	inside := filepath.Join(cat.Dir(), "m.gguf")
	writeTiny(t, inside, 1)
	if _, err := cat.AddLocal(ctx, inside, "m"); err != nil {
		t.Fatal(err)
	}
	alias, err := cat.Copy(ctx, "m", "my-model")
	if err != nil || alias.Source != SourceAlias || alias.AliasOf != "m" || alias.Path != inside {
		t.Fatalf("copy: %+v %v", alias, err)
	}
	if _, err := cat.Copy(ctx, "m", "my-model"); !errors.Is(err, llm.ErrInvalidInput) {
		t.Fatalf("copy onto an existing name: %v", err)
	}
	if _, err := cat.Copy(ctx, "nope", "x"); !errors.Is(err, llm.ErrModelNotFound) {
		t.Fatalf("copy of an unknown model: %v", err)
	}
	// The file is shared: removing one name keeps it.
	if _, del, err := cat.Remove(ctx, "m"); err != nil || del {
		t.Fatalf("remove m: delete=%v %v", del, err)
	}
	if _, del, err := cat.Remove(ctx, "my-model"); err != nil || !del {
		t.Fatalf("remove the last name: delete=%v %v", del, err)
	}
	// A file outside the models folder is never deleted.
	outside := filepath.Join(dir, "o.gguf")
	writeTiny(t, outside, 2)
	cat.AddLocal(ctx, outside, "")
	if _, del, err := cat.Remove(ctx, "o"); err != nil || del {
		t.Fatalf("remove a local file's entry: delete=%v %v", del, err)
	}
}

// TestCatalogSeesAnotherProcess: a pull, add or rm by the CLI shows in a running server.
func TestCatalogSeesAnotherProcess(t *testing.T) {
	ctx := context.Background()
	server, st, dir := openTestCatalog(t)
	cli, err := OpenCatalog(ctx, st, server.Dir())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "late.gguf")
	writeTiny(t, path, 3)
	server.List() // the server has looked once already
	if _, err := cli.AddLocal(ctx, path, ""); err != nil {
		t.Fatal(err)
	}
	if e, err := server.Lookup("late"); err != nil || e.Path != path {
		t.Fatalf("the server did not see the CLI's add: %v", err)
	}
	if _, _, err := cli.Remove(ctx, "late"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(server.List()) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the server still lists a model the CLI removed")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRepositoryNameWithoutQuant: a client naming a pulled repository without its quantization
// (the spec's first example: model="unsloth/Qwen3.8-27B-GGUF") gets the one quantization the
// catalog holds; of several, the loaded one, else the one serve was started with, else a 404
// listing them.
func TestRepositoryNameWithoutQuant(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 0, Config{}, nil)
	pulled := func(id, repo string, seed int64) *Entry {
		t.Helper()
		path := filepath.Join(f.cat.Dir(), strings.NewReplacer("/", "_", ":", "_").Replace(id)+".gguf")
		writeTiny(t, path, seed)
		e, err := f.cat.Register(ctx, Record{ID: id, Path: path, Source: SourceHuggingFace, Repo: repo})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	const repo = "unsloth/Qwen3.8-27B-GGUF"
	q4 := pulled("hf.co/"+repo+":UD-Q4_K_M", repo, 1)
	pulled("hf.co/other/Qwen3.8-27B-GGUF:Q8_0", "other/Qwen3.8-27B-GGUF", 3) // another owner's
	lookup := func(name string) (string, error) {
		e, err := f.cat.Lookup(name)
		if err != nil {
			return "", err
		}
		return e.ID, nil
	}
	for _, name := range []string{repo, "hf.co/" + repo, "huggingface.co/" + repo, repo + ":latest", "hf.co/" + repo + ":latest", strings.ToLower(repo)} {
		if id, err := lookup(name); err != nil || id != q4.ID {
			t.Errorf("one quant: %q = %q, %v; want %s", name, id, err, q4.ID)
		}
	}

	q8 := pulled("hf.co/"+repo+":Q8_0", repo, 2)
	if _, err := f.cat.Copy(ctx, q8.ID, "my-alias"); err != nil { // an alias is not a third quant
		t.Fatal(err)
	}
	_, err := lookup(repo)
	if !errors.Is(err, llm.ErrModelNotFound) || !strings.Contains(err.Error(), q4.ID) || !strings.Contains(err.Error(), q8.ID) || strings.Contains(err.Error(), "my-alias") {
		t.Fatalf("two quants, none loaded, none preferred: %v; want a not-found listing both", err)
	}
	f.cat.Prefer(q8.ID) // serve was started with it
	if id, err := lookup(repo); err != nil || id != q8.ID {
		t.Errorf("preferred: %q, %v; want %s", id, err, q8.ID)
	}
	if _, err := f.mgr.Load(ctx, q4.ID); err != nil {
		t.Fatal(err)
	}
	if id, err := lookup("hf.co/" + repo); err != nil || id != q4.ID {
		t.Errorf("one loaded: %q, %v; want the loaded %s", id, err, q4.ID)
	}
	if _, err := f.mgr.Load(ctx, q8.ID); err != nil {
		t.Fatal(err)
	}
	if id, err := lookup(repo); err != nil || id != q8.ID {
		t.Errorf("both loaded: %q, %v; want the preferred %s", id, err, q8.ID)
	}
	f.cat.Prefer("")
	if _, err := lookup(repo); !errors.Is(err, llm.ErrModelNotFound) {
		t.Errorf("both loaded, none preferred: %v; want not found", err)
	}
	// A name with a quantization, a file or a revision is never widened to another model.
	for _, name := range []string{repo + ":Q5_K_M", repo + "/x-Q4_K_M.gguf", repo + "@abc", "unsloth/Other-GGUF"} {
		if id, err := lookup(name); !errors.Is(err, llm.ErrModelNotFound) {
			t.Errorf("%q = %q, %v; want not found", name, id, err)
		}
	}
}
