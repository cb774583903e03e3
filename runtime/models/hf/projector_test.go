package hf

import (
	"context"
	"testing"

	"github.com/superfluid/superfluid/runtime/models/hf/hftest"
)

func TestResolvePicksTheProjector(t *testing.T) {
	srv := hftest.New()
	defer srv.Close()
	repos := map[string][]string{
		// F16 before BF16 and F32; the model is never taken for a projector.
		"o/vis": {"vis-Q4_K_M.gguf", "vis-Q8_0.gguf", "mmproj-BF16.gguf", "mmproj-F32.gguf", "mmproj-F16.gguf"},
		// One projector per quantization: the model's own.
		"o/paired": {"m-Q4_K_M.gguf", "m-Q8_0.gguf", "mmproj-m-Q8_0.gguf", "mmproj-m-F16.gguf", "mmproj-m-Q4_K_M.gguf"},
		// "mmproj" inside the name counts too, and the model's folder wins over another's.
		"o/dirs":  {"Q4_K_M/m-Q4_K_M.gguf", "Q4_K_M/m-mmproj-bf16.gguf", "other/m-mmproj-f16.gguf"},
		"o/plain": {"m-Q4_K_M.gguf"},
	}
	for repo, files := range repos {
		for _, f := range files {
			srv.AddFile(repo, f, []byte("GGUF"))
		}
	}
	tests := []struct{ ref, model, projector string }{
		{"o/vis", "vis-Q4_K_M.gguf", "mmproj-F16.gguf"},
		{"o/vis:Q8_0", "vis-Q8_0.gguf", "mmproj-F16.gguf"},
		{"o/paired:Q8_0", "m-Q8_0.gguf", "mmproj-m-Q8_0.gguf"},
		{"o/paired", "m-Q4_K_M.gguf", "mmproj-m-Q4_K_M.gguf"},
		{"o/dirs", "Q4_K_M/m-Q4_K_M.gguf", "Q4_K_M/m-mmproj-bf16.gguf"},
		{"o/plain", "m-Q4_K_M.gguf", ""},
		{"o/vis/mmproj-F16.gguf", "mmproj-F16.gguf", ""}, // a projector asked for by name brings no other
	}
	c := New(testConfig(srv))
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			ref, err := ParseRef(tt.ref)
			if err != nil {
				t.Fatal(err)
			}
			res, err := c.Resolve(context.Background(), ref)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Files) != 1 || res.Files[0].Path != tt.model {
				t.Fatalf("files = %+v, want %s", res.Files, tt.model)
			}
			got := ""
			if res.Projector != nil {
				got = res.Projector.Path
				if res.Projector.SHA256 != srv.SHA256(ref.Repo, got) || res.Projector.Size != 4 {
					t.Errorf("projector %+v: size or sha256 not the listing's", res.Projector)
				}
			}
			if got != tt.projector {
				t.Errorf("projector = %q, want %q", got, tt.projector)
			}
		})
	}
}
