package tray

import (
	"errors"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"
)

func discoverFixture(f *fakeController) {
	d := f.disc()
	d.models = []HubModel{
		{Repo: "acme/Tiny-GGUF", Author: "acme", Downloads: 12345, Likes: 7, License: "apache-2.0", Parameters: 1_500_000_000,
			Updated: time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)},
		{Repo: "zed/tiny-chat-GGUF", Author: "zed", Downloads: 90},
	}
	d.quants = map[string][]HubQuant{"acme/Tiny-GGUF": {
		{Name: "Q4_K_M", File: "Tiny-Q4_K_M.gguf", Reference: "hf.co/acme/Tiny-GGUF:Q4_K_M", Size: 1 << 30, Need: 2 << 30, Free: 4 << 30},
		{Name: "Q8_0", File: "Tiny-Q8_0.gguf", Reference: "hf.co/acme/Tiny-GGUF:Q8_0", Size: 2 << 30, Need: 3<<30 + 1<<29, Free: 4 << 30},
		{Name: "F16", File: "Tiny-F16.gguf", Reference: "hf.co/acme/Tiny-GGUF:F16", Size: 4 << 30, Need: 6 << 30, Free: 4 << 30, Estimated: true},
	}, "acme/Mixed-GGUF": {
		{Name: "Q4_K_M", File: "Q4_K_M/model.gguf", Reference: "hf.co/acme/Mixed-GGUF/Q4_K_M/model.gguf", Size: 1 << 30, Need: 2 << 30, Free: 8 << 30},
		{Name: "Q4_K_M", File: "other/model-Q4_K_M.gguf", Reference: "hf.co/acme/Mixed-GGUF/other/model-Q4_K_M.gguf", Size: 1 << 30, Need: 2 << 30, Free: 8 << 30},
		{Name: "Q2_K", File: "d e/m-Q2_K.gguf", Size: 1 << 29, Need: 1 << 30, Free: 8 << 30},
	}}
	d.cards = map[string]string{"acme/Tiny-GGUF": "# Tiny\n\nA small model. <script>alert('x')</script>\n\n" +
		"![logo](https://evil.example/track.png)\n\n[docs](https://acme.example/docs) and [click](javascript:alert(1))\n"}
}

// TestDiscoverFindsSizesAndDownloads: a search lists the hits with their metadata; opening one
// lists its quantizations with fit badges, the best fitting preselected; the context choice
// reaches the estimate; Download pulls hf.co/OWNER/REPO:QUANT with the Models tab's row.
func TestDiscoverFindsSizesAndDownloads(t *testing.T) {
	app, f := newTestApp(t)
	discoverFixture(f)
	v := app.discover
	ui(app, func() {
		test.Type(v.search, "tiny")
		v.sort.SetSelected("Trending")
	})
	eventually(t, app, "two hits", func() bool { return v.status.Text == "2 models." && len(v.results.Objects) == 2 })
	if q := f.disc().asked; q[len(q)-1] != (DiscoverQuery{Text: "tiny", Sort: SortTrending}) {
		t.Errorf("asked %+v", q)
	}
	var shown []string
	ui(app, func() {
		for _, o := range test.LaidOutObjects(v.results.Objects[0]) {
			if l, ok := o.(*widget.Label); ok {
				shown = append(shown, l.Text)
			}
		}
	})
	details := strings.Join(shown, "\n")
	for _, want := range []string{"by acme", "12.3k downloads", "7 likes", "updated 3 Nov 2026", "\napache-2.0 · 1.5B params"} {
		if !strings.Contains(details, want) {
			t.Errorf("the first result shows %q, lacking %q", details, want)
		}
	}
	ui(app, func() { v.open("acme/Tiny-GGUF") })
	eventually(t, app, "three quants", func() bool { return len(v.quants.Options) == 3 })
	var sel string
	ui(app, func() { sel = v.quants.Selected })
	if !strings.HasPrefix(sel, "Q4_K_M") || !strings.Contains(sel, "· fits (needs 2.3 GB of 4.3 GB free)") {
		t.Errorf("preselected %q; want Q4_K_M, the largest that fits with room", sel)
	}
	ui(app, func() {
		if o := v.quants.Options; !strings.Contains(o[1], "tight") || !strings.Contains(o[2], "too big") || !strings.HasSuffix(o[2], "~") {
			t.Errorf("badges %q", o)
		}
		if !strings.Contains(v.note.Text, "estimated") {
			t.Errorf("note %q does not say the estimate is one", v.note.Text)
		}
	})
	before := sel
	ui(app, func() { v.context.SetSelected("32768") })
	eventually(t, app, "a longer context needs more", func() bool {
		return len(v.quants.Options) == 3 && v.quants.Options[0] != before
	})
	ui(app, func() { v.context.SetSelected("4096"); v.lanes.SetSelected("1") })
	eventually(t, app, "back to 4096", func() bool { return v.quants.Selected == before })
	ui(app, func() { test.Tap(v.download) })
	eventually(t, app, "downloaded on the Models tab", func() bool {
		return app.Tabs().Selected().Text == "Models" && strings.HasPrefix(app.models.progress.Text, "Downloaded hf.co/acme/Tiny-GGUF:Q4_K_M")
	})
}

