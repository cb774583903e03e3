package tray

import (
	"context"
	"time"
)

// DiscoverController is what the Discover tab asks of the server's model sources: search the
// Hub, list a repository's quantizations with whether each fits this machine, and its model
// card (discover_view.go shows them; Pull downloads the one picked).
type DiscoverController interface {
	// Discover searches the model source (the Hub) for GGUF repositories.
	Discover(ctx context.Context, q DiscoverQuery) ([]HubModel, error)
	// HubQuants lists repo's quantizations with the memory each needs for contextLen tokens
	// in lanes lanes (0: the defaults) against the memory free now.
	HubQuants(ctx context.Context, repo string, contextLen, lanes int) ([]HubQuant, error)
	// ModelCard is repo's model card, markdown as its author wrote it (untrusted).
	ModelCard(ctx context.Context, repo string) (string, error)
}

// Discover sort orders.
const (
	SortDownloads = "downloads"
	SortTrending  = "trending"
)

// DiscoverQuery is a search of the Discover tab.
type DiscoverQuery struct {
	Text string
	Sort string // SortDownloads or SortTrending
}

// HubModel is one repository a search found.
type HubModel struct {
	Repo, Author, License string
	Downloads, Likes      int64
	Parameters            int64 // 0 when unknown
	Updated               time.Time
	Gated                 bool
}

// HubQuant is one quantization of a repository and whether it fits.
type HubQuant struct {
	Name string
	// File is its (first) file in the repository; Reference is what pulls exactly it ("":
	// no reference can name it, so Discover does not offer its download).
	File, Reference string
	Size            int64
	Need, Free      int64 // estimated RAM loaded; RAM free now (0: unknown)
	// Estimated says Need came from the file's size, not its header (which could not be read).
	Estimated bool
}

// Fit verdicts of a quantization.
const (
	FitFits   = "fits"
	FitTight  = "tight"
	FitTooBig = "too big"
)

// Fit is the quantization's verdict: it fits with a fifth of the free memory to spare, only
// just fits (tight), or does not (too big); fits when free memory is unknown.
func (q HubQuant) Fit() string {
	switch {
	case q.Free <= 0 || q.Need*5 <= q.Free*4:
		return FitFits
	case q.Need <= q.Free:
		return FitTight
	}
	return FitTooBig
}
