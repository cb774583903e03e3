package desktop

import (
	"bytes"
	"context"
	"errors"

	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/models"
	"github.com/superfluid/superfluid/runtime/models/source"
	"github.com/superfluid/superfluid/tray"
)

// headBytes is how much of a GGUF file is read to size it before a download: the metadata
// (tokenizer arrays included) of the models people run fits.
const headBytes = 8 << 20

// Defaults of the Discover tab's estimate when the tab passes none.
const (
	discoverContext = 4096
	discoverLanes   = 1
)

// errNoSearch is what Discover says when no model source can search.
var errNoSearch = errors.New("no model source can be searched")

// Discover searches the searchable model source.
func (c *Controller) Discover(ctx context.Context, q tray.DiscoverQuery) ([]tray.HubModel, error) {
	if c.d.Search == nil {
		return nil, errNoSearch
	}
	sort := source.SortDownloads
	if q.Sort == tray.SortTrending {
		sort = source.SortTrending
	}
	hits, err := c.d.Search.Search(ctx, source.Query{Text: q.Text, Sort: sort})
	if err != nil {
		return nil, err
	}
	out := make([]tray.HubModel, 0, len(hits))
	for _, h := range hits {
		out = append(out, tray.HubModel{Repo: h.Repo, Author: h.Author, License: h.License, Downloads: h.Downloads,
			Likes: h.Likes, Parameters: h.Parameters, Updated: h.LastModified, Gated: h.Gated})
	}
	return out, nil
}

// HubQuants lists repo's quantizations with models.Estimate's need for contextLen and lanes
// (the settings dialog's estimate) against the memory Memory counts free. The KV cache per
// token comes from one quantization's GGUF header (all of a repository's quantizations share
// the architecture); when no header can be read it is guessed from the size, and said so.
func (c *Controller) HubQuants(ctx context.Context, repo string, contextLen, lanes int) ([]tray.HubQuant, error) {
	if c.d.Search == nil {
		return nil, errNoSearch
	}
	qs, err := c.d.Search.Quants(ctx, repo)
	if err != nil {
		return nil, err
	}
	if contextLen <= 0 {
		contextLen = discoverContext
	}
	if lanes <= 0 {
		lanes = discoverLanes
	}
	kv := int64(0)
	for _, q := range qs { // the smallest first would be cheaper, but any header will do
		if f := c.header(ctx, repo, q); f != nil {
			kv = models.HeaderFacts(f).KVBytesPerToken
			break
		}
	}
	budget, used := c.mgr.Budget()
	free := min(budget-used, models.AvailableMemory())
	out := make([]tray.HubQuant, 0, len(qs))
	for _, q := range qs {
		facts := models.Facts{WeightBytes: q.Size, KVBytesPerToken: kv}
		if kv == 0 {
			facts.KVBytesPerToken = guessKVPerToken(q.Size)
		}
		out = append(out, tray.HubQuant{Name: q.Name, File: q.First, Reference: q.Ref, Size: q.Size, Need: models.Estimate(facts, contextLen, lanes),
			Free: max(free, 0), Estimated: kv == 0})
	}
	return out, nil
}

// header reads q's first part's GGUF header from the source; nil when it cannot.
func (c *Controller) header(ctx context.Context, repo string, q source.Quant) *gguf.File {
	b, err := c.d.Search.Head(ctx, repo, q.First, headBytes)
	if err != nil {
		return nil
	}
	// The prefix stands for the whole part: the decoder reads only metadata, bounded by the
	// bytes at hand (the Hub's size is not trusted for what a header may allocate), and a
	// header longer than the prefix fails as truncated.
	size := int64(len(b))
	if q.Parts == 1 {
		size = max(size, q.Size)
	}
	f, err := gguf.ReadPrefix(bytes.NewReader(b), int64(len(b)), size)
	if err != nil {
		return nil
	}
	return f
}

// guessKVPerToken is a size-based guess of the KV cache per token when no header could be
// read: about 32 KiB per GiB of weights, which the common grouped-query models come close to.
func guessKVPerToken(size int64) int64 { return max(size>>15, 1<<10) }

// ModelCard is repo's model card from the searchable source.
func (c *Controller) ModelCard(ctx context.Context, repo string) (string, error) {
	if c.d.Search == nil {
		return "", errNoSearch
	}
	return c.d.Search.Card(ctx, repo)
}
