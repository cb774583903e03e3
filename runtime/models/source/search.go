package source

import (
	"context"
	"time"
)

// Searcher is a source that can be browsed as well as pulled from: searched by words, a
// repository's card read and its quantizations listed. It is optional; a source that cannot
// search (a local folder) just does not implement it, and the Discover tab then shows only the
// catalog.
type Searcher interface {
	// Search finds repositories that hold models this source pulls, best first by q.Sort.
	Search(ctx context.Context, q Query) ([]Hit, error)
	// Card is a repository's model card (markdown, as its author wrote it: untrusted).
	Card(ctx context.Context, repo string) (string, error)
	// Quants lists a repository's quantizations, split parts summed, projectors left out.
	Quants(ctx context.Context, repo string) ([]Quant, error)
	// Head reads at most n bytes from the start of a file of repo (a GGUF header, to size a
	// model before downloading it).
	Head(ctx context.Context, repo, path string, n int64) ([]byte, error)
}

// Sort orders of a Query.
const (
	SortDownloads = "downloads"
	SortTrending  = "trending"
)

// Query is what a search asks.
type Query struct {
	Text  string
	Sort  string // SortDownloads (default) or SortTrending
	Limit int    // at most this many hits; the source caps it too
}

// Hit is one repository a search found.
type Hit struct {
	Repo         string // "OWNER/REPO"
	Author       string
	Downloads    int64
	Likes        int64
	LastModified time.Time
	License      string // "" when the repository names none
	Parameters   int64  // 0 when unknown
	Gated        bool   // the repository needs an accepted licence and a token
}

// Quant is one quantization a repository offers.
type Quant struct {
	Name  string // "Q4_K_M"
	Size  int64  // bytes of every part
	Parts int
	// First is the path of its first part (whose header holds the model's metadata).
	First string
	// Ref is the reference that pulls exactly this model: OWNER/REPO:QUANT when QUANT names
	// no other model of the repository, else the file form (OWNER/REPO/PATH.gguf); "" when no
	// reference can name it (a path a reference cannot spell).
	Ref string
}
