package hf_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/models/hf"
	"github.com/superfluid/superfluid/runtime/models/hf/hftest"
	"github.com/superfluid/superfluid/runtime/models/source"
)

// TestSearch: the Hub's model search over real HTTP finds GGUF repositories by name, sorted
// as asked, with their metadata read from the Hub's field names.
func TestSearch(t *testing.T) {
	hub := hftest.New()
	defer hub.Close()
	when := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	hub.AddFile("acme/Tiny-GGUF", "tiny-Q4_K_M.gguf", []byte("GGUF"))
	hub.SetInfo("acme/Tiny-GGUF", hftest.Info{Downloads: 500, Likes: 7, Trending: 1, LastModified: when, License: "apache-2.0", Parameters: 1_500_000_000, Gated: true})
	hub.AddFile("zed/tiny-chat-GGUF", "chat-Q8_0.gguf", []byte("GGUF"))
	hub.SetInfo("zed/tiny-chat-GGUF", hftest.Info{Downloads: 90, Trending: 50})
	hub.AddFile("acme/tiny-safetensors", "model.safetensors", []byte("x")) // no GGUF: not found
	hub.AddFile("acme/other-GGUF", "o-Q4_0.gguf", []byte("GGUF"))
	src := hf.NewSource(hf.Config{Endpoint: hub.URL(), Backoff: 1})

	hits, err := src.Search(context.Background(), source.Query{Text: "tiny"})
	if err != nil || len(hits) != 2 {
		t.Fatalf("Search = %+v, %v", hits, err)
	}
	want := source.Hit{Repo: "acme/Tiny-GGUF", Author: "acme", Downloads: 500, Likes: 7, LastModified: when,
		License: "apache-2.0", Parameters: 1_500_000_000, Gated: true}
	if hits[0] != want || hits[1].Repo != "zed/tiny-chat-GGUF" {
		t.Errorf("by downloads = %+v", hits)
	}
	hits, err = src.Search(context.Background(), source.Query{Text: "tiny", Sort: source.SortTrending, Limit: 1})
	if err != nil || len(hits) != 1 || hits[0].Repo != "zed/tiny-chat-GGUF" {
		t.Errorf("trending, limit 1 = %+v, %v", hits, err)
	}
}

// TestSearchFaults: a search that hangs ends at the caller's deadline, and garbage or an
// endless answer is an error naming what went wrong, never a crash or a held gigabyte.
func TestSearchFaults(t *testing.T) {
	hub := hftest.New()
	defer hub.Close()
	hub.AddFile("acme/Tiny-GGUF", "tiny-Q4_K_M.gguf", []byte("GGUF"))
	src := hf.NewSource(hf.Config{Endpoint: hub.URL(), Backoff: 1})

	hub.SetSearchFault(hftest.SearchHang)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := src.Search(ctx, source.Query{}); err == nil || !strings.Contains(err.Error(), "did not answer in time") || time.Since(start) > 5*time.Second {
		t.Errorf("hanging search: %v after %v", err, time.Since(start))
	}
	hub.SetSearchFault(hftest.SearchGarbage)
	if _, err := src.Search(context.Background(), source.Query{}); err == nil || !strings.Contains(err.Error(), "not a model list") {
		t.Errorf("garbage search: %v", err)
	}
	hub.SetSearchFault(hftest.SearchHuge)
	if _, err := src.Search(context.Background(), source.Query{}); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("endless search: %v", err)
	}
}

// TestCardAndQuants: the card is the repository's README; the quantizations of a repository
// with 200 files (listed over several pages) are grouped by quant with split parts summed and
// the projector left out.
func TestCardAndQuants(t *testing.T) {
	hub := hftest.New()
	defer hub.Close()
	const repo = "acme/Big-GGUF"
	hub.AddFile(repo, "README.md", []byte("# Big\n\nA model."))
	hub.AddFile(repo, "mmproj-Big-F16.gguf", make([]byte, 7))
	hub.AddFile(repo, "Big-Q4_K_M.gguf", make([]byte, 10))
	hub.AddFile(repo, "Q8_0/Big-Q8_0-00001-of-00002.gguf", make([]byte, 20))
	hub.AddFile(repo, "Q8_0/Big-Q8_0-00002-of-00002.gguf", make([]byte, 5))
	for i := range 196 {
		hub.AddFile(repo, fmt.Sprintf("extra/notes-%03d.txt", i), []byte("x"))
	}
	src := hf.NewSource(hf.Config{Endpoint: hub.URL(), Backoff: 1})

	card, err := src.Card(context.Background(), repo)
	if err != nil || card != "# Big\n\nA model." {
		t.Errorf("Card = %q, %v", card, err)
	}
	if _, err := src.Card(context.Background(), "../etc"); err == nil {
		t.Error("Card of a name that is no repository: no error")
	}
	qs, err := src.Quants(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]source.Quant{}
	for _, q := range qs {
		got[q.Name] = q
	}
	if len(qs) != 2 || got["Q4_K_M"].Size != 10 || got["Q8_0"].Size != 25 || got["Q8_0"].Parts != 2 ||
		got["Q8_0"].First != "Q8_0/Big-Q8_0-00001-of-00002.gguf" {
		t.Errorf("Quants = %+v", qs)
	}
}
