package core

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"sync"
	"testing"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/media"
)

// pngOf is a w × h PNG of one colour.
func pngOf(t *testing.T, w, h int, c color.RGBA) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.SetRGBA(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func wantStats(t *testing.T, c *mediaCache, hits, misses int64, entries int) {
	t.Helper()
	if h, m, n, _ := c.stats(); h != hits || m != misses || n != entries {
		t.Fatalf("cache has %d hits, %d misses, %d entries; want %d, %d, %d", h, m, n, hits, misses, entries)
	}
}

// TestMediaCacheResend: a re-sent image is served from the cache (a hit, the very pixels of the
// first decode); a different image, the same bytes under another declared MIME, and the same
// image under other limits each miss. A remote URL is never cached, and a refused part
// is not either.
func TestMediaCacheResend(t *testing.T) {
	svc := New(Config{}, nil)
	ctx := context.Background()
	red := pngOf(t, 4, 3, color.RGBA{255, 0, 0, 255})
	part := llm.MediaPart{Kind: llm.MediaImage, MIME: "image/png", Data: red, Where: "messages[0].content[0]"}
	first, err := svc.resolveMedia(ctx, part)
	if err != nil {
		t.Fatal(err)
	}
	wantStats(t, svc.mediaCache, 0, 1, 1)
	again, err := svc.resolveMedia(ctx, llm.MediaPart{Kind: llm.MediaImage, MIME: "image/png", Data: append([]byte(nil), red...), Where: "messages[2].content[0]"})
	if err != nil {
		t.Fatal(err)
	}
	wantStats(t, svc.mediaCache, 1, 1, 1)
	if &again.RGB[0] != &first.RGB[0] || again.Hash != first.Hash || again.Width != 4 || again.Height != 3 {
		t.Errorf("the re-send was decoded again or differs: %+v vs %+v", again, first)
	}

	blue := pngOf(t, 4, 3, color.RGBA{0, 0, 255, 255})
	other, err := svc.resolveMedia(ctx, llm.MediaPart{Kind: llm.MediaImage, MIME: "image/png", Data: blue})
	if err != nil {
		t.Fatal(err)
	}
	if other.Hash == first.Hash || other.RGB[2] != 255 {
		t.Errorf("a different image came back as the cached one: %+v", other)
	}
	wantStats(t, svc.mediaCache, 1, 2, 2)
	if _, err := svc.resolveMedia(ctx, llm.MediaPart{Kind: llm.MediaImage, Data: red}); err != nil {
		t.Fatal(err)
	}
	wantStats(t, svc.mediaCache, 1, 3, 3) // same bytes, no declared MIME: its own entry

	// A tighter pixel limit must refuse what the default took, not answer from the cache.
	strict := New(Config{Media: media.Limits{MaxPixels: 4}}, nil)
	strict.mediaCache = svc.mediaCache
	if _, err := strict.resolveMedia(ctx, part); err == nil {
		t.Error("a 4×3 image passed a 4-pixel limit: the cache ignored the limits")
	}
	wantStats(t, svc.mediaCache, 1, 4, 3)

	if _, err := svc.resolveMedia(ctx, llm.MediaPart{Kind: llm.MediaImage, MIME: "image/png", Data: []byte("not a png")}); err == nil {
		t.Fatal("a fake PNG decoded")
	}
	wantStats(t, svc.mediaCache, 1, 5, 3)
	if _, cacheable := mediaCacheKey(llm.MediaPart{Kind: llm.MediaImage, URL: "https://example.com/cat.png"}, media.Limits{}); cacheable {
		t.Error("a remote URL is cacheable; its content may change")
	}
}

// TestMediaCacheEviction: the cache holds at most its byte budget and entry count, dropping the
// least recently used first, and keeps no entry bigger than a quarter of the budget.
func TestMediaCacheEviction(t *testing.T) {
	entry := func(i, size int) ([32]byte, llm.Media) {
		var key [32]byte
		key[0], key[1] = byte(i), byte(i>>8)
		return key, llm.Media{RGB: make([]byte, size)}
	}
	c := newMediaCache(1000, 100)
	for i := 0; i < 4; i++ { // 4 × 200 bytes: all fit
		c.put(entry(i, 200))
	}
	k0, _ := entry(0, 0)
	if _, ok := c.get(k0); !ok { // 0 becomes the most recent; 1 is now the least
		t.Fatal("entry 0 was evicted within the budget")
	}
	c.put(entry(4, 200)) // 1000 bytes: still fits
	c.put(entry(5, 200)) // 1200: 1 goes
	if _, _, n, b := c.stats(); n != 5 || b > 1000 {
		t.Fatalf("%d entries, %d bytes; want 5 within 1000", n, b)
	}
	for i, want := range []bool{true, false, true, true, true, true} {
		k, _ := entry(i, 0)
		if _, ok := c.get(k); ok != want {
			t.Errorf("entry %d cached = %v, want %v", i, ok, want)
		}
	}
	c.put(entry(9, 251)) // over a quarter of 1000
	if k, _ := entry(9, 0); func() bool { _, ok := c.get(k); return ok }() {
		t.Error("an entry over a quarter of the budget was kept")
	}

	few := newMediaCache(1<<20, 3)
	for i := 0; i < 10; i++ {
		few.put(entry(i, 10))
	}
	if _, _, n, _ := few.stats(); n != 3 {
		t.Errorf("%d entries kept, want the limit of 3", n)
	}
}

// TestMediaCacheConcurrent: requests decoding and re-sending images at once all get their own
// image's pixels (run with -race to check the locking).
func TestMediaCacheConcurrent(t *testing.T) {
	svc := New(Config{}, nil)
	imgs := make([][]byte, 4)
	for i := range imgs {
		imgs[i] = pngOf(t, 2, 2, color.RGBA{uint8(60 * i), 0, 0, 255})
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for j := 0; j < 8; j++ {
				i := (g + j) % len(imgs)
				m, err := svc.resolveMedia(context.Background(), llm.MediaPart{Kind: llm.MediaImage, MIME: "image/png", Data: imgs[i]})
				if err == nil && m.RGB[0] != uint8(60*i) {
					err = fmt.Errorf("image %d came back with red %d", i, m.RGB[0])
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if h, m, n, _ := svc.mediaCache.stats(); h+m != 64 || n != len(imgs) || h < 64-8*int64(len(imgs)) {
		t.Errorf("%d hits, %d misses, %d entries after 64 decodes of %d images", h, m, n, len(imgs))
	}
}
