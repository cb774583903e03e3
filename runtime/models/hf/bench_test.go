package hf

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/superfluid/superfluid/runtime/models/hf/hftest"
)

const benchSize = 64 << 20

// benchServer serves a benchSize file from disk.
func benchServer(b *testing.B) (*hftest.Server, *Resolved, string) {
	b.Helper()
	dir := b.TempDir()
	src := filepath.Join(dir, "src.gguf")
	if err := os.WriteFile(src, testData(benchSize, 9), 0o644); err != nil {
		b.Fatal(err)
	}
	srv := hftest.New()
	b.Cleanup(srv.Close)
	srv.AddFileFromDisk(testRepo, "M-Q4_K_M.gguf", src)
	res, err := New(Config{Endpoint: srv.URL()}).Resolve(context.Background(), Ref{Repo: testRepo})
	if err != nil {
		b.Fatal(err)
	}
	return srv, res, dir
}

// BenchmarkDownload measures Download (write, sha256, verify, rename).
func BenchmarkDownload(b *testing.B) {
	srv, res, dir := benchServer(b)
	c := New(Config{Endpoint: srv.URL()})
	out := filepath.Join(dir, "out")
	b.SetBytes(benchSize)
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.Download(context.Background(), res, out, nil); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		os.RemoveAll(out)
		b.StartTimer()
	}
}

// BenchmarkPlainGET is the baseline: an HTTP GET of the same file into a
// file, with no hashing.
func BenchmarkPlainGET(b *testing.B) {
	srv, res, dir := benchServer(b)
	u := New(Config{Endpoint: srv.URL()}).fileURL(testRepo, res.Revision, res.Files[0].Path)
	out := filepath.Join(dir, "plain.gguf")
	b.SetBytes(benchSize)
	b.ResetTimer()
	for b.Loop() {
		resp, err := http.Get(u)
		if err != nil {
			b.Fatal(err)
		}
		fh, err := os.Create(out)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(fh, resp.Body); err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		fh.Close()
		b.StopTimer()
		os.Remove(out)
		b.StartTimer()
	}
}
