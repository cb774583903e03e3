package hf

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/superfluid/superfluid/runtime/models/hf/hftest"
)

// testConfig is a Config for srv with a short backoff. Tests of stalls set
// a short StallTimeout themselves; the others keep a longer one so that a
// busy machine does not cause a spurious retry.
func testConfig(srv *hftest.Server) Config {
	return Config{Endpoint: srv.URL(), StallTimeout: 10 * time.Second, Backoff: 10 * time.Millisecond}
}

func TestResolve(t *testing.T) {
	srv := hftest.New()
	defer srv.Close()
	tiny := []byte("GGUF")
	repos := map[string][]string{
		"o/styles": {"Model-Q4_K_M.gguf", "Model-Q8_0.gguf", "model.Q5_K_S.gguf", "Model-UD-Q4_K_XL.gguf",
			"Model-IQ2_XXS.gguf", "Model-f16.gguf", "README.md", "mmproj-Model-f16.gguf"},
		"o/noq4": {"m-Q8_0.gguf", "m-Q6_K.gguf", "m.Q2_K.gguf", "config.json"},
		"o/one":  {"only-model-Q6_K.gguf", "mmproj-F16.gguf", "README.md"},
		"o/none": {"model.safetensors", "config.json"},
		"o/split": {"Model-Q4_K_M-00002-of-00003.gguf", "Model-Q4_K_M-00001-of-00003.gguf", "Model-Q4_K_M-00003-of-00003.gguf",
			"Model-Q8_0.gguf"},
		"o/dirs": {"Q4_K_M/Model-Q4_K_M-00001-of-00002.gguf", "Q4_K_M/Model-Q4_K_M-00002-of-00002.gguf",
			"UD-Q2_K_XL/Model-UD-Q2_K_XL-00001-of-00002.gguf", "UD-Q2_K_XL/Model-UD-Q2_K_XL-00002-of-00002.gguf",
			"BF16/model-00001-of-00002.gguf", "BF16/model-00002-of-00002.gguf"},
		"o/incomplete": {"M-Q4_K_M-00001-of-00003.gguf", "M-Q4_K_M-00003-of-00003.gguf"},
	}
	for repo, files := range repos {
		for _, f := range files {
			srv.AddFile(repo, f, tiny)
		}
	}
	srv.AddRepo("o/empty")
	// A repository big enough to need several listing pages.
	for i := range 3*hftest.DefaultPageSize + 7 {
		srv.AddFile("o/many", fmt.Sprintf("weights/shard-%03d.bin", i), tiny)
	}
	srv.AddFile("o/many", "zzz/last-Q4_K_M.gguf", tiny)
	srv.AddFile("o/many", "zzz/last-Q8_0.gguf", tiny)

	tests := []struct {
		ref     string
		want    []string // resolved paths
		wantErr error
		errHas  []string // substrings of the error
	}{
		{ref: "o/styles:Q4_K_M", want: []string{"Model-Q4_K_M.gguf"}},
		{ref: "o/styles:q4_k_m", want: []string{"Model-Q4_K_M.gguf"}},
		{ref: "o/styles:Q8_0", want: []string{"Model-Q8_0.gguf"}},
		{ref: "o/styles:q5_k_s", want: []string{"model.Q5_K_S.gguf"}},
		{ref: "o/styles:UD-Q4_K_XL", want: []string{"Model-UD-Q4_K_XL.gguf"}},
		{ref: "o/styles:Q4_K_XL", want: []string{"Model-UD-Q4_K_XL.gguf"}},
		{ref: "o/styles:iq2_xxs", want: []string{"Model-IQ2_XXS.gguf"}},
		{ref: "o/styles:F16", want: []string{"Model-f16.gguf"}},
		{ref: "o/styles", want: []string{"Model-Q4_K_M.gguf"}},
		{ref: "hf.co/o/styles/Model-Q8_0.gguf", want: []string{"Model-Q8_0.gguf"}},
		{ref: "o/styles/mmproj-Model-f16.gguf", want: []string{"mmproj-Model-f16.gguf"}},
		{ref: "o/styles:Q3_K_L", wantErr: ErrNoMatch,
			errHas: []string{"Q3_K_L", "Q4_K_M", "Q8_0", "Q5_K_S", "UD-Q4_K_XL", "IQ2_XXS", "f16"}},
		{ref: "o/styles/Missing-Q4_0.gguf", wantErr: ErrNoMatch, errHas: []string{"Missing-Q4_0.gguf", "Model-Q8_0.gguf"}},
		{ref: "o/noq4", wantErr: ErrNoMatch, errHas: []string{"no Q4_K_M", "Q8_0", "Q6_K", "Q2_K"}},
		{ref: "o/noq4:Q6_K", want: []string{"m-Q6_K.gguf"}},
		{ref: "o/one", want: []string{"only-model-Q6_K.gguf"}},
		{ref: "o/none", wantErr: ErrNoMatch, errHas: []string{"no GGUF"}},
		{ref: "o/empty", wantErr: ErrNoMatch, errHas: []string{"no GGUF"}},
		{ref: "o/split", want: []string{"Model-Q4_K_M-00001-of-00003.gguf", "Model-Q4_K_M-00002-of-00003.gguf", "Model-Q4_K_M-00003-of-00003.gguf"}},
		{ref: "o/split/Model-Q4_K_M-00001-of-00003.gguf", want: []string{"Model-Q4_K_M-00001-of-00003.gguf", "Model-Q4_K_M-00002-of-00003.gguf", "Model-Q4_K_M-00003-of-00003.gguf"}},
		{ref: "o/split:q8_0", want: []string{"Model-Q8_0.gguf"}},
		{ref: "o/dirs:Q4_K_M", want: []string{"Q4_K_M/Model-Q4_K_M-00001-of-00002.gguf", "Q4_K_M/Model-Q4_K_M-00002-of-00002.gguf"}},
		{ref: "o/dirs", want: []string{"Q4_K_M/Model-Q4_K_M-00001-of-00002.gguf", "Q4_K_M/Model-Q4_K_M-00002-of-00002.gguf"}},
		{ref: "o/dirs:ud-q2_k_xl", want: []string{"UD-Q2_K_XL/Model-UD-Q2_K_XL-00001-of-00002.gguf", "UD-Q2_K_XL/Model-UD-Q2_K_XL-00002-of-00002.gguf"}},
		{ref: "o/dirs:bf16", want: []string{"BF16/model-00001-of-00002.gguf", "BF16/model-00002-of-00002.gguf"}},
		{ref: "o/incomplete", wantErr: ErrNoMatch, errHas: []string{"missing part 2 of 3"}},
		{ref: "o/many:Q8_0", want: []string{"zzz/last-Q8_0.gguf"}}, // only on the last page
		{ref: "o/many", want: []string{"zzz/last-Q4_K_M.gguf"}},
		{ref: "o/nosuchrepo", wantErr: ErrNotFound},
		{ref: "o/styles@v9:Q4_K_M", wantErr: ErrNotFound},
	}
	c := New(testConfig(srv))
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			ref, err := ParseRef(tt.ref)
			if err != nil {
				t.Fatal(err)
			}
			res, err := c.Resolve(context.Background(), ref)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Resolve = %v, %v; want %v", res, err, tt.wantErr)
				}
				for _, s := range tt.errHas {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q lacks %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range res.Files {
				got = append(got, f.Path)
				if f.Size != int64(len(tiny)) || f.SHA256 != srv.SHA256(ref.Repo, f.Path) {
					t.Errorf("%s: size %d sha256 %s", f.Path, f.Size, f.SHA256)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("files = %q, want %q", got, tt.want)
			}
			if res.Revision != hftest.Commit {
				t.Errorf("revision = %q, want the commit %q", res.Revision, hftest.Commit)
			}
			if res.Ref != ref {
				t.Errorf("ref = %+v, want %+v", res.Ref, ref)
			}
		})
	}
}

