package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/models/hf"
)

// TestDiscoverDownloadFillsTheDisk: a download started from Discover into a models folder on a
// real, nearly full disk (a 4 MiB tmpfs) fails saying the disk is full, keeps its partial and
// its pending record (so it resumes at the next start), and once space is freed the next pull
// resumes from the partial (a Range request) and lands in the catalog. Skips, saying why,
// where this process may not mount.
func TestDiscoverDownloadFillsTheDisk(t *testing.T) {
	hub := tinyHub(t)
	data, err := os.ReadFile(writeModels(t, t.TempDir(), 1)[0])
	if err != nil {
		t.Fatal(err)
	}
	const disk = 4 << 20
	if len(data) >= disk/2 {
		t.Fatalf("the tiny model (%d bytes) is too big for the test's 4 MiB disk", len(data))
	}
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=4m"); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v): needs root with CAP_SYS_ADMIN", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	// Fill the disk until only half the model fits.
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, disk-len(data)/2), 0o644); err != nil && !errors.Is(err, syscall.ENOSPC) {
		t.Fatal(err)
	}

	cfg := testConfig(t, "")
	cfg.HFEndpoint = hub.URL()
	cfg.ModelsDir = dir
	a, c := openController(t, cfg)
	ctx := context.Background()
	const ref = "hf.co/tester/tiny-GGUF:Q8_0"

	err = c.Pull(ctx, ref)
	// The user reads what to do, not an engine failure (it is still one in kind: a 500 to API clients).
	if !errors.Is(err, hf.ErrDiskFull) || !errors.Is(err, llm.ErrEngineFailure) || !strings.Contains(err.Error(), "free disk space and pull again") ||
		strings.HasPrefix(err.Error(), llm.ErrEngineFailure.Error()) {
		t.Fatalf("pull onto a full disk: %v", err)
	}
	var partials, listing []string
	_ = filepath.WalkDir(dir, func(p string, _ os.DirEntry, _ error) error {
		listing = append(listing, p)
		if strings.HasSuffix(p, ".partial") {
			partials = append(partials, p)
		}
		return nil
	})
	if len(partials) != 1 {
		t.Fatalf("want one partial kept in %s: %v", dir, listing)
	}
	t.Logf("the user reads: %v", err)
	st, err := os.Stat(partials[0])
	if err != nil || st.Size() == 0 || st.Size() >= int64(len(data)) {
		t.Fatalf("partial %s: %v, %v", partials[0], st, err)
	}
	pending, err := a.Store().PendingPulls(ctx)
	if err != nil || len(pending) != 1 || pending[0].Reference != ref {
		t.Fatalf("pending pulls after the full disk = %+v, %v; want the download kept to resume", pending, err)
	}
	for _, m := range c.Models() {
		if m.ID == ref {
			t.Fatalf("a half-downloaded model is in the catalog: %+v", m)
		}
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := c.Pull(ctx, ref); err != nil {
		t.Fatalf("pull after freeing space: %v", err)
	}
	ranges := hub.Ranges("tester/tiny-GGUF", "tiny-Q8_0.gguf")
	if len(ranges) == 0 || ranges[len(ranges)-1] != "bytes="+strconv.FormatInt(st.Size(), 10)+"-" {
		t.Errorf("the second pull asked for %q; want it to resume from byte %d", ranges, st.Size())
	}
	found := false
	for _, m := range c.Models() {
		found = found || m.ID == ref
	}
	if !found {
		t.Fatalf("not in the catalog after the resumed pull: %+v", c.Models())
	}
}
