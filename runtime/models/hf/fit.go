package hf

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// headTimeout bounds reading a file's first bytes: a few MiB, so more than a search.
const headTimeout = 45 * time.Second

// Head reads at most n bytes from the start of path in repo.
func (s *Source) Head(ctx context.Context, repo, path string, n int64) ([]byte, error) {
	return s.client.Head(ctx, repo, path, n)
}

// Head reads at most n bytes from the start of path in repo's main revision with a Range
// request (a server that ignores the range is read no further than n bytes either).
func (c *Client) Head(ctx context.Context, repo, path string, n int64) ([]byte, error) {
	if err := validRepo(repo); err != nil {
		return nil, err
	}
	if !safeRepoPath(path) || n <= 0 {
		return nil, fmt.Errorf("read the start of %s: not a file of the repository: %w", path, ErrBadRef)
	}
	what := "read the start of " + repo + "/" + path
	ctx, cancel := context.WithTimeout(ctx, headTimeout)
	defer cancel()
	a, err := c.do(ctx, http.MethodGet, c.fileURL(repo, "main", path), http.Header{"Range": {fmt.Sprintf("bytes=0-%d", n-1)}}, true)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer a.Close()
	if a.resp.StatusCode != http.StatusPartialContent && a.resp.StatusCode != http.StatusOK {
		return nil, statusError(what, a.resp)
	}
	b, err := io.ReadAll(io.LimitReader(a, n))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return b, nil
}