func TestResolveGated(t *testing.T) {
	srv := hftest.New()
	defer srv.Close()
	srv.AddFile("o/gated", "m-Q4_K_M.gguf", []byte("GGUF"))
	srv.RequireToken("o/gated", "secret")
	ref := Ref{Repo: "o/gated"}

	for _, token := range []string{"", "wrong"} {
		cfg := testConfig(srv)
		cfg.Token = token
		_, err := New(cfg).Resolve(context.Background(), ref)
		if !errors.Is(err, ErrUnauthorized) {
			t.Fatalf("token %q: Resolve = %v, want ErrUnauthorized", token, err)
		}
		if !strings.Contains(err.Error(), "HF_TOKEN") {
			t.Errorf("error %q does not say to set HF_TOKEN", err)
		}
	}
	cfg := testConfig(srv)
	cfg.Token = "secret"
	res, err := New(cfg).Resolve(context.Background(), ref)
	if err != nil {
		t.Fatalf("with token: %v", err)
	}
	if len(res.Files) != 1 || res.Files[0].Path != "m-Q4_K_M.gguf" {
		t.Errorf("files = %+v", res.Files)
	}
}

func TestQuantLabel(t *testing.T) {
	tests := []struct{ stem, dir, want string }{
		{"Model-Q4_K_M", "", "Q4_K_M"},
		{"model.Q8_0", "", "Q8_0"},
		{"Model-UD-Q4_K_XL", "", "UD-Q4_K_XL"},
		{"Llama-3.2-1B-Instruct-IQ3_XS", "", "IQ3_XS"},
		{"qwen2.5-0.5b-instruct-fp16", "", "fp16"},
		{"model", "BF16", "BF16"},
		{"weird-name", "", "name"},
	}
	for _, tt := range tests {
		if got := quantLabel(tt.stem, tt.dir); got != tt.want {
			t.Errorf("quantLabel(%q, %q) = %q, want %q", tt.stem, tt.dir, got, tt.want)
		}
	}
}

