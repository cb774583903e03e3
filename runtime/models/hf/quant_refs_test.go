package hf_test

import (
	"context"
	"testing"

	"github.com/superfluid/superfluid/runtime/models/hf"
	"github.com/superfluid/superfluid/runtime/models/hf/hftest"
)

// TestQuantsNameEachModelOnce: in a repository whose folders hold same-named quantizations
// ("Q4_K_M/model.gguf" and "other/model-Q4_K_M.gguf", two "x-Q8_0.gguf"), each quantization's
// reference pulls exactly its own file, and is the catalog id the pull gets: the quant form
// where the quant names one model, else the file form; a file no reference can spell (a space
// in its folder) has none, rather than one that names another file.
func TestQuantsNameEachModelOnce(t *testing.T) {
	hub := hftest.New()
	defer hub.Close()
	const repo = "acme/Mixed-GGUF"
	for _, p := range []string{"Q4_K_M/model.gguf", "other/model-Q4_K_M.gguf", "a/x-Q8_0.gguf", "b/x-Q8_0.gguf",
		"Big-F16.gguf", "c/m-Q2_K.gguf", "d e/m-Q2_K.gguf"} {
		hub.AddFile(repo, p, []byte("GGUF "+p))
	}
	src := hf.NewSource(hf.Config{Endpoint: hub.URL(), Backoff: 1})
	qs, err := src.Quants(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"Q4_K_M/model.gguf":       "hf.co/acme/Mixed-GGUF/Q4_K_M/model.gguf",
		"other/model-Q4_K_M.gguf": "hf.co/acme/Mixed-GGUF/other/model-Q4_K_M.gguf",
		"a/x-Q8_0.gguf":           "hf.co/acme/Mixed-GGUF/a/x-Q8_0.gguf",
		"b/x-Q8_0.gguf":           "hf.co/acme/Mixed-GGUF/b/x-Q8_0.gguf",
		"Big-F16.gguf":            "hf.co/acme/Mixed-GGUF:F16",
		"c/m-Q2_K.gguf":           "hf.co/acme/Mixed-GGUF/c/m-Q2_K.gguf",
		"d e/m-Q2_K.gguf":         "",
	}
	if len(qs) != len(want) {
		t.Fatalf("Quants = %+v", qs)
	}
	for _, q := range qs {
		ref, ok := want[q.First]
		if !ok || q.Ref != ref {
			t.Errorf("%s: reference %q, want %q", q.First, q.Ref, ref)
			continue
		}
		if ref == "" {
			continue
		}
		r, err := src.Parse(q.Ref)
		if err != nil {
			t.Errorf("%s: %v", q.Ref, err)
			continue
		}
		res, err := src.Resolve(context.Background(), r)
		if err != nil {
			t.Errorf("%s: %v", q.Ref, err)
			continue
		}
		if len(res.Files) != 1 || res.Files[0].Path != q.First || res.ID != q.Ref {
			t.Errorf("%s pulls %+v as %s, want %s as itself", q.Ref, res.Files, res.ID, q.First)
		}
	}
	// The quant alone is still refused as ambiguous, naming the files.
	r, _ := src.Parse("hf.co/" + repo + ":Q4_K_M")
	if _, err := src.Resolve(context.Background(), r); err == nil {
		t.Error("an ambiguous quant resolved")
	}
}
