package hf

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/superfluid/superfluid/runtime/models/source"
)

// Browsing bounds: the Discover tab waits for a person, so one try with a deadline, and an
// answer larger than any real one is an error, not something to hold in memory.
const (
	browseTimeout   = 15 * time.Second
	maxSearchAnswer = 8 << 20
	maxSearchHits   = 100
	defaultHits     = 30
)

var _ source.Searcher = (*Source)(nil)

// hubModel is one entry of GET /api/models with the fields the search expands.
type hubModel struct {
	ID           string          `json:"id"`
	Author       string          `json:"author"`
	Downloads    int64           `json:"downloads"`
	Likes        int64           `json:"likes"`
	LastModified string          `json:"lastModified"`
	Tags         []string        `json:"tags"`
	Gated        json.RawMessage `json:"gated"` // false, "auto" or "manual"
	GGUF         *struct {
		Total int64 `json:"total"`
	} `json:"gguf"`
}

// Search asks the Hub's model search for GGUF repositories matching q.
func (s *Source) Search(ctx context.Context, q source.Query) ([]source.Hit, error) {
	return s.client.Search(ctx, q)
}

// Search asks GET /api/models?search=...&filter=gguf for at most q.Limit (capped) hits.
func (c *Client) Search(ctx context.Context, q source.Query) ([]source.Hit, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = defaultHits
	}
	limit = min(limit, maxSearchHits)
	sort := "downloads"
	if q.Sort == source.SortTrending {
		sort = "trendingScore"
	}
	v := url.Values{"filter": {"gguf"}, "sort": {sort}, "direction": {"-1"}, "limit": {strconv.Itoa(limit)}}
	if t := strings.TrimSpace(q.Text); t != "" {
		v.Set("search", t)
	}
	for _, f := range []string{"author", "downloads", "likes", "lastModified", "tags", "gated", "gguf"} {
		v.Add("expand[]", f)
	}
	body, err := c.browse(ctx, "search the Hub", c.endpoint+"/api/models?"+v.Encode(), maxSearchAnswer)
	if err != nil {
		return nil, err
	}
	var found []hubModel
	if err := json.Unmarshal(body, &found); err != nil {
		return nil, fmt.Errorf("search the Hub: the answer is not a model list: %w", err)
	}
	hits := make([]source.Hit, 0, min(len(found), limit))
	for _, m := range found {
		if len(hits) == limit {
			break
		}
		if validRepo(m.ID) != nil {
			continue // not a name we could pull: leave it out rather than show it
		}
		h := source.Hit{Repo: m.ID, Author: m.Author, Downloads: m.Downloads, Likes: m.Likes,
			Gated: len(m.Gated) > 0 && string(m.Gated) != "false" && string(m.Gated) != "null"}
		if h.Author == "" {
			h.Author, _, _ = strings.Cut(m.ID, "/")
		}
		h.LastModified, _ = time.Parse(time.RFC3339, m.LastModified)
		for _, t := range m.Tags {
			if l, ok := strings.CutPrefix(t, "license:"); ok {
				h.License = l
			}
		}
		if m.GGUF != nil {
			h.Parameters = m.GGUF.Total
		}
		hits = append(hits, h)
	}
	return hits, nil
}

// browse GETs u once within browseTimeout and returns its body, at most limit bytes.
func (c *Client) browse(ctx context.Context, what, u string, limit int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, browseTimeout)
	defer cancel()
	a, err := c.do(ctx, http.MethodGet, u, http.Header{"Accept": {"application/json"}}, true)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: the Hub did not answer in time: %w", what, ctx.Err())
		}
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer a.Close()
	if a.resp.StatusCode != http.StatusOK {
		return nil, statusError(what, a.resp)
	}
	body, err := io.ReadAll(io.LimitReader(a, limit+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: the Hub did not answer in time: %w", what, ctx.Err())
		}
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("%s: the answer is larger than %d MiB", what, limit>>20)
	}
	return body, nil
}