func TestNextLink(t *testing.T) {
	tests := []struct {
		in   []string
		want string
	}{
		{[]string{`<https://h/api?cursor=x>; rel="next"`}, "https://h/api?cursor=x"},
		{[]string{`<https://h/p1>; rel="prev", <https://h/p3>; rel="next"`}, "https://h/p3"},
		{[]string{`<https://h/p1>; rel=prev`}, ""},
		{nil, ""},
	}
	for _, tt := range tests {
		if got := nextLink(tt.in); got != tt.want {
			t.Errorf("nextLink(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestResolveRefusesAHostileCommit: the endpoint's X-Repo-Commit becomes a folder name, so
// only a 40-hex commit id is taken; anything else fails the resolve before a byte is written.
func TestResolveRefusesAHostileCommit(t *testing.T) {
	for _, commit := range []string{"../../..", "../../../../etc", "/tmp/x", `..\..\x`, "main", "5f1d2c3b4a5968778695a4b3c2d1e0f9a8b7c6d", // 39 hex
		"5f1d2c3b4a5968778695a4b3c2d1e0f9a8b7c6d5/..", "zf1d2c3b4a5968778695a4b3c2d1e0f9a8b7c6d5"} {
		t.Run(commit, func(t *testing.T) {
			srv := hftest.New()
			defer srv.Close()
			srv.AddFile("o/m", "m-Q4_K_M.gguf", []byte("GGUF"))
			srv.SetCommit("o/m", commit)
			res, err := New(testConfig(srv)).Resolve(context.Background(), Ref{Repo: "o/m"})
			if !errors.Is(err, ErrBadAnswer) {
				t.Fatalf("Resolve = %+v, %v; want ErrBadAnswer", res, err)
			}
		})
	}
	srv := hftest.New()
	defer srv.Close()
	srv.AddFile("o/m", "m-Q4_K_M.gguf", []byte("GGUF"))
	srv.SetCommit("o/m", strings.ToUpper(hftest.Commit))
	res, err := New(testConfig(srv)).Resolve(context.Background(), Ref{Repo: "o/m"})
	if err != nil || res.Revision != hftest.Commit {
		t.Fatalf("an upper-case commit: %+v, %v; want revision %s", res, err, hftest.Commit)
	}
}
