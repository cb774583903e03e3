package core

import (
	"container/list"
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"

	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/media"
)

// A chat re-sends its images on every turn, and decoding one (PNG, JPEG, resampled audio)
// costs milliseconds per megapixel, so the core keeps the last decoded parts, keyed by what
// the client sent. The cached llm.Media is shared by every request that hits it: nothing
// downstream writes its RGB or PCM (the engine copies them into its own bitmaps, and the
// worker client only encodes them).

// Bounds of the decoded-media cache: the total size of the decoded bytes and the number of
// entries. An entry bigger than a quarter of the budget is not kept.
const (
	mediaCacheBytes   = 256 << 20
	mediaCacheEntries = 64
)

// mediaCache is an LRU of decoded media, safe for concurrent use.
type mediaCache struct {
	maxBytes   int64
	maxEntries int

	mu     sync.Mutex
	order  *list.List // of *mediaEntry, most recent first
	byKey  map[[sha256.Size]byte]*list.Element
	bytes  int64
	hits   int64
	misses int64
}

type mediaEntry struct {
	key   [sha256.Size]byte
	media llm.Media
	size  int64
}

func newMediaCache(maxBytes int64, maxEntries int) *mediaCache {
	return &mediaCache{maxBytes: maxBytes, maxEntries: maxEntries, order: list.New(), byKey: map[[sha256.Size]byte]*list.Element{}}
}

// mediaCacheKey keys part under lim: its kind, declared MIME and bytes (inline data, or the
// data URL as sent), and the limits that shaped the decode. ok is false for a part that is not
// inline (a remote URL may answer differently next time).
func mediaCacheKey(part llm.MediaPart, lim media.Limits) (key [sha256.Size]byte, ok bool) {
	url := strings.TrimSpace(part.URL)
	if len(part.Data) == 0 && !(len(url) >= 5 && strings.EqualFold(url[:5], "data:")) { // not ToLower: a copy of it all
		return key, false
	}
	h := sha256.New()
	// Lengths first, so no two different (header, payload) pairs share a stream.
	header := fmt.Sprintf("%q %q %d %d %d %d %d|", part.Kind, part.MIME, len(part.Data),
		lim.MaxBytes, lim.MaxPixels, lim.MaxGIFFrames, lim.MaxAudioSeconds)
	h.Write([]byte(header))
	if len(part.Data) > 0 {
		h.Write(part.Data)
	} else {
		h.Write([]byte(url))
	}
	copy(key[:], h.Sum(nil))
	return key, true
}

// get is the media cached under key, if any, made the most recent.
func (c *mediaCache) get(key [sha256.Size]byte) (llm.Media, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		c.misses++
		return llm.Media{}, false
	}
	c.hits++
	c.order.MoveToFront(el)
	return el.Value.(*mediaEntry).media, true
}

// put caches m under key, evicting the least recent entries past the bounds.
func (c *mediaCache) put(key [sha256.Size]byte, m llm.Media) {
	size := int64(len(m.RGB) + len(m.PCM) + len(m.Hash) + len(m.Kind))
	if size > c.maxBytes/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok { // decoded twice concurrently: keep the first
		c.order.MoveToFront(el)
		return
	}
	c.byKey[key] = c.order.PushFront(&mediaEntry{key: key, media: m, size: size})
	c.bytes += size
	for c.bytes > c.maxBytes || c.order.Len() > c.maxEntries {
		last := c.order.Back()
		e := last.Value.(*mediaEntry)
		c.order.Remove(last)
		delete(c.byKey, e.key)
		c.bytes -= e.size
	}
}

// stats are the cache's hits, misses, entries and decoded bytes held.
func (c *mediaCache) stats() (hits, misses int64, entries int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses, c.order.Len(), c.bytes
}

// resolveMedia decodes part, from the cache when the same bytes were decoded before.
func (s *Service) resolveMedia(ctx context.Context, part llm.MediaPart) (llm.Media, error) {
	key, cacheable := mediaCacheKey(part, s.media.Limits)
	if cacheable && s.mediaCache != nil {
		if m, ok := s.mediaCache.get(key); ok {
			return m, nil
		}
	}
	m, err := s.media.Resolve(ctx, part)
	if err == nil && cacheable && s.mediaCache != nil {
		s.mediaCache.put(key, m)
	}
	return m, err
}