// TestDiscoverSameNamedQuants: same-named quantizations in different folders of a repository
// are listed apart, by file, and each downloads by its own reference (the file it names); one
// that no reference can name is not downloaded, and the note says why.
func TestDiscoverSameNamedQuants(t *testing.T) {
	app, f := newTestApp(t)
	discoverFixture(f)
	v := app.discover
	ui(app, func() { v.open("acme/Mixed-GGUF") })
	eventually(t, app, "three quants", func() bool { return len(v.quants.Options) == 3 })
	var opts []string
	ui(app, func() { opts = append(opts, v.quants.Options...) })
	if !strings.HasPrefix(opts[0], "Q4_K_M/model.gguf · Q4_K_M · ") || !strings.HasPrefix(opts[1], "other/model-Q4_K_M.gguf · Q4_K_M · ") ||
		!strings.HasPrefix(opts[2], "Q2_K · ") {
		t.Fatalf("options %q", opts)
	}
	ui(app, func() { v.quants.SetSelected(opts[2]); test.Tap(v.download) })
	ui(app, func() {
		if !strings.Contains(v.note.Text, "No model reference can name d e/m-Q2_K.gguf") {
			t.Errorf("an unnameable quant: note %q", v.note.Text)
		}
	})
	f.mu.Lock()
	pulls := f.pulls
	f.mu.Unlock()
	if pulls != 0 {
		t.Fatalf("%d pulls of a quant no reference names", pulls)
	}
	ui(app, func() { v.quants.SetSelected(opts[1]); test.Tap(v.download) })
	eventually(t, app, "the second folder's file downloaded", func() bool {
		return app.Tabs().Selected().Text == "Models" && strings.HasPrefix(app.models.progress.Text, "Downloaded hf.co/acme/Mixed-GGUF/other/model-Q4_K_M.gguf")
	})
}

// TestDiscoverOffline: a search that fails (timeout, garbage) says so in one line and still
// lists the models already here.
func TestDiscoverOffline(t *testing.T) {
	app, f := newTestApp(t)
	f.disc().err = errors.New("search the Hub: the Hub did not answer in time: context deadline exceeded")
	v := app.discover
	ui(app, func() { test.Type(v.search, "qwen"); v.runSearch() })
	eventually(t, app, "the tab says the Hub is out of reach", func() bool {
		return strings.HasPrefix(v.status.Text, "Hugging Face cannot be searched now (") && strings.Contains(v.status.Text, "did not answer in time")
	})
	ui(app, func() {
		if len(v.results.Objects) != 2 || !strings.HasPrefix(v.results.Objects[0].(*widget.Label).Text, "stories260K") {
			t.Errorf("offline list %v", v.results.Objects)
		}
	})
}

// TestDiscoverDiskFull: a download from Discover that fills the disk shows the message the
// Models row shows, and the quantization can be downloaded again (resume).
func TestDiscoverDiskFull(t *testing.T) {
	app, f := newTestApp(t)
	discoverFixture(f)
	f.pullErr = errors.New("the disk is full: free space and download again; the partial download is kept")
	v := app.discover
	ui(app, func() { v.open("acme/Tiny-GGUF") })
	eventually(t, app, "quants", func() bool { return len(v.quants.Options) == 3 && !v.download.Disabled() })
	ui(app, func() { test.Tap(v.download) })
	eventually(t, app, "the failure shows", func() bool {
		return app.models.progress.Text == "Failed: the disk is full: free space and download again; the partial download is kept"
	})
	if app.models.download.Disabled() || v.download.Disabled() {
		t.Error("cannot download again after a full disk")
	}
}

// TestModelCardHostileMarkdown: a card's scripts are dropped, its remote images shown as alt
// text and never fetched, javascript: links shown as plain text; http(s) links stay.
func TestModelCardHostileMarkdown(t *testing.T) {
	app, f := newTestApp(t)
	discoverFixture(f)
	v := app.discover
	ui(app, func() { v.open("acme/Tiny-GGUF"); test.Tap(v.card) })
	eventually(t, app, "the card shows", func() bool { return v.cardText != nil })
	var links []string
	var walk func(segs []widget.RichTextSegment)
	walk = func(segs []widget.RichTextSegment) {
		for _, s := range segs {
			switch s := s.(type) {
			case *widget.ImageSegment:
				t.Errorf("an image segment for %v", s.Source)
			case *widget.HyperlinkSegment:
				links = append(links, s.URL.String())
			case *widget.ParagraphSegment:
				walk(s.Texts)
			case *widget.ListSegment:
				walk(s.Items)
			}
		}
	}
	var text string
	ui(app, func() { walk(v.cardText.Segments); text = v.cardText.String() })
	if strings.Contains(text, "alert('x')") || strings.Contains(text, "script") {
		t.Errorf("the script shows: %q", text)
	}
	if !strings.Contains(text, "(image: logo)") || strings.Contains(text, "evil.example") {
		t.Errorf("the image is not its alt text: %q", text)
	}
	if len(links) != 1 || links[0] != "https://acme.example/docs" || !strings.Contains(text, "click") {
		t.Errorf("links %v, text %q", links, text)
	}
}
