package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/superfluid/superfluid/runtime/models/hf"
	"github.com/superfluid/superfluid/runtime/models/hf/hftest"
)

// The fake Hub serves the model file under these names.
const (
	pullRepo = "bench/model-GGUF"
	pullFile = "model-Q8_0.gguf"
)

// pullMinSize is the smallest file whose download time says something about throughput.
const pullMinSize = 200 << 20

// pullResult is one pull measurement: the file's size and the MB/s of each run.
type pullResult struct {
	size            int64
	plain, download []float64
}

// benchPull serves the model file from a fake Hugging Face Hub on loopback and compares
// hf.Client.Download (Range-capable, writes the file, hashes it with sha256, verifies it,
// renames it) with a plain HTTP GET of the same file from the same fake CDN into a file.
func benchPull(model string, o Options, w io.Writer) error {
	r, err := measurePull(context.Background(), model, o.Repeat, o.TempDir)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "file %s, %.1f MB, served by a fake Hub on loopback as %s/%s; %d runs each, a fresh destination folder per run\n",
		model, float64(r.size)/1e6, pullRepo, pullFile, o.Repeat)
	if r.size < pullMinSize {
		fmt.Fprintf(w, "note: the file is too small to measure download throughput (want %d MiB or more; bench --write-model writes a 1.1 GB one); numbers below are setup cost, not throughput\n", pullMinSize>>20)
	}
	pm, pi := medianMin(r.plain)
	dm, di := medianMin(r.download)
	fmt.Fprintf(w, "%-26s %12s %12s\n", "", "MB/s med", "MB/s min")
	fmt.Fprintf(w, "%-26s %12.1f %12.1f\n", "plain GET into a file", pm, pi)
	fmt.Fprintf(w, "%-26s %12.1f %12.1f\n", "Download (sha256, verify)", dm, di)
	fmt.Fprintf(w, "Download/plain (medians)   %11.1f%%\n", 100*dm/pm)
	return nil
}

// measurePull runs the two downloads of the file at model repeat times each, alternating
// which goes first, into fresh folders under tmp ("" for the system's).
func measurePull(ctx context.Context, model string, repeat int, tmp string) (pullResult, error) {
	st, err := os.Stat(model)
	if err != nil {
		return pullResult{}, err
	}
	if !st.Mode().IsRegular() {
		return pullResult{}, fmt.Errorf("%s is not a regular file", model)
	}
	hub := hftest.New()
	defer hub.Close()
	hub.AddFileFromDisk(pullRepo, pullFile, model)
	client := hf.New(hf.Config{Endpoint: hub.URL()})
	res, err := client.Resolve(ctx, hf.Ref{Repo: pullRepo})
	if err != nil {
		return pullResult{}, fmt.Errorf("resolve on the fake Hub: %w", err)
	}
	url := hub.URL() + "/" + pullRepo + "/resolve/" + res.Revision + "/" + pullFile
	r := pullResult{size: st.Size()}
	plain := func(dir string) error { return plainGET(ctx, url, filepath.Join(dir, pullFile), r.size) }
	download := func(dir string) error {
		paths, err := client.Download(ctx, res, dir, nil)
		if err == nil && len(paths) != 1 {
			err = fmt.Errorf("download returned %d files, want 1", len(paths))
		}
		return err
	}
	for run := range repeat {
		sides := []struct {
			run   func(dir string) error
			rates *[]float64
		}{{plain, &r.plain}, {download, &r.download}}
		if run%2 == 1 { // alternate, so drift and the page cache hit both alike
			sides[0], sides[1] = sides[1], sides[0]
		}
		for _, side := range sides {
			secs, err := timeInFreshDir(tmp, side.run)
			if err != nil {
				return r, err
			}
			*side.rates = append(*side.rates, float64(r.size)/1e6/secs)
		}
	}
	return r, nil
}

// timeInFreshDir times fn in a new folder, removed afterwards.
func timeInFreshDir(tmp string, fn func(dir string) error) (float64, error) {
	dir, err := os.MkdirTemp(tmp, "superfluid-bench-pull-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	began := time.Now()
	if err := fn(dir); err != nil {
		return 0, err
	}
	return max(time.Since(began).Seconds(), 1e-9), nil
}

// plainGET fetches url (following the redirect to the CDN) into a new file at dest: the
// baseline, with no hashing, no verification and no rename.
func plainGET(ctx context.Context, url, dest string, size int64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("plain GET %s: %s", url, res.Status)
	}
	fh, err := os.Create(dest)
	if err != nil {
		return err
	}
	n, err := io.Copy(fh, res.Body)
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != size {
		err = fmt.Errorf("plain GET %s: got %d bytes, want %d", url, n, size)
	}
	return err
}
